#pragma once
/// \file
/// \brief Array operations a pmap or shard_map body calls in one line, as a
/// JAX body writes `a @ x`, `jnp.dot`, `a + b` or `jnp.sum(a, axis=1)`.
///
/// Each works on Views of rank 1 or 2 (any layout, subviews too) in their own
/// memory space, on that space's execution space or on the instance given
/// first, and returns a new View there (LayoutRight), as JAX returns a new
/// array: `kpmap::matmul(a, x)`, `kpmap::matmul(exec, a, b)`. Products go
/// through Kokkos Kernels (gemm, gemv, dot, axpy); the elementwise operations
/// are a kernel of one thread per element, the last index fastest; a sum over
/// an axis is a thread per column (axis 0) or a team per row (axis 1), so
/// neighbouring GPU threads read neighbouring addresses. A body run every
/// step allocates its results every step, as JAX's does; a loop that must not
/// allocate keeps its arrays and calls the Kokkos Kernels routines on them.
///
/// \code
///   auto y = kpmap::matmul(a_block, x_block);   // a_block @ x_block
///   kpmap::psum_inplace(y, "model");
///   const double s = kpmap::dot(y, y);            // jnp.dot(y, y)
///   auto rows = kpmap::sum(a_block, 1);           // jnp.sum(a_block, axis=1)
/// \endcode

#include <kpmap/base/detail/blas.hpp>
#include <kpmap/base/detail/view_utils.hpp>
#include <kpmap/base/error.hpp>
#include <kpmap/base/policy.hpp>
#include <kpmap/collectives/buffers.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <type_traits>

namespace kpmap {

namespace detail {

template <class V>
using ops_value_t = typename std::decay_t<V>::non_const_value_type;
template <class V>
using ops_memory_t = typename std::decay_t<V>::memory_space;
/// The result of an operation on Views in M: rank R, LayoutRight, owning.
template <class T, int R, class M>
using ops_result_t = owning_view_t<T, R, Kokkos::LayoutRight, M>;

/// "(2, 3)": a View's extents, for messages.
template <class V>
std::string shape_of(const V& v) {
  std::string s = "(";
  for (unsigned d = 0; d < V::rank; ++d) {
    s += (d ? ", " : "") + std::to_string(v.extent(d));
  }
  return s + (V::rank == 1 ? ",)" : ")");
}

/// Refuses Views an operation cannot take: ranks other than 1 and 2, or
/// inputs in two memory spaces (the kernel runs in one).
template <class A, class B>
constexpr void require_ops_pair() {
  static_assert(Kokkos::is_view<A>::value && Kokkos::is_view<B>::value,
                "kpmap array operations take Kokkos Views");
  static_assert(std::is_same_v<ops_memory_t<A>, ops_memory_t<B>>,
                "kpmap array operations take Views in one memory space (copy one with "
                "Kokkos::create_mirror_view_and_copy first)");
  static_assert(std::is_same_v<ops_value_t<A>, ops_value_t<B>>,
                "kpmap array operations take Views of one element type");
}

template <class Exec, class V>
constexpr void require_ops_view() {
  static_assert(Kokkos::is_view<V>::value, "kpmap array operations take Kokkos Views");
  static_assert(V::rank == 1 || V::rank == 2, "kpmap array operations take Views of rank 1 or 2");
  static_assert(Kokkos::SpaceAccessibility<Exec, ops_memory_t<V>>::accessible,
                "kpmap array operations run on an execution space that reaches the Views");
}

/// The elementwise operations: out = a + b, a * b, or alpha * a.
struct AddOp {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T x, T y, T) const {
    return x + y;
  }
};
struct MultiplyOp {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T x, T y, T) const {
    return x * y;
  }
};
struct ScaleOp {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T x, T, T alpha) const {
    return alpha * x;
  }
};

/// One thread per element of out (rank 1 or 2), the last index fastest.
template <class Op, class Out, class A, class B>
struct Elementwise {
  Out out;
  A a;
  B b;
  typename Out::value_type alpha;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i) const { out(i) = Op()(a(i), b(i), alpha); }
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, std::int64_t j) const {
    out(i, j) = Op()(a(i, j), b(i, j), alpha);
  }
};

template <class Op, class Exec, class A, class B>
auto elementwise(const Exec& exec, const char* name, const A& a, const B& b, ops_value_t<A> alpha) {
  require_ops_view<Exec, A>();
  require_ops_view<Exec, B>();
  require_ops_pair<A, B>();
  static_assert(rank_v<A> == rank_v<B>, "kpmap array operations: both Views of one rank");
  for (unsigned d = 0; d < A::rank; ++d) {
    if (a.extent(d) != b.extent(d)) {
      throw Error(std::string(name) + ": the shapes " + shape_of(a) + " and " + shape_of(b) +
                  " differ");
    }
  }
  using Out = ops_result_t<ops_value_t<A>, A::rank, ops_memory_t<A>>;
  Out out = allocate<Out>(name, extents_of(a));
  const Elementwise<Op, Out, A, B> f{out, a, b, alpha};
  if constexpr (A::rank == 1) {
    Kokkos::parallel_for(name, Kokkos::RangePolicy<Exec>(exec, 0, a.extent(0)), f);
  } else {
    Kokkos::parallel_for(
        name,
        row_major_range<2>(exec, {0, 0}, {std::int64_t(a.extent(0)), std::int64_t(a.extent(1))}),
        f);
  }
  return out;
}

