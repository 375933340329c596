// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief What every array operation of kpmap/spmd/ops*.hpp shares: the
/// result type, the compile-time checks of its Views, the shape in messages,
/// and the kernel shape: one thread per element, the last index fastest.

#include <kpmap/base/detail/view_utils.hpp>
#include <kpmap/base/error.hpp>
#include <kpmap/base/policy.hpp>
#include <kpmap/collectives/buffers.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <type_traits>

namespace kpmap::detail {

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

/// Refuses inputs in two memory spaces (the kernel runs in one) or of two
/// element types.
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

/// Refuses Views an operation cannot take: ranks other than 1 to 3, or a
/// space `Exec` cannot reach.
template <class Exec, class V>
constexpr void require_ops_view() {
  static_assert(Kokkos::is_view<V>::value, "kpmap array operations take Kokkos Views");
  static_assert(V::rank >= 1 && V::rank <= 3,
                "kpmap array operations take Views of rank 1, 2 or 3");
  static_assert(Kokkos::SpaceAccessibility<Exec, ops_memory_t<V>>::accessible,
                "kpmap array operations run on an execution space that reaches the Views");
}

/// \throws Error naming `name` and both shapes when `a` and `b` differ in shape.
template <class A, class B>
void require_same_shape(const char* name, const A& a, const B& b) {
  static_assert(rank_v<A> == rank_v<B>, "kpmap array operations: the Views have one rank");
  for (unsigned d = 0; d < A::rank; ++d) {
    if (a.extent(d) != b.extent(d)) {
      throw Error(std::string(name) + ": the shapes " + shape_of(a) + " and " + shape_of(b) +
                  " differ");
    }
  }
}

/// A new View of a's shape (LayoutRight, a's memory space), uninitialised.
template <class T = void, class A>
auto empty_like(const A& a, const char* label) {
  using V = std::conditional_t<std::is_void_v<T>, ops_value_t<A>, T>;
  using Out = ops_result_t<V, A::rank, ops_memory_t<A>>;
  return allocate<Out>(label, extents_of(a));
}

/// Runs f(i), f(i, j) or f(i, j, k) for every element of a View of extents
/// like `like`'s, on `exec`, the last index fastest.
template <class Exec, class V, class F>
void for_each_element(const char* name, const Exec& exec, const V& like, const F& f) {
  if constexpr (V::rank == 1) {
    Kokkos::parallel_for(name, Kokkos::RangePolicy<Exec>(exec, 0, like.extent(0)), f);
  } else if constexpr (V::rank == 2) {
    Kokkos::parallel_for(name, row_major_range<2>(exec, {0, 0}, {like.extent(0), like.extent(1)}),
                         f);
  } else {
    Kokkos::parallel_for(
        name, row_major_range<3>(exec, {0, 0, 0}, {like.extent(0), like.extent(1), like.extent(2)}),
        f);
  }
}

}  // namespace kpmap::detail
