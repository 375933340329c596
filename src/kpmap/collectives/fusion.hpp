// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief In-place reductions of one View, and of a whole tree of Views
/// fused into few messages: the machinery under psum, pmean, pmax and pmin.
///
/// Internal (namespace kpmap::detail) except for the fusion threshold. Small
/// leaves are packed into one pooled buffer and reduced in messages of at
/// most fusion_threshold() bytes; large contiguous leaves go on their own,
/// in place. Every function here is collective over its axis.
///
/// What is compiled where: a tree is described leaf by leaf (FusedLeaf: its
/// memory, extents and strides, and its element type's operations), and the
/// fused reduction itself is one function of the execution and memory space,
/// compiled once in kpmap::core for the default device; so are the
/// reductions of float and double Views of rank 1 to 4 there, alone or in a
/// tree (compiled_leaf). A file that reduces a tree compiles only the walk
/// over its leaves.

#include <kpmap/base/detail/mpi_datatype.hpp>
#include <kpmap/base/error.hpp>
#include <kpmap/collectives/buffers.hpp>
#include <kpmap/collectives/checked.hpp>
#include <kpmap/collectives/tree.hpp>
#include <kpmap/runtime/mesh.hpp>
#include <kpmap/transport/mpi_ops.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

namespace kpmap {

/// \brief Messages of a fused tree reduction are at most this many bytes
/// (default 64 MiB, or KPMAP_FUSION_THRESHOLD). Leaves at least this large
/// are reduced on their own, in place.
std::size_t fusion_threshold();
void set_fusion_threshold(std::size_t bytes);

namespace detail {

/// The step that completes an in-place reduction of one View.
template <class Exec, class V>
struct FinishReduce {
  Exec exec;
  V v;
  transport::MpiBuffer<value_t<V>, typename V::memory_space> b;
  bool direct;
  double after;
  bool done;          // nothing left to do (a one-rank axis)
  void operator()();  // out of the class: compiled once for the compiled leaves
};
template <class Exec, class V>
void FinishReduce<Exec, V>::operator()() {
  if (done) return;
  store(exec, b, v, direct);
  if (after != 1.0) scale(exec, v, after);
}

/// Starts an in-place reduction of v; returns the step that completes it.
/// `before`/`after` scale v locally (weights and means); 1 means no scaling.
template <class Exec, class V>
FinishReduce<Exec, V> start_reduce_view(const Exec& exec, const V& v, const Axis& axis, ReduceOp op,
                                        double before, double after, transport::Pending* pending) {
  using T = value_t<V>;
  require_kernel_ready<Exec, V>();
  if (checked_mode()) verify_signature(axis, signature_of(op_name(op), "x", v));
  if (axis.size() == 1) {
    // One rank: the reduction is the identity; only the scale factors remain.
    if (before * after != 1.0) scale(exec, v, before * after);
    return FinishReduce<Exec, V>{exec, v, {}, true, 1.0, true};
  }
  if (before != 1.0) scale(exec, v, before);
  const bool direct = usable_in_place(v, false);
  auto b = load(exec, v, false, own_mpi_op<T>(op));
  fence_before_mpi(exec);
  transport::allreduce(MPI_IN_PLACE, b.mpi, b.count, mpi_datatype<T>(), mpi_op<T>(op), axis.comm(),
                       pending);
  return FinishReduce<Exec, V>{exec, v, std::move(b), direct, after, false};
}

/// The Views whose reductions kpmap::core compiles once
/// (collectives/leaves_float.cpp, leaves_double.cpp): float and double, of
/// rank 1 to 4, in the default execution space's memory, any layout. A
/// caller's View is reduced as this unmanaged LayoutStride View of the same
/// elements: the same kernels over the same indices, compiled once instead
/// of once for every View type of every file that reduces one.
using LeafExec = Kokkos::DefaultExecutionSpace;
using LeafDevice = Kokkos::Device<LeafExec, LeafExec::memory_space>;
template <class T, int R>
using CompiledLeaf = Kokkos::View<typename dynamic_data<T, R>::type, Kokkos::LayoutStride,
                                  LeafDevice, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

template <class Exec, class V>
constexpr bool compiled_leaf() {
  using U = std::decay_t<V>;
  using T = typename U::value_type;
  constexpr bool element = std::is_same_v<T, float> || std::is_same_v<T, double>;
  return std::is_same_v<Exec, LeafExec> && std::is_same_v<typename U::device_type, LeafDevice> &&
         element && rank_v<U> >= 1 && rank_v<U> <= 4;
}

/// v as the View its compiled reduction takes, when there is one; else v.
template <class Exec, class V>
decltype(auto) as_leaf(const V& v) {
  if constexpr (compiled_leaf<Exec, V>()) {
    return CompiledLeaf<value_t<V>, rank_v<V>>(v);
  } else {
    return (v);
  }
}

/// One leaf of a fused reduction, its View type erased: where its elements
/// are and how they are laid out, and the operations for its element type,
/// rank and device (LeafOps). The reduction of a tree of any type is then
/// one function of the execution space and memory space (start_fused_leaves),
/// compiled once in kpmap::core for the default device; only the walk that
/// describes the leaves is compiled for each type of tree.
template <class Exec>
struct FusedLeaf;

template <class Exec>
struct LeafOps {
  /// dst[0, size) = factor * the leaf's elements (row-major order).
  void (*pack)(const Exec&, const FusedLeaf<Exec>&, void* dst, double factor);
  /// The leaf's elements = factor * src[0, size).
  void (*unpack)(const Exec&, const FusedLeaf<Exec>&, void* src, double factor);
  void (*scale)(const Exec&, const FusedLeaf<Exec>&, double factor);
  /// Starts the in-place reduction of the leaf on its own; returns its completion.
  std::function<void()> (*start_alone)(const Exec&, const FusedLeaf<Exec>&, const Axis&, ReduceOp,
                                       double before, double after, transport::Pending*);
  MPI_Datatype (*mpi_type)();
  MPI_Op (*mpi_op)(ReduceOp);
  /// Whether the MPI operation of a ReduceOp on these elements runs on the host.
  bool (*own_mpi_op)(ReduceOp);
  std::string (*type_text)();
};

template <class Exec>
struct FusedLeaf {
  void* data = nullptr;
  int rank = 0;
  Extents extents{};
  Extents strides{};
  std::size_t size = 0;
  std::size_t elem_size = 0;
  bool contiguous = false;
  const std::type_info* type = nullptr;
  const LeafOps<Exec>* ops = nullptr;
  std::size_t index = 0;  ///< its place in the tree, in for_each_leaf's order
  std::string label;      ///< the View's label, in checked mode only (for its messages)
};

/// The leaf as a View again: unmanaged, LayoutStride, of rank R on device D.
template <class T, int R, class D>
using LeafView = Kokkos::View<typename dynamic_data<T, R>::type, Kokkos::LayoutStride, D,
                              Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

template <class T, int R, class D, class Exec>
LeafView<T, R, D> leaf_view(const FusedLeaf<Exec>& leaf) {
  Kokkos::LayoutStride layout;
  for (int d = 0; d < R; ++d) {
    layout.dimension[d] = leaf.extents[d];
    layout.stride[d] = leaf.strides[d];
  }
  return LeafView<T, R, D>(static_cast<T*>(leaf.data), layout);
}

template <class Exec, class T, int R, class D>
void leaf_pack(const Exec& exec, const FusedLeaf<Exec>& leaf, void* dst, double factor) {
  using M = typename D::memory_space;
  flat_view_t<T, M> out(static_cast<T*>(dst), leaf.size);
  if (leaf.contiguous) {
    copy_scaled(exec, out, flat_view_t<T, M>(static_cast<T*>(leaf.data), leaf.size), factor);
  } else {
    pack(exec, leaf_view<T, R, D>(leaf), out);
    if (factor != 1.0) scale(exec, out, factor);
  }
}

template <class Exec, class T, int R, class D>
void leaf_unpack(const Exec& exec, const FusedLeaf<Exec>& leaf, void* src, double factor) {
  using M = typename D::memory_space;
  flat_view_t<T, M> in(static_cast<T*>(src), leaf.size);
  if (leaf.contiguous) {
    copy_scaled(exec, flat_view_t<T, M>(static_cast<T*>(leaf.data), leaf.size), in, factor);
  } else {
    const auto v = leaf_view<T, R, D>(leaf);
    unpack(exec, in, v);
    if (factor != 1.0) scale(exec, v, factor);
  }
}

template <class Exec, class T, int R, class D>
void leaf_scale(const Exec& exec, const FusedLeaf<Exec>& leaf, double factor) {
  scale(exec, leaf_view<T, R, D>(leaf), factor);
}

template <class Exec, class T, int R, class D>
std::function<void()> leaf_start_alone(const Exec& exec, const FusedLeaf<Exec>& leaf,
                                       const Axis& axis, ReduceOp op, double before, double after,
                                       transport::Pending* pending) {
  auto finish = start_reduce_view(exec, leaf_view<T, R, D>(leaf), axis, op, before, after, pending);
  auto holder = std::make_shared<decltype(finish)>(std::move(finish));
  return [holder] { (*holder)(); };
}

template <class Exec, class T, int R, class D>
inline const LeafOps<Exec> leaf_ops = {&leaf_pack<Exec, T, R, D>,
                                       &leaf_unpack<Exec, T, R, D>,
                                       &leaf_scale<Exec, T, R, D>,
                                       &leaf_start_alone<Exec, T, R, D>,
                                       &mpi_datatype<T>,
                                       &mpi_op<T>,
                                       &own_mpi_op<T>,
                                       &type_name<T>};

/// Describes one leaf of a tree (a non-const View) for start_fused_leaves.
template <class Exec, class V>
FusedLeaf<Exec> describe_leaf(const V& v) {
  using T = value_t<V>;
  constexpr int R = rank_v<V>;
  static_assert(!std::is_const_v<typename V::value_type>,
                "kpmap: a tree reduced in place needs non-const Views");
  require_kernel_ready<Exec, V>();
  FusedLeaf<Exec> leaf;
  leaf.data = v.data();
  leaf.rank = R;
  leaf.extents = extents_of(v);
  for (int d = 0; d < R; ++d) leaf.strides[d] = v.stride(d);
  leaf.size = v.size();
  leaf.elem_size = sizeof(T);
  leaf.contiguous = is_contiguous(v);
  leaf.type = &typeid(T);
  leaf.ops = &leaf_ops<Exec, T, R, typename V::device_type>;
  if (checked_mode()) leaf.label = v.label();
  return leaf;
}

/// Shared state of one fused reduction.
struct FusedState {
  std::vector<std::size_t> offsets;  // element offset of each fused leaf in the buffer
  std::vector<bool> alone;           // leaf reduced on its own (too large to fuse)
  std::size_t total = 0;             // fused elements
  void* buffer = nullptr;            // in the leaves' memory space
  std::shared_ptr<void> owner;       // the pooled lease behind `buffer`
  transport::StagingPool::Lease lease;
  void* mpi = nullptr;
  std::vector<std::function<void()>> alone_finish;
};

/// Starts a fused in-place reduction of `leaves`, of one element type in
/// memory space M: small leaves are packed into one pooled buffer (applying
/// `before` on the way), staged where MPI cannot take M, and reduced in
/// messages of at most fusion_threshold() bytes; large contiguous leaves
/// are reduced in place on their own. Returns the step that completes it:
/// it copies the buffer back from staging, unpacks it into the leaves
/// (applying `after`) and finishes the lone leaves.
template <class Exec, class M>
std::function<void()> start_fused_leaves(const Exec& exec, std::vector<FusedLeaf<Exec>> leaves,
                                         const Axis& axis, ReduceOp op, const char* opname,
                                         double before, double after, transport::Pending* pending) {
  if (leaves.empty()) return [] {};
  auto st = std::make_shared<FusedState>();
  // Shapes (text) only where they are used, in checked mode's signature: a
  // step outside checked mode builds no strings.
  const bool checked = checked_mode();
  std::vector<std::string> lines;
  for (const auto& leaf : leaves) {
    if (checked) {
      lines.push_back("leaf " + std::to_string(leaf.index) +
                      (leaf.label.empty() ? std::string() : " '" + leaf.label + "'") + " (" +
                      leaf.ops->type_text() + ")\t" + extents_string(leaf.extents, leaf.rank));
    }
    const bool alone = leaf.size * leaf.elem_size >= fusion_threshold() && leaf.contiguous;
    st->alone.push_back(alone);
    st->offsets.push_back(st->total);
    if (!alone) st->total += leaf.size;
  }
  if (axis.size() == 1) {
    // One rank: the reduction is the identity; only the scale factors remain.
    if (before * after != 1.0) {
      for (const auto& leaf : leaves) leaf.ops->scale(exec, leaf, before * after);
    }
    return [] {};
  }
  if (checked) {
    Signature sig;
    sig.op = opname;
    sig.arg = "tree of " + std::to_string(leaves.size()) + " leaves";
    sig.type = leaves[0].ops->type_text();
    sig.rank = 1;
    sig.extents[0] = st->total;
    std::string all_lines;
    for (const auto& l : lines) all_lines += l + "\n";
    sig.param = static_cast<long long>(std::hash<std::string>{}(all_lines)&0x7fffffffffffffffLL);
    verify_signature(axis, sig, &lines);
  }
  const std::size_t elem_size = leaves[0].elem_size;
  if (st->total > 0) {
    // A pooled buffer: a training step that reduces the same tree every
    // step allocates nothing once the pool has settled.
    auto lease = std::make_shared<typename transport::ScratchPool<M>::Lease>(
        transport::ScratchPool<M>::instance().acquire(st->total * elem_size));
    st->buffer = lease->data();
    st->owner = lease;
  }
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    const auto& leaf = leaves[i];
    if (st->alone[i]) {
      st->alone_finish.push_back(
          leaf.ops->start_alone(exec, leaf, axis, op, before, after, pending));
    } else {
      leaf.ops->pack(exec, leaf, static_cast<char*>(st->buffer) + st->offsets[i] * elem_size,
                     before);
    }
  }
  if (st->total == 0) {
    return [st] {
      for (auto& f : st->alone_finish) f();
    };
  }
  const std::size_t bytes = st->total * elem_size;
  if (transport::must_stage_for<M>(leaves[0].ops->own_mpi_op(op))) {
    st->lease = transport::StagingPool::instance().acquire(bytes);
    Kokkos::deep_copy(
        exec,
        flat_view_t<unsigned char, PinnedHostSpace>(static_cast<unsigned char*>(st->lease.data()),
                                                    bytes),
        flat_view_t<unsigned char, M>(static_cast<unsigned char*>(st->buffer), bytes));
    st->mpi = st->lease.data();
  } else {
    st->mpi = st->buffer;
  }
  fence_before_mpi(exec);
  const MPI_Datatype mpi_type = leaves[0].ops->mpi_type();
  const std::size_t chunk = std::max<std::size_t>(1, fusion_threshold() / elem_size);
  for (std::size_t off = 0; off < st->total; off += chunk) {
    transport::allreduce(MPI_IN_PLACE, static_cast<char*>(st->mpi) + off * elem_size,
                         std::min(chunk, st->total - off), mpi_type, leaves[0].ops->mpi_op(op),
                         axis.comm(), pending);
  }
  return [exec, st, after, elem_size, bytes, leaves = std::move(leaves)] {
    if (st->lease.data() != nullptr) {
      Kokkos::deep_copy(
          exec, flat_view_t<unsigned char, M>(static_cast<unsigned char*>(st->buffer), bytes),
          flat_view_t<unsigned char, PinnedHostSpace>(static_cast<unsigned char*>(st->lease.data()),
                                                      bytes));
    }
    for (std::size_t i = 0; i < leaves.size(); ++i) {
      if (st->alone[i]) continue;
      leaves[i].ops->unpack(exec, leaves[i],
                            static_cast<char*>(st->buffer) + st->offsets[i] * elem_size, after);
    }
    for (auto& f : st->alone_finish) f();
    // The buffer may be reused, and the staging lease returns to the pool.
    fence(exec, "kpmap: fused reduction complete");
  };
}

/// Whether `Exec` reaches the memory of every View of a tuple tree (nested
/// tuples too). Vectors and structs hold one space, checked elsewhere.
template <class Exec, class T, class = void>
struct tree_reachable : std::true_type {};
template <class Exec, class V>
struct tree_reachable<Exec, V, std::enable_if_t<Kokkos::is_view<V>::value>>
    : std::bool_constant<Kokkos::SpaceAccessibility<Exec, typename V::memory_space>::accessible> {};
template <class Exec, class... Ts>
struct tree_reachable<Exec, std::tuple<Ts...>>
    : std::bool_constant<(tree_reachable<Exec, std::decay_t<Ts>>::value && ...)> {};

/// Starts a fused in-place reduction of every leaf of `tree` (see
/// start_fused_leaves): a tree whose leaves mix element types (JAX's
/// pytrees of float32 and int32) is reduced in one message stream per
/// element type, in the order the types first appear. All leaves must live
/// in one memory space. Returns the step that completes it; the step holds a
/// copy of the tree when it can be copied (Views are handles), so a
/// non-blocking caller may pass a temporary such as std::make_tuple(a, b).
template <class Exec, class Tree>
std::function<void()> start_fused(const Exec& exec, Tree& tree, const Axis& axis, ReduceOp op,
                                  const char* opname, double before, double after,
                                  transport::Pending* pending) {
  using TreeSpace = typename tree_memory_space<std::decay_t<Tree>>::type;
  static_assert(Kokkos::SpaceAccessibility<Exec, TreeSpace>::accessible,
                "kpmap: this execution space cannot access the tree's memory space; pass an "
                "execution space that can (the Views' own: typename View::execution_space)");
  require_kernel_ready<Exec, TreeSpace>();
  // The leaves, grouped by element type in the order the types first appear.
  std::vector<std::vector<FusedLeaf<Exec>>> groups;
  const char* space = nullptr;
  std::size_t index = 0;
  auto note = [&](auto& leaf) {
    using V = std::decay_t<decltype(leaf)>;
    require_leaf_space<Tree, V>();
    const char* here = V::memory_space::name();
    if (space == nullptr) space = here;
    if (index == 0 && std::strcmp(here, TreeSpace::name()) != 0) {
      throw Error(std::string("kpmap::") + opname + ": leaf 0 of this tree is in " + here +
                  " but its type declares " + TreeSpace::name() +
                  " (`using memory_space`): the collective's kernels run there");
    }
    if (std::strcmp(here, space) != 0) {
      throw Error(std::string("kpmap::") + opname + ": every leaf of a tree must live in one " +
                  "memory space; leaf " + std::to_string(index) + " is in " + here +
                  " but leaf 0 in " + space);
    }
    ++index;
    if constexpr (tree_reachable<Exec, std::decay_t<Tree>>::value) {
      auto described = describe_leaf<Exec>(leaf);
      described.index = index - 1;
      for (auto& group : groups) {
        if (*group.front().type == *described.type) {
          group.push_back(described);
          return;
        }
      }
      groups.emplace_back(1, described);
    }
  };
  for_each_leaf(tree, note);
  if constexpr (!tree_reachable<Exec, std::decay_t<Tree>>::value) {
    // Leaves in several spaces, refused above; their kernels are never built.
    throw Error(std::string("kpmap::") + opname +
                ": a tree's leaves must live in one memory space");
  } else {
    std::vector<std::function<void()>> steps;
    for (auto& group : groups) {
      steps.push_back(start_fused_leaves<Exec, TreeSpace>(exec, std::move(group), axis, op, opname,
                                                          before, after, pending));
    }
    if constexpr (std::is_copy_constructible_v<std::remove_const_t<Tree>>) {
      return [steps = std::move(steps), copy = std::remove_const_t<Tree>(tree)] {
        for (const auto& step : steps) step();
      };
    } else {
      return [steps = std::move(steps)] {
        for (const auto& step : steps) step();
      };
    }
  }
}

// What kpmap::core compiles once (fusion.cpp, leaves_float.cpp,
// leaves_double.cpp): the fused reduction on the default device, and the
// reduction of each compiled leaf (float and double, rank 1 to 4) alone and
// in a tree.
extern template std::function<void()> start_fused_leaves<LeafExec, LeafExec::memory_space>(
    const LeafExec&, std::vector<FusedLeaf<LeafExec>>, const Axis&, ReduceOp, const char*, double,
    double, transport::Pending*);
#define KPMAP_FUSION_LEAF(PREFIX, T, R)                                                            \
  PREFIX template struct FinishReduce<LeafExec, CompiledLeaf<T, R>>;                               \
  PREFIX template FinishReduce<LeafExec, CompiledLeaf<T, R>> start_reduce_view(                    \
      const LeafExec&, const CompiledLeaf<T, R>&, const Axis&, ReduceOp, double, double,           \
      transport::Pending*);                                                                        \
  PREFIX template void leaf_pack<LeafExec, T, R, LeafDevice>(                                      \
      const LeafExec&, const FusedLeaf<LeafExec>&, void*, double);                                 \
  PREFIX template void leaf_unpack<LeafExec, T, R, LeafDevice>(                                    \
      const LeafExec&, const FusedLeaf<LeafExec>&, void*, double);                                 \
  PREFIX template void leaf_scale<LeafExec, T, R, LeafDevice>(const LeafExec&,                     \
                                                              const FusedLeaf<LeafExec>&, double); \
  PREFIX template std::function<void()> leaf_start_alone<LeafExec, T, R, LeafDevice>(              \
      const LeafExec&, const FusedLeaf<LeafExec>&, const Axis&, ReduceOp, double, double,          \
      transport::Pending*);

}  // namespace detail
}  // namespace kpmap