/// out(j) = sum_i a(i, j): a thread per column, reading along the rows
/// (neighbouring threads, neighbouring columns).
template <class Out, class A>
struct SumColumns {
  Out out;
  A a;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t j) const {
    typename Out::value_type s = 0;
    for (std::size_t i = 0; i < a.extent(0); ++i) s += a(i, j);
    out(j) = s;
  }
};

/// out(i) = sum_j a(i, j): a team per row, its threads splitting the row.
template <class Out, class A, class Member>
struct SumRows {
  Out out;
  A a;
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    const auto i = team.league_rank();
    typename Out::value_type s = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, a.extent(1)),
        [&](std::size_t j, typename Out::value_type& acc) { acc += a(i, j); }, s);
    Kokkos::single(Kokkos::PerTeam(team), [&] { out(i) = s; });
  }
};

/// The sum of every element of a vector, or of a matrix.
template <class A>
struct SumVector {
  A a;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, ops_value_t<A>& acc) const { acc += a(i); }
};
template <class A>
struct SumMatrix {
  A a;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, std::int64_t j,
                                         ops_value_t<A>& acc) const {
    acc += a(i, j);
  }
};

}  // namespace detail

// -- products, through Kokkos Kernels ---------------------------------------------

/// \brief `a @ b` (jnp.matmul): a matrix times a matrix (gemm) or a vector
/// (gemv), on `exec`. \throws Error naming both shapes when the inner
/// extents differ.
template <class Exec, class A, class B, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
auto matmul(const Exec& exec, const A& a, const B& b) {
  detail::require_ops_view<Exec, A>();
  detail::require_ops_view<Exec, B>();
  detail::require_ops_pair<A, B>();
  static_assert(A::rank == 2, "kpmap::matmul: the left operand is a matrix (rank 2)");
  using T = detail::ops_value_t<A>;
  using M = detail::ops_memory_t<A>;
  if (a.extent(1) != b.extent(0)) {
    throw Error("kpmap::matmul: " + detail::shape_of(a) + " @ " + detail::shape_of(b) +
                ": the inner extents differ");
  }
  if constexpr (B::rank == 1) {
    detail::ops_result_t<T, 1, M> y("kpmap::matmul", a.extent(0));
    detail::gemv(exec, "N", T(1), a, b, T(0), y);
    return y;
  } else {
    detail::ops_result_t<T, 2, M> c("kpmap::matmul", a.extent(0), b.extent(1));
    detail::gemm(exec, "N", "N", T(1), a, b, T(0), c);
    return c;
  }
}
template <class A, class B, std::enable_if_t<detail::is_view_v<A>, int> = 0>
auto matmul(const A& a, const B& b) {
  return matmul(typename A::execution_space(), a, b);
}

/// \brief The dot product of two vectors (jnp.dot), computed on `exec`; the
/// host waits for it. \throws Error naming both shapes when they differ.
template <class Exec, class X, class Y, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
detail::ops_value_t<X> dot(const Exec& exec, const X& x, const Y& y) {
  detail::require_ops_view<Exec, X>();
  detail::require_ops_view<Exec, Y>();
  detail::require_ops_pair<X, Y>();
  static_assert(X::rank == 1 && Y::rank == 1, "kpmap::dot takes two vectors (rank 1)");
  if (x.extent(0) != y.extent(0)) {
    throw Error("kpmap::dot: the shapes " + detail::shape_of(x) + " and " + detail::shape_of(y) +
                " differ");
  }
  return detail::dot(exec, x, y);
}
template <class X, class Y, std::enable_if_t<detail::is_view_v<X>, int> = 0>
detail::ops_value_t<X> dot(const X& x, const Y& y) {
  return dot(typename X::execution_space(), x, y);
}

