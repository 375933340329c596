// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Trees of Views: the leaves a collective visits, in a fixed order,
/// and the execution space a tree's kernels run on.
///
/// A tree is a View, a std::tuple, std::vector or std::array of trees, or a
/// user type with a member `template <class F> void for_each_view(F&& f)`
/// that calls f on each of its Views. A user type whose Views live elsewhere
/// than the default execution space's memory declares `using memory_space =
/// ...;`. kpmap::tree_map, tree_for_each, tree_leaf_count and tree_leaves are
/// jax.tree_util's counterparts.

#include <kpmap/base/error.hpp>
#include <kpmap/collectives/buffers.hpp>

#include <Kokkos_Core.hpp>

#include <array>
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
template <class T>
struct is_std_array : std::false_type {};
template <class T, std::size_t N>
struct is_std_array<std::array<T, N>> : std::true_type {};

/// Calls nothing: what tells a type with for_each_view from other types.
///
/// nvcc's front end warns (#177, declared_but_not_referenced) of each
/// for_each_view of a type in an unnamed namespace that is instantiated
/// for the probe (in the unevaluated decltype below) and never called so:
/// for every user's tree type, at its own line, after this header. The
/// warning is off from here on in a translation unit nvcc compiles; the
/// host compiler's -Wunused-function still finds functions never used.
#if defined(__NVCC__) && defined(__NVCC_DIAG_PRAGMA_SUPPORT__)
#pragma nv_diag_suppress declared_but_not_referenced
#endif
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

/// Refuses, at compile time, a type that is no tree, saying what is one.
template <class U>
constexpr void require_tree() {
  static_assert(has_for_each_view<U>::value,
                "kpmap: this type is not a tree of Views. A tree is a Kokkos::View, a std::tuple, "
                "std::vector or std::array of trees, or a type with a member "
                "`template <class F> void for_each_view(F&& f)` that calls f on each of its "
                "Views (f(w); f(b);)");
}

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
  } else if constexpr (is_std_vector<U>::value || is_std_array<U>::value) {
    for (auto& leaf : tree) for_each_leaf(leaf, f);
  } else {
    require_tree<U>();
    if constexpr (has_for_each_view<U>::value) tree.for_each_view(f);
  }
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
template <class T, std::size_t N>
struct tree_memory_space<std::array<T, N>> {
  using type = typename tree_memory_space<std::decay_t<T>>::type;
};

