// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Reductions of one array for pmap and shard_map bodies, as
/// jax.numpy names them: jnp.sum, mean, max and min of every element (a
/// number the host waits for) or along an axis of a matrix (a new vector),
/// and jnp.linalg.norm.
///
/// Views of rank 1 to 3 (along an axis: rank 2), any layout, subviews too.
/// A whole reduction is one parallel_reduce; along axis 0 a thread per
/// column walks down the rows (neighbouring threads, neighbouring columns),
/// along axis 1 a team per row splits it among its threads, so neighbouring
/// GPU threads read neighbouring addresses either way. \throws Error for an
/// axis other than 0 or 1, or the max, min or mean of no elements (JAX's
/// max of an empty array is an error too).

#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/spmd/detail/ops_common.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <type_traits>

namespace kpmap {

namespace detail {

/// The reductions: a Kokkos reducer, its identity and its join, and the
/// factor the result is scaled by (the mean's 1/n).
enum class Reduction { sum, mean, max, min };

inline const char* reduction_name(Reduction r) {
  switch (r) {
    case Reduction::mean:
      return "kpmap::mean";
    case Reduction::max:
      return "kpmap::max";
    case Reduction::min:
      return "kpmap::min";
    case Reduction::sum:
      break;
  }
  return "kpmap::sum";
}

template <Reduction R, class T>
KOKKOS_INLINE_FUNCTION T identity() {
  if constexpr (R == Reduction::max) return Kokkos::reduction_identity<T>::max();
  if constexpr (R == Reduction::min) return Kokkos::reduction_identity<T>::min();
  return T(0);
}
/// Whether x is NaN (never for an integer).
template <class T>
KOKKOS_INLINE_FUNCTION bool is_nan(const T& x) {
  if constexpr (std::is_floating_point_v<T>) {
    return x != x;
  } else {
    (void)x;
    return false;
  }
}

/// acc = max (min) of acc and x, NaN where either is, as jnp.max does:
/// `if (x > acc)` alone would skip a NaN that comes after a number.
template <Reduction R, class T>
KOKKOS_INLINE_FUNCTION void join(T& acc, T x) {
  if constexpr (R == Reduction::max) {
    if (is_nan(x) || (!is_nan(acc) && x > acc)) acc = x;
  } else if constexpr (R == Reduction::min) {
    if (is_nan(x) || (!is_nan(acc) && x < acc)) acc = x;
  } else {
    acc += x;
  }
}

/// Kokkos' Max and Min with join<R>'s rule: partial results of threads
/// and teams join so that a NaN in any of them is the result.
template <Reduction R, class T, class Space = Kokkos::HostSpace>
struct ExtremumReducer {
  using reducer = ExtremumReducer;
  using value_type = std::remove_cv_t<T>;
  using result_view_type = Kokkos::View<value_type, Space, Kokkos::MemoryUnmanaged>;

  KOKKOS_INLINE_FUNCTION explicit ExtremumReducer(value_type& v) : value_(&v) {}
  KOKKOS_INLINE_FUNCTION void join(value_type& dest, const value_type& src) const {
    kpmap::detail::join<R>(dest, src);
  }
  // Kokkos 3.4 joins through volatile references.
  KOKKOS_INLINE_FUNCTION void join(volatile value_type& dest,
                                   const volatile value_type& src) const {
    value_type d = dest;
    kpmap::detail::join<R>(d, value_type(src));
    dest = d;
  }
  KOKKOS_INLINE_FUNCTION void init(value_type& v) const { v = identity<R, value_type>(); }
  KOKKOS_INLINE_FUNCTION value_type& reference() const { return *value_.data(); }
  KOKKOS_INLINE_FUNCTION result_view_type view() const { return value_; }
  KOKKOS_INLINE_FUNCTION bool references_scalar() const { return true; }

 private:
  result_view_type value_;
};

template <Reduction R, class T>
using reducer_t = std::conditional_t<R == Reduction::sum || R == Reduction::mean, Kokkos::Sum<T>,
                                     ExtremumReducer<R, T>>;

/// out(j) = reduce_i a(i, j) * factor: a thread per column.
template <Reduction R, class Out, class A>
struct ReduceColumns {
  Out out;
  A a;
  typename Out::value_type factor;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t j) const {
    using T = typename Out::value_type;
    T acc = identity<R, T>();
    for (std::size_t i = 0; i < a.extent(0); ++i) join<R>(acc, T(a(i, j)));
    out(j) = R == Reduction::mean ? acc * factor : acc;
  }
};

/// out(i) = reduce_j a(i, j) * factor: a team per row, its threads splitting the row.
template <Reduction R, class Out, class A, class Member>
struct ReduceRows {
  Out out;
  A a;
  typename Out::value_type factor;
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    using T = typename Out::value_type;
    const auto i = team.league_rank();
    T acc = identity<R, T>();
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, a.extent(1)),
        [&](std::size_t j, T& v) { join<R>(v, T(a(i, j))); }, reducer_t<R, T>(acc));
    Kokkos::single(Kokkos::PerTeam(team),
                   [&] { out(i) = R == Reduction::mean ? acc * factor : acc; });
  }
};

