// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Array operations a pmap or shard_map body calls in one line, as a
/// JAX body writes `a @ x`, `jnp.dot`, `a + b` or `jnp.sum(a, axis=1)`:
/// the products here (matmul, batched too, dot, axpy), the elementwise
/// operations in ops_elementwise.hpp, the reductions in ops_reductions.hpp.
///
/// Each works on Views (any layout, subviews too) in their own memory space,
/// on that space's execution space or on the instance given first, and
/// returns a new View there (LayoutRight), as JAX returns a new array:
/// `kpmap::matmul(a, x)`, `kpmap::matmul(exec, a, b)`. Products of matrices
/// and vectors go through Kokkos Kernels (gemm, gemv, dot, axpy); a batched
/// product is one kernel of a thread per element of the result. A body run
/// every step allocates its results every step, as JAX's does; a loop that
/// must not allocate keeps its arrays and calls the Kokkos Kernels routines
/// on them. docs/pmap.md's table lists each with its jnp name.
///
/// \code
///   auto y = kpmap::matmul(a_block, x_block);   // a_block @ x_block
///   kpmap::psum_inplace(y, "model");
///   const double s = kpmap::dot(y, y);            // jnp.dot(y, y)
///   auto rows = kpmap::sum(a_block, 1);           // jnp.sum(a_block, axis=1)
///   auto p = kpmap::divide(kpmap::exp(z), kpmap::full_like(z, kpmap::sum(kpmap::exp(z))));
/// \endcode

#include <kpmap/base/detail/blas.hpp>
#include <kpmap/spmd/detail/ops_common.hpp>
#include <kpmap/spmd/ops_elementwise.hpp>
#include <kpmap/spmd/ops_reductions.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <type_traits>

namespace kpmap {

namespace detail {

/// out(b, i, j) = sum_k a(b, i, k) c(b, k, j): a thread per element of
/// out, its last index fastest (neighbouring threads read neighbouring
/// columns of c and write neighbouring elements of out).
template <class Out, class A, class C>
struct BatchedProduct {
  Out out;
  A a;
  C c;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t b, std::int64_t i, std::int64_t j) const {
    typename Out::value_type s = 0;
    for (std::size_t k = 0; k < a.extent(2); ++k) s += a(b, i, k) * c(b, k, j);
    out(b, i, j) = s;
  }
};

}  // namespace detail

// -- products, through Kokkos Kernels ---------------------------------------------

/// \brief `a @ b` (jnp.matmul): a matrix times a matrix (gemm) or a vector
/// (gemv), or a batch of matrices (B, M, K) times a batch (B, K, N) into
/// (B, M, N), on `exec`. \throws Error naming both shapes when the inner or
/// batch extents differ.
template <class Exec, class A, class B, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
auto matmul(const Exec& exec, const A& a, const B& b) {
  detail::require_ops_view<Exec, A>();
  detail::require_ops_view<Exec, B>();
  detail::require_ops_pair<A, B>();
  static_assert((A::rank == 2 && B::rank <= 2) || (A::rank == 3 && B::rank == 3),
                "kpmap::matmul: a matrix (rank 2) times a matrix or a vector, or a batch of "
                "matrices (rank 3) times a batch of matrices");
  using T = detail::ops_value_t<A>;
  using M = detail::ops_memory_t<A>;
  constexpr unsigned inner = A::rank - 1;
  if (a.extent(inner) != b.extent(inner - 1) || (A::rank == 3 && a.extent(0) != b.extent(0))) {
    throw Error("kpmap::matmul: " + detail::shape_of(a) + " @ " + detail::shape_of(b) +
                (a.extent(inner) != b.extent(inner - 1) ? ": the inner extents differ"
                                                        : ": the batch extents differ"));
  }
  if constexpr (A::rank == 3) {
    using Out = detail::ops_result_t<T, 3, M>;
    Out out(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::matmul"), a.extent(0),
            a.extent(1), b.extent(2));
    detail::for_each_element("kpmap::matmul", exec, out,
                             detail::BatchedProduct<Out, A, B>{out, a, b});
    return out;
  } else if constexpr (B::rank == 1) {
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
  static_assert(detail::rank_v<X> == detail::rank_v<Y> && detail::rank_v<X> <= 2,
                "kpmap::axpy: two vectors or two matrices");
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

}  // namespace kpmap
