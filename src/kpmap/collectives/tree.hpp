#pragma once
/// \file
/// \brief Trees of Views: the leaves a collective visits, in a fixed order,
/// and the execution space a tree's kernels run on.
///
/// A tree is a View, a std::tuple or std::vector of trees, or a user type
/// with a member `template <class F> void for_each_view(F&& f)` that calls f
/// on each of its Views, and a `using memory_space = ...;` naming where they live.

#include <kpmap/collectives/buffers.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <vector>

namespace kpmap::detail {

template <class T>
struct is_tuple : std::false_type {};
template <class... Ts>
struct is_tuple<std::tuple<Ts...>> : std::true_type {};
template <class T>
struct is_std_vector : std::false_type {};
template <class T, class A>
struct is_std_vector<std::vector<T, A>> : std::true_type {};

/// \brief Calls f(view) for every View leaf of a tree: a View, a std::tuple or
/// std::vector of trees, or a user type with a member
/// `template <class F> void for_each_view(F&& f)` that calls f on each View.
template <class Tree, class F>
void for_each_leaf(Tree& tree, F& f) {
  using U = std::decay_t<Tree>;
  if constexpr (Kokkos::is_view<U>::value) {
    f(tree);
  } else if constexpr (is_tuple<U>::value) {
    std::apply([&f](auto&... leaves) { (for_each_leaf(leaves, f), ...); }, tree);
  } else if constexpr (is_std_vector<U>::value) {
    for (auto& leaf : tree) for_each_leaf(leaf, f);
  } else {
    tree.for_each_view(f);
  }
}

/// Calls f(leaf, index) for every leaf of the tree.
template <class Tree, class F>
void for_each_leaf_indexed(Tree& tree, F&& f) {
  std::size_t i = 0;
  auto g = [&](auto& leaf) { f(leaf, i++); };
  for_each_leaf(tree, g);
}

template <class X, class = void>
struct declares_memory_space : std::false_type {};
template <class X>
struct declares_memory_space<X, std::void_t<typename X::memory_space>> : std::true_type {};

/// \brief The memory space of a tree's leaves: a View's own, a tuple's or
/// vector's first leaf's, or what a user type declares.
template <class X, class = void>
struct tree_memory_space {
  static_assert(declares_memory_space<X>::value,
                "kpmap: a tree type must declare `using memory_space = ...;` (where its Views "
                "live), or the collective must be given an execution space");
  using type = typename X::memory_space;
};
template <class... Ts>
struct tree_memory_space<std::tuple<Ts...>> {
  using type =
      typename tree_memory_space<std::decay_t<std::tuple_element_t<0, std::tuple<Ts...>>>>::type;
};
template <class T, class A>
struct tree_memory_space<std::vector<T, A>> {
  using type = typename tree_memory_space<std::decay_t<T>>::type;
};

/// \brief The execution space a View, or a tree of Views, runs on: the one
/// that owns its memory, so no kernel ever runs where it cannot reach the data.
template <class X>
using exec_of_t = typename tree_memory_space<std::decay_t<X>>::type::execution_space;

}  // namespace kpmap::detail
