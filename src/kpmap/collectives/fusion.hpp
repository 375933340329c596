#pragma once
/// \file
/// \brief In-place reductions of one View, and of a whole tree of Views
/// fused into few messages: the machinery under psum, pmean, pmax and pmin.
///
/// Internal (namespace kpmap::detail) except for the fusion threshold. Small
/// leaves are packed into one pooled buffer and reduced in messages of at
/// most fusion_threshold() bytes; large contiguous leaves go on their own,
/// in place. Every function here is collective over its axis.

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
  bool done;  // nothing left to do (a one-rank axis)
  void operator()() {
    if (done) return;
    store(exec, b, v, direct);
    if (after != 1.0) scale(exec, v, after);
  }
};

/// Starts an in-place reduction of v; returns the step that completes it.
/// `before`/`after` scale v locally (weights and means); 1 means no scaling.
template <class Exec, class V>
auto start_reduce(const Exec& exec, const V& v, const Axis& axis, ReduceOp op, double before,
                  double after, transport::Pending* pending) {
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
  auto b = load(exec, v, false);
  fence_before_mpi(exec);
  transport::allreduce(MPI_IN_PLACE, b.mpi, b.count, mpi_datatype<T>(), mpi_op(op), axis.comm(),
                       pending);
  return FinishReduce<Exec, V>{exec, v, std::move(b), direct, after, false};
}

/// Shared state of one fused reduction of a tree.
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

/// What pass 1 of a fused reduction learns of a tree's leaves: their one
/// element type and memory space, and (checked mode) their shapes as text.
struct FusedLeaves {
  std::string shapes;
  const std::type_info* type = nullptr;
  std::string (*type_text)() = nullptr;  // leaf 0's type, named on demand
  const char* space = nullptr;
  std::size_t elem_size = 0;
};

/// Pass 1: sizes, one element type and memory space, what fuses (into `st`).
/// \throws Error for leaves of several types or memory spaces.
template <class Tree>
FusedLeaves plan_fused(Tree& tree, const char* opname, bool checked, FusedState& st) {
  FusedLeaves f;
  for_each_leaf_indexed(tree, [&](auto& leaf, std::size_t i) {
    using V = std::decay_t<decltype(leaf)>;
    using T = value_t<V>;
    static_assert(!std::is_const_v<typename V::value_type>,
                  "kpmap: a tree reduced in place needs non-const Views");
    if (i == 0) {
      f.type = &typeid(T);
      f.type_text = &type_name<T>;
      f.space = V::memory_space::name();
      f.elem_size = sizeof(T);
    } else if (typeid(T) != *f.type || std::strcmp(V::memory_space::name(), f.space) != 0) {
      throw Error(std::string("kpmap::") + opname + ": every leaf of a tree must live in one " +
                  "memory space; leaf " + std::to_string(i) + " holds " + type_name<T>() + " in " +
                  V::memory_space::name() + " but leaf 0 holds " + f.type_text() + " in " +
                  f.space);
    }
    if (checked) f.shapes += extents_string(extents_of(leaf), rank_v<V>);
    const bool alone = leaf.size() * sizeof(T) >= fusion_threshold() && is_contiguous(leaf);
    st.alone.push_back(alone);
    st.offsets.push_back(st.total);
    if (!alone) st.total += leaf.size();
  });
  return f;
}

/// Pass 2: allocates the buffer (typed, at leaf 0), packs the fused leaves
/// (applying the `before` factor on the way) and starts the lone leaves.
template <class Exec, class Tree>
void pack_fused(const Exec& exec, Tree& tree, const Axis& axis, ReduceOp op, double before,
                double after, transport::Pending* pending, FusedState& st) {
  for_each_leaf_indexed(tree, [&](auto& leaf, std::size_t i) {
    using V = std::decay_t<decltype(leaf)>;
    using T = value_t<V>;
    using M = typename V::memory_space;
    if (i == 0 && st.total > 0) {
      // A pooled buffer: a training step that reduces the same tree every
      // step allocates nothing once the pool has settled.
      auto lease = std::make_shared<typename transport::ScratchPool<M>::Lease>(
          transport::ScratchPool<M>::instance().acquire(st.total * sizeof(T)));
      st.buffer = lease->data();
      st.owner = lease;
    }
    if (st.alone[i]) {
      auto finish = start_reduce(exec, leaf, axis, op, before, after, pending);
      auto holder = std::make_shared<decltype(finish)>(std::move(finish));
      st.alone_finish.emplace_back([holder] { (*holder)(); });
      return;
    }
    flat_view_t<T, M> dst(static_cast<T*>(st.buffer) + st.offsets[i], leaf.size());
    if (is_contiguous(leaf)) {
      copy_scaled(exec, dst, flat_view_t<T, M>(leaf.data(), leaf.size()), before);
    } else {
      pack(exec, leaf, dst);
      if (before != 1.0) scale(exec, dst, before);
    }
  });
}