/// \brief y += alpha x, in place (BLAS axpy; `y = y + alpha * x` in JAX),
/// on `exec`. \throws Error naming both shapes when they differ.
template <class Exec, class X, class Y, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
void axpy(const Exec& exec, detail::ops_value_t<X> alpha, const X& x, const Y& y) {
  detail::require_ops_view<Exec, X>();
  detail::require_ops_view<Exec, Y>();
  detail::require_ops_pair<X, Y>();
  static_assert(detail::rank_v<X> == detail::rank_v<Y>, "kpmap::axpy: both Views of one rank");
  for (unsigned d = 0; d < X::rank; ++d) {
    if (x.extent(d) != y.extent(d)) {
      throw Error("kpmap::axpy: the shapes " + detail::shape_of(x) + " and " + detail::shape_of(y) +
                  " differ");
    }
  }
  detail::axpy(exec, alpha, x, y);
}
template <class X, class Y, std::enable_if_t<detail::is_view_v<X>, int> = 0>
void axpy(detail::ops_value_t<X> alpha, const X& x, const Y& y) {
  axpy(typename Y::execution_space(), alpha, x, y);
}

// -- elementwise --------------------------------------------------------------------

/// \brief `a + b`, elementwise, into a new View. \throws Error when the shapes differ.
template <class Exec, class A, class B, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
auto add(const Exec& exec, const A& a, const B& b) {
  return detail::elementwise<detail::AddOp>(exec, "kpmap::add", a, b, 0);
}
template <class A, class B, std::enable_if_t<detail::is_view_v<A>, int> = 0>
auto add(const A& a, const B& b) {
  return add(typename A::execution_space(), a, b);
}
/// \brief `a * b`, elementwise, into a new View. \throws Error when the shapes differ.
template <class Exec, class A, class B, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
auto multiply(const Exec& exec, const A& a, const B& b) {
  return detail::elementwise<detail::MultiplyOp>(exec, "kpmap::multiply", a, b, 0);
}
template <class A, class B, std::enable_if_t<detail::is_view_v<A>, int> = 0>
auto multiply(const A& a, const B& b) {
  return multiply(typename A::execution_space(), a, b);
}
/// \brief `alpha * a` into a new View.
template <class Exec, class A, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
auto scale(const Exec& exec, detail::ops_value_t<A> alpha, const A& a) {
  return detail::elementwise<detail::ScaleOp>(exec, "kpmap::scale", a, a, alpha);
}
template <class A, std::enable_if_t<detail::is_view_v<A>, int> = 0>
auto scale(detail::ops_value_t<A> alpha, const A& a) {
  return scale(typename A::execution_space(), alpha, a);
}

// -- sums -----------------------------------------------------------------------------

/// \brief `jnp.sum(a, axis=axis)` of a matrix: a new vector, the sums of
/// its columns (axis 0) or of its rows (axis 1). \throws Error for another axis.
template <class Exec, class A, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
auto sum(const Exec& exec, const A& a, int axis) {
  detail::require_ops_view<Exec, A>();
  static_assert(A::rank == 2,
                "kpmap::sum over an axis takes a matrix (rank 2); "
                "kpmap::sum(v) sums a vector");
  using T = detail::ops_value_t<A>;
  using Out = detail::ops_result_t<T, 1, detail::ops_memory_t<A>>;
  if (axis == 0) {
    Out out(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::sum"), a.extent(1));
    Kokkos::parallel_for("kpmap::sum", Kokkos::RangePolicy<Exec>(exec, 0, a.extent(1)),
                         detail::SumColumns<Out, A>{out, a});
    return out;
  }
  if (axis == 1) {
    Out out(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::sum"), a.extent(0));
    using Policy = Kokkos::TeamPolicy<Exec>;
    Kokkos::parallel_for("kpmap::sum", Policy(exec, static_cast<int>(a.extent(0)), Kokkos::AUTO),
                         detail::SumRows<Out, A, typename Policy::member_type>{out, a});
    return out;
  }
  throw Error("kpmap::sum: axis " + std::to_string(axis) + " of a matrix of shape " +
              detail::shape_of(a) + " (axis 0 or 1)");
}
template <class A, std::enable_if_t<detail::is_view_v<A>, int> = 0>
auto sum(const A& a, int axis) {
  return sum(typename A::execution_space(), a, axis);
}

/// \brief `jnp.sum(a)`: the sum of every element of a vector or matrix,
/// computed on `exec`; the host waits for it.
template <class Exec, class A, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
detail::ops_value_t<A> sum(const Exec& exec, const A& a) {
  detail::require_ops_view<Exec, A>();
  detail::ops_value_t<A> s = 0;
  if constexpr (A::rank == 1) {
    Kokkos::parallel_reduce("kpmap::sum", Kokkos::RangePolicy<Exec>(exec, 0, a.extent(0)),
                            detail::SumVector<A>{a}, s);
  } else {
    Kokkos::parallel_reduce(
        "kpmap::sum",
        row_major_range<2>(exec, {0, 0}, {std::int64_t(a.extent(0)), std::int64_t(a.extent(1))}),
        detail::SumMatrix<A>{a}, s);
  }
  return s;
}
template <class A, std::enable_if_t<detail::is_view_v<A>, int> = 0>
detail::ops_value_t<A> sum(const A& a) {
  return sum(typename A::execution_space(), a);
}

}  // namespace kpmap