/// What a whole reduction adds of each element: join it (sum, max, min) or
/// its square (norm).
template <Reduction R>
struct Joined {
  template <class T>
  KOKKOS_INLINE_FUNCTION void operator()(T& acc, T x) const {
    join<R>(acc, x);
  }
};
struct Squared {
  template <class T>
  KOKKOS_INLINE_FUNCTION void operator()(T& acc, T x) const {
    acc += x * x;
  }
};

/// The reduction of every element of a View of rank 1, 2 or 3, the last
/// index fastest (one operator per functor: Kokkos 3.4 deduces the reduced
/// type from it).
template <class Term, class A, unsigned Rank = A::rank>
struct ReduceAll;
template <class Term, class A>
struct ReduceAll<Term, A, 1> {
  A a;
  using T = ops_value_t<A>;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, T& acc) const { Term()(acc, T(a(i))); }
};
template <class Term, class A>
struct ReduceAll<Term, A, 2> {
  A a;
  using T = ops_value_t<A>;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, std::int64_t j, T& acc) const {
    Term()(acc, T(a(i, j)));
  }
};
template <class Term, class A>
struct ReduceAll<Term, A, 3> {
  A a;
  using T = ops_value_t<A>;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, std::int64_t j, std::int64_t k,
                                         T& acc) const {
    Term()(acc, T(a(i, j, k)));
  }
};

/// Runs `f` as one parallel_reduce over every element of `a` into `reducer`:
/// on a GPU (and in a KPMAP_DEVICE_PATHS build) a matrix or a cube as one
/// flat range over its elements (kpmap::reduce_flat: Kokkos' CUDA MDRange
/// reduction does not fill a GPU), on host backends as an MDRange.
template <class Exec, class A, class F, class Reducer>
void reduce_elements(const char* name, const Exec& exec, const A& a, const F& f,
                     const Reducer& reducer) {
  if constexpr (A::rank >= 2 && !host_shortcut_v<Exec>) {
    Kokkos::Array<std::int64_t, A::rank> lo{}, hi{};
    for (unsigned d = 0; d < A::rank; ++d) hi[d] = static_cast<std::int64_t>(a.extent(d));
    reduce_flat<A::rank>(name, exec, lo, hi, f, reducer);
  } else if constexpr (A::rank == 1) {
    Kokkos::parallel_reduce(name, Kokkos::RangePolicy<Exec>(exec, 0, a.extent(0)), f, reducer);
  } else if constexpr (A::rank == 2) {
    Kokkos::parallel_reduce(name, row_major_range<2>(exec, {0, 0}, {a.extent(0), a.extent(1)}), f,
                            reducer);
  } else {
    Kokkos::parallel_reduce(
        name, row_major_range<3>(exec, {0, 0, 0}, {a.extent(0), a.extent(1), a.extent(2)}), f,
        reducer);
  }
}

/// kpmap::mean of integers is refused, as pmean's is: the mean would be
/// truncated to the element type (jnp.mean gives a float).
template <Reduction R, class T>
constexpr void require_reducible() {
  static_assert(R != Reduction::mean || !std::is_integral_v<T>,
                "kpmap::mean needs floating-point elements: the mean of integers would be "
                "truncated (pmean refuses them too); take kpmap::sum and divide in floating "
                "point");
}

template <Reduction R, class Exec, class A>
ops_value_t<A> reduce_all(const Exec& exec, const A& a) {
  require_ops_view<Exec, A>();
  require_reducible<R, ops_value_t<A>>();
  using T = ops_value_t<A>;
  const char* name = reduction_name(R);
  if (R != Reduction::sum && a.size() == 0) {
    throw Error(std::string(name) + ": the array of shape " + shape_of(a) +
                " has no elements (jnp." + (name + 7) + " of an empty array is an error too)");
  }
  T acc = identity<R, T>();
  constexpr Reduction Kernel = R == Reduction::mean ? Reduction::sum : R;
  reduce_elements(name, exec, a, ReduceAll<Joined<Kernel>, A>{a}, reducer_t<Kernel, T>(acc));
  if constexpr (R == Reduction::mean) acc /= static_cast<T>(a.size());
  return acc;
}

