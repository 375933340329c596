#pragma once
/// \file
/// \brief Trees of Views: the leaves a collective visits, in a fixed order,
/// and the execution space a tree's kernels run on.
///
/// A tree is a View, a std::tuple or std::vector of trees, or a user type
/// with a member `template <class F> void for_each_view(F&& f)` that calls f
/// on each of its Views. A user type whose Views live elsewhere than the
/// default execution space's memory declares `using memory_space = ...;`.

#include <kpmap/base/error.hpp>
#include <kpmap/collectives/buffers.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>
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
/// vector's first leaf's, what a user type declares, or, where it declares
/// none, the default execution space's (each leaf is held to it when a
/// collective visits it: detail::require_leaf_space).
template <class X, class = void>
struct tree_memory_space {
  using type = typename std::conditional_t<declares_memory_space<X>::value, X,
                                           Kokkos::DefaultExecutionSpace>::memory_space;
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

/// Calls nothing: what tells a type with for_each_view from other types.
struct LeafProbe {
  template <class V>
  void operator()(V&) const {}
};
template <class X, class = void>
struct has_for_each_view : std::false_type {};
template <class X>
struct has_for_each_view<
    X, std::void_t<decltype(std::declval<X&>().for_each_view(std::declval<LeafProbe&>()))>>
    : std::true_type {};

/// Whether X is a tree that is not a single View: a std::tuple or
/// std::vector of trees, or a type with for_each_view.
template <class X>
inline constexpr bool is_tree_v =
    !Kokkos::is_view<X>::value &&
    (is_tuple<X>::value || is_std_vector<X>::value || has_for_each_view<X>::value);

/// Refuses, at compile time, a leaf of a type with for_each_view that
/// declares no memory space and lives outside the default execution space's
/// memory (a collective would run its kernels where they cannot reach it).
template <class Tree, class Leaf>
constexpr void require_leaf_space() {
  using U = std::decay_t<Tree>;
  if constexpr (has_for_each_view<U>::value && !declares_memory_space<U>::value) {
    static_assert(std::is_same_v<typename std::decay_t<Leaf>::memory_space,
                                 Kokkos::DefaultExecutionSpace::memory_space>,
                  "kpmap: this tree type's Views live outside the default execution space's "
                  "memory: declare where, `using memory_space = ...;` in the type");
  }
}

/// \brief A tree like `x` whose leaves are new Views holding copies of x's
/// (once `exec` has run the copies): a View, a tuple of them, a vector of
/// them, or a copy of a user type whose Views are replaced by new ones.
/// \throws Error when a user type's for_each_view hands out copies of its
/// Views, which cannot be replaced (it must pass its members: f(w), f(b)).
template <class Exec, class X>
auto tree_copy(const Exec& exec, const X& x, const char* label) {
  using U = std::decay_t<X>;
  if constexpr (Kokkos::is_view<U>::value) {
    return copy_of(exec, x, label);
  } else if constexpr (is_tuple<U>::value) {
    return std::apply(
        [&](const auto&... leaves) { return std::make_tuple(tree_copy(exec, leaves, label)...); },
        x);
  } else if constexpr (is_std_vector<U>::value) {
    std::vector<decltype(tree_copy(exec, std::declval<const typename U::value_type&>(), label))>
        out;
    out.reserve(x.size());
    for (const auto& leaf : x) out.push_back(tree_copy(exec, leaf, label));
    return out;
  } else {
    // The copy's members are its own (not const), whatever for_each_view's
    // constness makes of them: each is replaced by a new View.
    U out = x;
    auto fresh = [&](auto& leaf) {
      using V = std::remove_const_t<std::remove_reference_t<decltype(leaf)>>;
      const_cast<V&>(leaf) = copy_of(exec, leaf, label);
    };
    for_each_leaf(out, fresh);
    std::vector<const void*> before;
    auto seen = [&](const auto& leaf) { before.push_back(leaf.data()); };
    for_each_leaf(const_cast<U&>(x), seen);
    std::size_t i = 0;
    auto check = [&](const auto& leaf) {
      if (leaf.size() > 0 && i < before.size() && leaf.data() == before[i]) {
        throw Error(std::string(label) + ": leaf " + std::to_string(i) +
                    " of this tree is still the argument's View after the copy: its "
                    "for_each_view hands out copies of its Views; pass the members themselves "
                    "(f(w), not f(View(w)))");
      }
      ++i;
    };
    for_each_leaf(out, check);
    return out;
  }
}

/// \brief The execution space a View, or a tree of Views, runs on: the one
/// that owns its memory, so no kernel ever runs where it cannot reach the data.
template <class X>
using exec_of_t = typename tree_memory_space<std::decay_t<X>>::type::execution_space;

}  // namespace kpmap::detail