/// Whether X is a tree that is not a single View: a std::tuple, std::vector
/// or std::array of trees, or a type with for_each_view.
template <class X>
inline constexpr bool is_tree_v =
    !Kokkos::is_view<X>::value && (is_tuple<X>::value || is_std_vector<X>::value ||
                                   is_std_array<X>::value || has_for_each_view<X>::value);

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
  } else if constexpr (is_std_array<U>::value) {
    return std::apply(
        [&](const auto&... leaves) {
          return std::array<decltype(tree_copy(exec, x[0], label)), std::tuple_size_v<U>>{
              tree_copy(exec, leaves, label)...};
        },
        x);
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

namespace kpmap {

namespace detail {
/// Visits the leaves of `tree` (const or not) as Views that may be assigned:
/// for_each_view may be a const member handing out const references.
template <class Tree, class F>
void for_each_leaf_mutable(Tree& tree, F&& f) {
  using U = std::remove_const_t<Tree>;
  auto each = [&](auto& leaf) {
    using V = std::remove_const_t<std::remove_reference_t<decltype(leaf)>>;
    f(const_cast<V&>(leaf));
  };
  for_each_leaf(const_cast<U&>(tree), each);
}

template <class F, class T, class... Ts>
auto tree_map_impl(F& f, const T& t, const Ts&... ts);

// The I-th subtree of every tree, mapped (one pack expanded at a time).
template <std::size_t I, class F, class T, class... Ts>
auto tree_map_tuple_at(F& f, const T& t, const Ts&... ts) {
  return tree_map_impl(f, std::get<I>(t), std::get<I>(ts)...);
}
template <std::size_t I, class F, class T, class... Ts>
auto tree_map_array_at(F& f, const T& t, const Ts&... ts) {
  return tree_map_impl(f, t[I], ts[I]...);
}

template <class F, class T, class... Ts, std::size_t... I>
auto tree_map_tuple(F& f, std::index_sequence<I...>, const T& t, const Ts&... ts) {
  return std::make_tuple(tree_map_tuple_at<I>(f, t, ts...)...);
}

template <class R, class F, class T, class... Ts, std::size_t... I>
auto tree_map_array(F& f, std::index_sequence<I...>, const T& t, const Ts&... ts) {
  return std::array<R, sizeof...(I)>{tree_map_array_at<I>(f, t, ts...)...};
}

/// f(leaf, the other trees' i-th leaves...), each of leaf's type V.
template <class V, class F, std::size_t... J>
auto map_leaf(F& f, const V& leaf, const std::vector<const void*>* others, std::size_t i,
              std::index_sequence<J...>) {
  return f(leaf, *static_cast<const V*>(others[J][i])...);
}

template <class F, class T, class... Ts>
auto tree_map_impl(F& f, const T& t, const Ts&... ts) {
  using U = std::decay_t<T>;
  static_assert((std::is_same_v<U, std::decay_t<Ts>> && ...),
                "kpmap::tree_map: the trees are of one type (one structure)");
  if constexpr (Kokkos::is_view<U>::value) {
    return f(t, ts...);
  } else if constexpr (is_tuple<U>::value) {
    return tree_map_tuple(f, std::make_index_sequence<std::tuple_size_v<U>>{}, t, ts...);
  } else if constexpr (is_std_vector<U>::value || is_std_array<U>::value) {
    using R = decltype(tree_map_impl(f, t[0], ts[0]...));
    const std::size_t n = t.size();
    if (((ts.size() != n) || ...)) {
      throw Error("kpmap::tree_map: the trees differ in structure: a vector of " +
                  std::to_string(n) + " subtrees beside one of another length");
    }
    if constexpr (is_std_vector<U>::value) {
      std::vector<R> out;
      out.reserve(n);
      for (std::size_t i = 0; i < n; ++i) out.push_back(tree_map_impl(f, t[i], ts[i]...));
      return out;
    } else {
      return tree_map_array<R>(f, std::make_index_sequence<std::tuple_size_v<U>>{}, t, ts...);
    }
  } else {
    // A struct: a copy of `t` whose leaves are f's results. The other
    // trees' leaves, of the same types in the same order, are found by index.
    require_tree<U>();
    U out = t;
    std::vector<const void*> others[sizeof...(Ts) + 1];
    std::size_t k = 0;
    auto collect = [&](const auto& tree) {
      auto each = [&](auto& leaf) { others[k].push_back(&leaf); };
      for_each_leaf_mutable(tree, each);
      ++k;
    };
    (collect(ts), ...);
    std::size_t i = 0;
    auto apply = [&](auto& leaf) {
      using V = std::remove_reference_t<decltype(leaf)>;
      leaf = map_leaf<V>(f, leaf, others, i++, std::index_sequence_for<Ts...>{});
    };
    for_each_leaf_mutable(out, apply);
    return out;
  }
}
}  // namespace detail

/// \brief jax.tree_util.tree_map(f, tree, *rest): a new tree of the same
/// structure whose leaves are f(leaf, rest's leaves...), leaf by leaf: a
/// tuple for a tuple (f may change the leaves' types), a vector or array for
/// one, and for a struct with for_each_view a copy of it whose Views are f's
/// results (which must be assignable to them). The trees are of one type.
/// \code
///   auto momentum = kpmap::tree_map([](const auto& g) { return kpmap::scale(0.9, g); }, grads);
///   Params next = kpmap::tree_map([](const auto& p, const auto& g) {
///     return kpmap::subtract(p, kpmap::scale(0.1, g)); }, params, grads);
/// \endcode
/// \throws Error when two vectors of subtrees differ in length.
template <class F, class T, class... Ts>
auto tree_map(F&& f, const T& tree, const Ts&... rest) {
  return detail::tree_map_impl(f, tree, rest...);
}

/// \brief Calls f(leaf) on every leaf of `tree`, in the order collectives
/// and checkpoints visit them (jax.tree_util's leaf order for tuples and
/// vectors; for_each_view's for a struct).
template <class T, class F>
void tree_for_each(T& tree, F&& f) {
  if constexpr (Kokkos::is_view<std::decay_t<T>>::value) {
    f(tree);
  } else {
    detail::for_each_leaf(tree, f);
  }
}

/// \brief len(jax.tree_util.tree_leaves(tree)): the number of Views in `tree`.
template <class T>
std::size_t tree_leaf_count(const T& tree) {
  std::size_t n = 0;
  auto count = [&](const auto&) { ++n; };
  if constexpr (Kokkos::is_view<std::decay_t<T>>::value) {
    n = 1;
  } else {
    detail::for_each_leaf_mutable(tree, count);
  }
  return n;
}

/// \brief jax.tree_util.tree_leaves(tree) where every leaf is a V (or
/// converts to one, as a View of T* converts to a View of const T*): the
/// leaves in order, sharing their data.
template <class V, class T>
std::vector<V> tree_leaves(const T& tree) {
  std::vector<V> out;
  auto add = [&](const auto& leaf) {
    static_assert(std::is_convertible_v<std::decay_t<decltype(leaf)>, V>,
                  "kpmap::tree_leaves<V>: a leaf of this tree does not convert to V");
    out.push_back(leaf);
  };
  if constexpr (Kokkos::is_view<std::decay_t<T>>::value) {
    add(tree);
  } else {
    detail::for_each_leaf_mutable(tree, add);
  }
  return out;
}

}  // namespace kpmap