template <Reduction R, class Exec, class A>
auto reduce_axis(const Exec& exec, const A& a, int axis) {
  require_ops_view<Exec, A>();
  static_assert(A::rank == 2,
                "kpmap's reductions along an axis take a matrix (rank 2); without an axis they "
                "reduce every element");
  using T = ops_value_t<A>;
  require_reducible<R, T>();
  using Out = ops_result_t<T, 1, ops_memory_t<A>>;
  const char* name = reduction_name(R);
  if (axis != 0 && axis != 1) {
    throw Error(std::string(name) + ": axis " + std::to_string(axis) + " of a matrix of shape " +
                shape_of(a) + " (axis 0 or 1)");
  }
  const std::size_t along = a.extent(axis);
  if (R != Reduction::sum && along == 0) {
    throw Error(std::string(name) + ": axis " + std::to_string(axis) + " of the matrix of shape " +
                shape_of(a) + " has no elements");
  }
  const T factor = R == Reduction::mean ? T(1) / static_cast<T>(along) : T(1);
  Out out(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(name)), a.extent(1 - axis));
  if (axis == 0) {
    Kokkos::parallel_for(name, Kokkos::RangePolicy<Exec>(exec, 0, a.extent(1)),
                         ReduceColumns<R, Out, A>{out, a, factor});
  } else {
    using Policy = Kokkos::TeamPolicy<Exec>;
    Kokkos::parallel_for(name, Policy(exec, static_cast<int>(a.extent(0)), Kokkos::AUTO),
                         ReduceRows<R, Out, A, typename Policy::member_type>{out, a, factor});
  }
  return out;
}

}  // namespace detail

#define KPMAP_OPS_REDUCTION(NAME, R)                                                 \
  template <class Exec, class A, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0> \
  detail::ops_value_t<A> NAME(const Exec& exec, const A& a) {                        \
    return detail::reduce_all<detail::Reduction::R>(exec, a);                        \
  }                                                                                  \
  template <class A, std::enable_if_t<detail::is_view_v<A>, int> = 0>                \
  detail::ops_value_t<A> NAME(const A& a) {                                          \
    return NAME(typename A::execution_space(), a);                                   \
  }                                                                                  \
  template <class Exec, class A, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0> \
  auto NAME(const Exec& exec, const A& a, int axis) {                                \
    return detail::reduce_axis<detail::Reduction::R>(exec, a, axis);                 \
  }                                                                                  \
  template <class A, std::enable_if_t<detail::is_view_v<A>, int> = 0>                \
  auto NAME(const A& a, int axis) {                                                  \
    return NAME(typename A::execution_space(), a, axis);                             \
  }

/// \brief jnp.sum(a): every element, computed on `exec` (the host waits);
/// jnp.sum(a, axis=k) of a matrix: a new vector, the sums of its columns
/// (axis 0) or of its rows (axis 1).
KPMAP_OPS_REDUCTION(sum, sum)
/// \brief jnp.mean(a), and jnp.mean(a, axis=k) of a matrix.
KPMAP_OPS_REDUCTION(mean, mean)
/// \brief jnp.max(a), and jnp.max(a, axis=k) of a matrix.
KPMAP_OPS_REDUCTION(max, max)
/// \brief jnp.min(a), and jnp.min(a, axis=k) of a matrix.
KPMAP_OPS_REDUCTION(min, min)

#undef KPMAP_OPS_REDUCTION

/// \brief jnp.linalg.norm(a): the square root of the sum of squares of
/// every element (a vector's 2-norm, a matrix's Frobenius norm), on `exec`;
/// the host waits for it.
template <class Exec, class A, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
detail::ops_value_t<A> norm(const Exec& exec, const A& a) {
  detail::require_ops_view<Exec, A>();
  using T = detail::ops_value_t<A>;
  T s = 0;
  detail::reduce_elements("kpmap::norm", exec, a, detail::ReduceAll<detail::Squared, A>{a},
                          Kokkos::Sum<T>(s));
  return detail::math::sqrt(s);
}
template <class A, std::enable_if_t<detail::is_view_v<A>, int> = 0>
detail::ops_value_t<A> norm(const A& a) {
  return norm(typename A::execution_space(), a);
}

}  // namespace kpmap