/// Stages the fused buffer where MPI cannot take its memory (typed through
/// leaf 0) and starts its reduction in messages of at most
/// fusion_threshold() bytes.
template <class Exec, class Tree>
void reduce_fused(const Exec& exec, Tree& tree, const Axis& axis, ReduceOp op,
                  std::size_t elem_size, transport::Pending* pending, FusedState& st) {
  MPI_Datatype mpi_type = MPI_DATATYPE_NULL;
  for_each_leaf_indexed(tree, [&](auto& leaf, std::size_t i) {
    using V = std::decay_t<decltype(leaf)>;
    using T = value_t<V>;
    using M = typename V::memory_space;
    if (i != 0) return;
    mpi_type = mpi_datatype<T>();
    flat_view_t<T, M> buf(static_cast<T*>(st.buffer), st.total);
    if (transport::must_stage<M>()) {
      st.lease = transport::StagingPool::instance().acquire(st.total * sizeof(T));
      Kokkos::deep_copy(
          exec, flat_view_t<T, PinnedHostSpace>(static_cast<T*>(st.lease.data()), st.total), buf);
      st.mpi = st.lease.data();
    } else {
      st.mpi = st.buffer;
    }
  });
  fence_before_mpi(exec);
  const std::size_t chunk = std::max<std::size_t>(1, fusion_threshold() / elem_size);
  for (std::size_t off = 0; off < st.total; off += chunk) {
    transport::allreduce(MPI_IN_PLACE, static_cast<char*>(st.mpi) + off * elem_size,
                         std::min(chunk, st.total - off), mpi_type, mpi_op(op), axis.comm(),
                         pending);
  }
}

/// The completion step: copies the buffer back from staging, unpacks it into
/// the fused leaves (applying the `after` factor on the way), and finishes
/// the lone leaves.
template <class Exec, class Tree>
void complete_fused(const Exec& exec, Tree& tree, double after, FusedState& st) {
  for_each_leaf_indexed(tree, [&](auto& leaf, std::size_t i) {
    using V = std::decay_t<decltype(leaf)>;
    using T = value_t<V>;
    using M = typename V::memory_space;
    if (i == 0) {
      flat_view_t<T, M> buf(static_cast<T*>(st.buffer), st.total);
      if (st.lease.data() != nullptr) {
        Kokkos::deep_copy(
            exec, buf, flat_view_t<T, PinnedHostSpace>(static_cast<T*>(st.lease.data()), st.total));
      }
    }
    if (st.alone[i]) return;
    flat_view_t<T, M> src(static_cast<T*>(st.buffer) + st.offsets[i], leaf.size());
    if (is_contiguous(leaf)) {
      copy_scaled(exec, flat_view_t<T, M>(leaf.data(), leaf.size()), src, after);
    } else {
      unpack(exec, src, leaf);
      if (after != 1.0) scale(exec, leaf, after);
    }
  });
  for (auto& f : st.alone_finish) f();
  // The buffer may be reused, and the staging lease returns to the pool.
  fence(exec, "kpmap: fused reduction complete");
}

