// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Orbax's `save(path, tree)` and `restore(path, tree)` for a user's
/// tree of Views: every leaf a dataset of one checkpoint file (the format of
/// io/checkpoint.hpp: atomic, checksummed, readable at any rank count).
///
/// A leaf is whole on every rank (replicated), or, given an axis, this
/// rank's block of rows of a global array split over that axis (uneven
/// blocks too: the rows shard_map's P("data") or kpmap::shard gives), and
/// whole over the mesh's other axes. A restore at another rank count, or on
/// another mesh, gives each rank the block BlockPartition gives it now.
///
/// \code
///   kpmap::checkpoint::save("params.h5", params);              // replicated
///   kpmap::checkpoint::save("batch.h5", std::tie(x, y), "data");  // rows over "data"
///   Params p;                                                   // same structure
///   kpmap::checkpoint::restore("params.h5", p);                 // new Views, stored shapes
/// \endcode

#include <kpmap/base/detail/view_utils.hpp>
#include <kpmap/base/error.hpp>
#include <kpmap/collectives/tree.hpp>
#include <kpmap/io/checkpoint.hpp>
#include <kpmap/runtime/mesh.hpp>
#include <kpmap/spmd/pmap.hpp>
#include <kpmap/transport/host.hpp>

#include <Kokkos_Core.hpp>

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

