// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief The arrays a training checkpoint holds, each a global array
/// whatever the sharding and the mesh, and where this rank's View lies in
/// each: a layer split over a mesh axis is this rank's box of it; state
/// split over the data axis is this rank's part as a flat range (of the
/// array, or of its box); a block that other ranks hold too is marked a
/// copy on all but one of them. So a checkpoint written under one sharding,
/// mesh and rank count restarts under any other.

#include <kpmap/io/checkpoint.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kpmap::train {

/// \brief A parameter array's name, shape and size, and, for a layer split
/// over a mesh axis, the whole array's extents and where this rank's block
/// starts (both empty otherwise).
struct SavedArray {
  std::string name;
  std::vector<std::size_t> extents;
  std::size_t size = 0;
  std::vector<std::size_t> whole, start;

  /// \brief This rank's box of the array (the whole array unless split).
  checkpoint::Block box() const {
    return whole.empty() ? checkpoint::whole(extents) : checkpoint::Block{whole, start, extents};
  }
};

namespace detail {
/// Whether a model names its parameter arrays' specs, slices() (Sequential
/// does: a layer split over a mesh axis says where its blocks lie).
template <class Model, class = void>
struct HasSlices : std::false_type {};
template <class Model>
struct HasSlices<Model, std::void_t<decltype(std::declval<const Model&>().slices())>>
    : std::true_type {};
}  // namespace detail

/// \brief The parameter arrays of `model`, in its for_each_named order.
template <class Model>
std::vector<SavedArray> saved_arrays(const Model& model) {
  std::vector<SavedArray> arrays;
  model.for_each_named(model.params(), [&](const std::string& name, const auto& v) {
    arrays.push_back({name, checkpoint::detail::extents_vector(v), v.size(), {}, {}});
  });
  if constexpr (detail::HasSlices<Model>::value) {
    for (std::size_t k = 0; k < arrays.size(); ++k) {
      arrays[k].whole = model.slices().at(k).spec.whole;
      arrays[k].start = model.slices().at(k).spec.start;
    }
  }
  return arrays;
}

/// \brief f(prefix + name, View, block, false) for each of `arrays` in
/// `part`, this rank's elements [lo, hi) of them laid end to end: flat
/// ranges of each array's box. `copy`: whether this rank's part of an
/// array that is not split is another rank's too (this rank differs from
/// that one only off the data axis), so that one writes it.
template <class T, class M, class F>
void for_each_in_part(const std::vector<SavedArray>& arrays, const std::string& prefix,
                      const Kokkos::View<T*, M>& part, std::pair<std::size_t, std::size_t> owned,
                      bool copy, F&& f) {
  const auto [lo, hi] = owned;
  std::size_t at = 0;  // the array's first element, end to end
  for (const SavedArray& a : arrays) {
    const std::size_t b = std::clamp(lo, at, at + a.size);
    const std::size_t e = std::clamp(hi, at, at + a.size);
    checkpoint::Block block = checkpoint::flat_range_in(a.box(), b - at, e - b);
    block.copy = a.whole.empty() && copy;
    f(prefix + a.name, Kokkos::subview(part, Kokkos::make_pair(b - lo, e - lo)), block, false);
    at += a.size;
  }
}

/// \brief f(prefix + name, View, block, replicated) for each array of
/// `tree` (model's parameters, or a tree of their shape): whole on every
/// rank (`replicated`), or a split layer's box, the same on every rank of
/// the data axis (`data_index`: this rank's there; all but index 0 mark it
/// a copy).
template <class Model, class Tree, class F>
void for_each_in_tree(const Model& model, const std::vector<SavedArray>& arrays,
                      const std::string& prefix, const Tree& tree, int data_index, F&& f) {
  std::size_t k = 0;
  model.for_each_named(tree, [&](const std::string& name, const auto& v) {
    const SavedArray& a = arrays.at(k++);
    checkpoint::Block block = a.box();
    block.copy = !a.whole.empty() && data_index != 0;
    f(prefix + name, v, block, a.whole.empty());
  });
}

}  // namespace kpmap::train