/// Starts a fused in-place reduction of every leaf of `tree`, whose leaves
/// share one element type: small leaves are packed into one buffer and
/// reduced in messages of at most fusion_threshold() bytes; large leaves are
/// reduced in place on their own. Returns the step that completes it.
/// `tree` must outlive that step.
template <class Exec, class Tree>
std::function<void()> start_fused_one_type(const Exec& exec, Tree& tree, const Axis& axis,
                                           ReduceOp op, const char* opname, double before,
                                           double after, transport::Pending* pending) {
  require_kernel_ready<Exec, typename tree_memory_space<std::decay_t<Tree>>::type>();
  auto st = std::make_shared<FusedState>();
  // Names and shapes (text) only where they are used: in a message, or in
  // checked mode's signature; a step outside checked mode builds no strings.
  const bool checked = checked_mode();
  const FusedLeaves leaves = plan_fused(tree, opname, checked, *st);
  if (st->alone.empty()) return std::function<void()>([] {});
  if (axis.size() == 1) {
    // One rank: the reduction is the identity; only the scale factors remain.
    if (before * after != 1.0) {
      auto rescale = [&](auto& leaf) { scale(exec, leaf, before * after); };
      for_each_leaf(tree, rescale);
    }
    return std::function<void()>([] {});
  }
  if (checked) {
    Signature sig;
    sig.op = opname;
    sig.arg = "tree of " + std::to_string(st->alone.size()) + " leaves";
    sig.type = leaves.type_text();
    sig.rank = 1;
    sig.extents[0] = st->total;
    sig.param =
        static_cast<long long>(std::hash<std::string>{}(leaves.shapes) & 0x7fffffffffffffffLL);
    verify_signature(axis, sig);
  }
  pack_fused(exec, tree, axis, op, before, after, pending, *st);
  if (st->total == 0) {
    return std::function<void()>([st] {
      for (auto& f : st->alone_finish) f();
    });
  }
  reduce_fused(exec, tree, axis, op, leaves.elem_size, pending, *st);
  // The completion keeps its own copy of the tree (Views are handles) when
  // the tree can be copied, so a non-blocking caller may pass a temporary
  // such as std::tie(a, b).
  if constexpr (std::is_copy_constructible_v<std::remove_const_t<Tree>>) {
    return std::function<void()>(
        [exec, st, after, copy = std::remove_const_t<Tree>(tree)]() mutable {
          complete_fused(exec, copy, after, *st);
        });
  } else {
    return std::function<void()>(
        [exec, st, after, &tree]() { complete_fused(exec, tree, after, *st); });
  }
}

/// The leaves of a tree with one element type (`type`), as a tree of its own:
/// a mixed tree is reduced as one such tree per element type.
template <class Tree>
struct LeavesOfType {
  using memory_space = typename tree_memory_space<std::decay_t<Tree>>::type;
  Tree tree;  // a copy when the tree is copyable (Views are handles), else a reference
  const std::type_info* type;
  template <class F>
  void for_each_view(F& f) {
    auto matching = [&](auto& leaf) {
      if (typeid(value_t<std::decay_t<decltype(leaf)>>) == *type) f(leaf);
    };
    for_each_leaf(tree, matching);
  }
};

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
/// start_fused_one_type): a tree whose leaves mix element types (JAX's
/// pytrees of float32 and int32) is reduced in one message stream per
/// element type, in the order the types first appear. All leaves must live
/// in one memory space.
template <class Exec, class Tree>
std::function<void()> start_fused(const Exec& exec, Tree& tree, const Axis& axis, ReduceOp op,
                                  const char* opname, double before, double after,
                                  transport::Pending* pending) {
  std::vector<const std::type_info*> types;
  const char* space = nullptr;
  std::size_t index = 0;
  using TreeSpace = typename tree_memory_space<std::decay_t<Tree>>::type;
  static_assert(Kokkos::SpaceAccessibility<Exec, TreeSpace>::accessible,
                "kpmap: this execution space cannot access the tree's memory space; pass an "
                "execution space that can (the Views' own: typename View::execution_space)");
  auto note_type = [&](auto& leaf) {
    using V = std::decay_t<decltype(leaf)>;
    require_leaf_space<Tree, V>();
    const std::type_info& t = typeid(value_t<V>);
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
    for (const auto* seen : types) {
      if (*seen == t) return;
    }
    types.push_back(&t);
  };
  for_each_leaf(tree, note_type);
  if constexpr (!tree_reachable<Exec, std::decay_t<Tree>>::value) {
    // Leaves in several spaces, refused above; their kernels are never built.
    throw Error(std::string("kpmap::") + opname +
                ": a tree's leaves must live in one memory space");
  } else {
    if (types.size() <= 1) {
      return start_fused_one_type(exec, tree, axis, op, opname, before, after, pending);
    }
    using Held = std::conditional_t<std::is_copy_constructible_v<std::remove_const_t<Tree>>,
                                    std::remove_const_t<Tree>, Tree&>;
    auto parts = std::make_shared<std::vector<LeavesOfType<Held>>>();
    parts->reserve(types.size());  // the parts stay where they are while the steps run
    std::vector<std::function<void()>> steps;
    for (const auto* t : types) {
      parts->push_back(LeavesOfType<Held>{tree, t});
      steps.push_back(
          start_fused_one_type(exec, parts->back(), axis, op, opname, before, after, pending));
    }
    return std::function<void()>([parts, steps = std::move(steps)]() {
      for (const auto& step : steps) step();
    });
  }
}

}  // namespace detail
}  // namespace kpmap