namespace kpmap::checkpoint {

namespace detail {

/// The app a tree's file names, which restore expects.
inline const char* const tree_app = "kpmap::checkpoint::save";

/// "leaf_0003": a leaf's dataset, by its place in the tree's leaf order.
inline std::string leaf_name(std::size_t i) {
  char name[32];
  std::snprintf(name, sizeof(name), "leaf_%04zu", i);
  return name;
}

template <class Tree>
void save_tree(const std::string& path, const Tree& tree, const Axis* rows) {
  const Axis& all = Mesh::current().axis("devices");
  const std::size_t leaves = tree_leaf_count(tree);
  Metadata meta;
  meta.app = tree_app;
  meta.decomposition = rows == nullptr ? std::string("every leaf whole on every rank")
                                       : "the leaves' rows split over axis '" + rows->name() +
                                             "' of " + std::to_string(rows->size()) + " ranks";
  meta.integers = {{"tree_leaves", static_cast<std::int64_t>(leaves)}};
  const bool writes_rows =
      rows != nullptr && kpmap::transport::first_at_index(rows->index(), all.comm());
  Writer w(path, all.comm(), meta);
  std::size_t i = 0;
  auto each = [&](auto& leaf) {
    using V = std::decay_t<decltype(leaf)>;
    const std::string name = leaf_name(i++);
    if constexpr (V::rank == 0) {
      w.write_replicated(name, leaf);  // a number in a sharded tree: every rank's
    } else {
      if (rows == nullptr) {
        w.write_replicated(name, leaf);
        return;
      }
      // The blocks' rows over the axis, in its order: where this rank's begin.
      const std::uint64_t mine = leaf.extent(0);
      std::vector<std::uint64_t> counts(static_cast<std::size_t>(rows->size()));
      MPI_Allgather(&mine, 1, MPI_UINT64_T, counts.data(), 1, MPI_UINT64_T, rows->comm());
      std::size_t begin = 0, total = 0;
      for (int r = 0; r < rows->size(); ++r) {
        if (r < rows->index()) begin += counts[static_cast<std::size_t>(r)];
        total += counts[static_cast<std::size_t>(r)];
      }
      auto global = checkpoint::detail::extents_vector(leaf);
      global[0] = total;
      Block block = row_block(global, begin, leaf.extent(0));
      block.copy = !writes_rows;
      w.write(name, leaf, block);
    }
  };
  kpmap::detail::for_each_leaf_mutable(const_cast<Tree&>(tree), each);
  w.commit();
}

template <class Tree>
void restore_tree(const std::string& path, Tree& tree, const Axis* rows) {
  const Axis& all = Mesh::current().axis("devices");
  Reader r(path, all.comm(), tree_app);
  const std::size_t leaves = tree_leaf_count(tree);
  const auto stored = r.integer("tree_leaves");
  if (!stored || *stored != static_cast<std::int64_t>(leaves)) {
    throw InputError("restore " + path + ": the file holds a tree of " +
                         (stored ? std::to_string(*stored) : std::string("?")) +
                         " leaves, the tree given has " + std::to_string(leaves) +
                         " (restore into a tree of the structure that was saved)",
                     ErrorScope::all_ranks);
  }
  std::size_t i = 0;
  auto each = [&](auto& leaf) {
    using V = std::decay_t<decltype(leaf)>;
    static_assert(!std::is_same_v<typename V::array_layout, Kokkos::LayoutStride> &&
                      !V::memory_traits::is_unmanaged,
                  "kpmap::checkpoint::restore: a leaf is replaced by a new View, so its type must "
                  "own its memory (not a subview of LayoutStride or an unmanaged View)");
    const std::string name = leaf_name(i);
    const std::string label = leaf.label().empty() ? name : leaf.label();
    auto shape = r.shape(name);
    if (shape.size() != static_cast<std::size_t>(V::rank)) {
      throw InputError("restore " + path + ": leaf " + std::to_string(i) + " ('" + label +
                           "') was saved with rank " + std::to_string(shape.size()) +
                           ", the tree's View has rank " + std::to_string(V::rank),
                       ErrorScope::all_ranks);
    }
    kpmap::detail::Extents e;
    for (int d = 0; d < kpmap::detail::max_view_rank; ++d) {
      e[d] = d < static_cast<int>(shape.size()) ? shape[static_cast<std::size_t>(d)] : 1;
    }
    Block block = whole(shape);
    if constexpr (V::rank > 0) {
      if (rows != nullptr) {
        const BlockPartition part(shape[0], rows->size());
        e[0] = part.count(rows->index());
        block = row_block(shape, part.begin(rows->index()), e[0]);
      }
    }
    V fresh = kpmap::detail::allocate<V>(label, e);
    r.read(name, fresh, block);
    leaf = fresh;
    ++i;
  };
  kpmap::detail::for_each_leaf_mutable(tree, each);
}

}  // namespace detail

/// \brief Saves every leaf of `tree` (a View, a tuple, vector or array of
/// trees, or a struct with for_each_view), whole on every rank, as one
/// checkpoint file at `path` (written beside it and renamed: an earlier file
/// is intact until the new one is whole). Collective over the current mesh.
template <class Tree>
void save(const std::string& path, const Tree& tree) {
  detail::save_tree(path, tree, nullptr);
}
/// \brief Saves `tree` whose leaves are each rank's blocks of rows of global
/// arrays split over `rows_over` (blocks may be uneven; numbers are whole),
/// and whole over the mesh's other axes. Collective over the current mesh.
template <class Tree>
void save(const std::string& path, const Tree& tree, AxisRef rows_over) {
  detail::save_tree(path, tree, &*rows_over);
}

/// \brief Replaces every leaf of `tree` by a new View (of the leaf's type
/// and label) holding the saved array, whole on every rank. `tree` gives the
/// structure (a vector its length); the shapes come from the file.
/// \throws InputError (all ranks) naming the file and the leaf when the
/// leaf count, a leaf's rank or its element type differ from what was saved,
/// or the file is damaged. Collective over the current mesh.
template <class Tree>
void restore(const std::string& path, Tree& tree) {
  detail::restore_tree(path, tree, nullptr);
}
/// \brief As restore(path, tree), each rank given its block of rows of each
/// array over `rows_over` as BlockPartition splits them now (at any rank
/// count, whatever the count that saved it).
template <class Tree>
void restore(const std::string& path, Tree& tree, AxisRef rows_over) {
  detail::restore_tree(path, tree, &*rows_over);
}

}  // namespace kpmap::checkpoint
