#pragma once
/// \file
/// \brief JAX's collectives over a named mesh axis, on Kokkos Views, scalars
/// and trees of Views: psum, pmean, pmax, pmin, all_gather, all_to_all,
/// psum_scatter, ppermute, pbroadcast, with non-blocking forms.
///
/// Every function here is **collective over its axis**: every rank of the
/// axis must call it, in the same order, with the same element type and shape
/// (checked mode verifies this). Functions that take an execution space first
/// fence it before MPI reads a buffer; the overloads without one use the
/// View's default execution space instance.
///
/// Views may have rank 0 to 8, any layout, and may be non-contiguous subviews
/// (packed and unpacked by Kokkos kernels). How the bytes reach MPI is decided
/// inside (straight, or staged through pinned host memory); the API is the same.

#include <kpmap/detail/checked.hpp>
#include <kpmap/detail/kokkos_compat.hpp>
#include <kpmap/detail/mpi_datatype.hpp>
#include <kpmap/detail/view_utils.hpp>
#include <kpmap/error.hpp>
#include <kpmap/mesh.hpp>
#include <kpmap/request.hpp>
#include <kpmap/runtime.hpp>
#include <kpmap/transport/mpi_ops.hpp>
#include <kpmap/transport/staging_pool.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeindex>
#include <utility>
#include <vector>

namespace kpmap {

/// \brief This rank's weight in a pmean over uneven shards: the number of
/// samples behind its local value. pmean(x, axis, Weight{n}) returns
/// sum_r(n_r * x_r) / sum_r(n_r), the mean over all samples.
struct Weight {
  double value;
};

/// \brief Selects the tiled (concatenating) form of all_gather / psum_scatter
/// along dimension `dim`, as JAX's `tiled=True`.
struct Tiled {
  int dim = 0;
};

/// \brief A (source, destination) pair of axis indices for ppermute.
using PermutePair = std::pair<int, int>;

/// \brief Messages of a fused tree reduction are at most this many bytes
/// (default 64 MiB, or KPMAP_FUSION_THRESHOLD). Leaves at least this large
/// are reduced on their own, in place.
std::size_t fusion_threshold();
void set_fusion_threshold(std::size_t bytes);

namespace detail {

template <class T>
struct is_tuple : std::false_type {};
template <class... Ts>
struct is_tuple<std::tuple<Ts...>> : std::true_type {};
template <class T>
struct is_std_vector : std::false_type {};
template <class T, class A>
struct is_std_vector<std::vector<T, A>> : std::true_type {};

template <class T>
inline constexpr bool is_view_v = Kokkos::is_view<std::decay_t<T>>::value;

template <class M>
inline constexpr bool host_accessible_v =
    Kokkos::SpaceAccessibility<Kokkos::HostSpace, M>::accessible;

/// \brief Whether buffers in memory space M go through the staging pool.
template <class M>
bool must_stage() {
  const auto& g = Runtime::current().gpu_awareness();
  if (g.staging_always) return true;
  if constexpr (host_accessible_v<M>) {
    return false;
  } else {
    return !g.gpu_aware;
  }
}

/// \brief A flat, MPI-ready buffer of `count` elements in memory space M,
/// either aliasing a View's own memory or a packed copy, and when staging is
/// needed, its pinned host shadow (the memory MPI actually sees).
template <class T, class M>
struct FlatBuffer {
  flat_view_t<T, M> dev;
  Kokkos::View<T*, M> owned;
  transport::StagingPool::Lease lease;
  T* mpi = nullptr;
  std::size_t count = 0;

  bool staged() const { return lease.data() != nullptr; }
  flat_view_t<T, PinnedHostSpace> pinned() const {
    return flat_view_t<T, PinnedHostSpace>(static_cast<T*>(lease.data()), count);
  }
};

/// \brief A buffer of n elements of M: over `alias` when given, else freshly allocated.
template <class T, class M>
FlatBuffer<T, M> make_buffer(T* alias, std::size_t n) {
  FlatBuffer<T, M> b;
  b.count = n;
  if (alias != nullptr) {
    b.dev = flat_view_t<T, M>(alias, n);
  } else {
    b.owned = Kokkos::View<T*, M>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::collective::buffer"), n);
    b.dev = flat_view_t<T, M>(b.owned.data(), n);
  }
  if (must_stage<M>()) {
    b.lease = transport::StagingPool::instance().acquire(n * sizeof(T));
    b.mpi = static_cast<T*>(b.lease.data());
  } else {
    b.mpi = b.dev.data();
  }
  return b;
}

/// \brief Can MPI use v's memory as is? (Contiguous; in row-major order when
/// element order matters, as in gathers.)
template <class V>
bool usable_in_place(const V& v, bool order_matters) {
  return order_matters ? is_canonical(v) : is_contiguous(v);
}

template <class V>
using value_t = typename V::non_const_value_type;

/// \brief The MPI-ready image of v's elements (send side).
template <class Exec, class V>
FlatBuffer<value_t<V>, typename V::memory_space> load(const Exec& exec, const V& v,
                                                      bool order_matters) {
  using T = value_t<V>;
  const bool direct = usable_in_place(v, order_matters);
  auto b = make_buffer<T, typename V::memory_space>(direct ? const_cast<T*>(v.data()) : nullptr,
                                                    v.size());
  if (!direct) pack(exec, v, b.dev);
  if (b.staged()) Kokkos::deep_copy(exec, b.pinned(), b.dev);
  return b;
}

/// \brief After MPI wrote `b`, moves its elements into v (receive side).
template <class Exec, class B, class V>
void store(const Exec& exec, B& b, const V& v, bool direct) {
  if (b.staged()) Kokkos::deep_copy(exec, b.dev, b.pinned());
  if (!direct) unpack(exec, b.dev, v);
  // The pinned lease returns to the pool when b dies: the copy must be done.
  if (b.staged()) fence(exec, "kpmap: staged result copied back");
}

/// \brief Fence before MPI touches buffers written by kernels on `exec`.
template <class Exec>
void fence_before_mpi(const Exec& exec) {
  fence(exec, "kpmap: fence before MPI reads the buffers");
}

/// pmean divides: integer Views would truncate silently, so they are refused.
template <class X>
constexpr void require_mean_type() {
  if constexpr (is_view_v<X>) {
    static_assert(!std::is_integral_v<value_t<std::decay_t<X>>>,
                  "kpmap::pmean needs a floating-point or complex element type");
  }
}

// ---- reductions on one View ---------------------------------------------------

/// The step that completes an in-place reduction of one View.
template <class Exec, class V>
struct FinishReduce {
  Exec exec;
  V v;
  FlatBuffer<value_t<V>, typename V::memory_space> b;
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

/// The local (before, after) scale factors of a pmean, weighted or not.
/// Weighted: one extra allreduce of the weights (blocking).
inline std::pair<double, double> mean_factors(const Axis& axis, const Weight* w) {
  if (w == nullptr) return {1.0, 1.0 / axis.size()};
  double total = w->value;
  transport::allreduce(MPI_IN_PLACE, &total, 1, MPI_DOUBLE, MPI_SUM, axis.comm(), nullptr);
  if (!(total > 0)) {
    throw Error("kpmap::pmean: the weights over axis '" + axis.name() + "' sum to " +
                    std::to_string(total) + "; at least one rank needs a positive weight",
                exit_code::failure, ErrorScope::all_ranks);
  }
  return {w->value, 1.0 / total};
}

// ---- trees of Views --------------------------------------------------------------

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

/// \brief The reusable fusion buffer for element type T in memory space M
/// (blocking calls reuse it; it grows geometrically).
template <class T, class M>
Kokkos::View<T*, M>& fusion_buffer(std::size_t n) {
  static Kokkos::View<T*, M>* buffer = nullptr;
  if (buffer == nullptr) {
    buffer = new Kokkos::View<T*, M>();
    Runtime::at_finalize([] {
      delete buffer;
      buffer = nullptr;
    });
  }
  if (buffer->extent(0) < n) {
    *buffer =
        Kokkos::View<T*, M>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::fusion_buffer"),
                            std::max(n, 2 * buffer->extent(0)));
  }
  return *buffer;
}

/// Calls f(leaf, index) for every leaf of the tree.
template <class Tree, class F>
void for_each_leaf_indexed(Tree& tree, F&& f) {
  std::size_t i = 0;
  auto g = [&](auto& leaf) { f(leaf, i++); };
  for_each_leaf(tree, g);
}

/// Shared state of one fused reduction of a tree.
struct FusedState {
  std::vector<std::size_t> offsets;  // element offset of each fused leaf in the buffer
  std::vector<bool> alone;           // leaf reduced on its own (too large to fuse)
  std::size_t total = 0;             // fused elements
  void* buffer = nullptr;            // in the leaves' memory space
  std::shared_ptr<void> owner;       // keeps a non-reused buffer alive
  transport::StagingPool::Lease lease;
  void* mpi = nullptr;
  std::vector<std::function<void()>> alone_finish;
};

/// Starts a fused in-place reduction of every leaf of `tree`: small leaves
/// are packed into one buffer and reduced in messages of at most
/// fusion_threshold() bytes; large leaves are reduced in place on their own.
/// Returns the step that completes it. `tree` must outlive that step.
template <class Exec, class Tree>
std::function<void()> start_fused(const Exec& exec, Tree& tree, const Axis& axis, ReduceOp op,
                                  const char* opname, double before, double after,
                                  bool reuse_buffer, transport::Pending* pending) {
  auto st = std::make_shared<FusedState>();
  std::string type;
  std::string space;
  std::string shapes;
  std::size_t elem_size = 0;
  // Pass 1: sizes, one element type and memory space, what fuses.
  for_each_leaf_indexed(tree, [&](auto& leaf, std::size_t i) {
    using V = std::decay_t<decltype(leaf)>;
    using T = value_t<V>;
    static_assert(!std::is_const_v<typename V::value_type>,
                  "kpmap: a tree reduced in place needs non-const Views");
    const std::string t = type_name<T>();
    const std::string m = V::memory_space::name();
    if (i == 0) {
      type = t;
      space = m;
      elem_size = sizeof(T);
    } else if (t != type || m != space) {
      throw Error(std::string("kpmap::") + opname + ": every leaf of a tree must have one " +
                  "element type and memory space; leaf " + std::to_string(i) + " holds " + t +
                  " in " + m + " but leaf 0 holds " + type + " in " + space);
    }
    shapes += extents_string(extents_of(leaf), rank_v<V>);
    const bool alone = leaf.size() * sizeof(T) >= fusion_threshold() && is_contiguous(leaf);
    st->alone.push_back(alone);
    st->offsets.push_back(st->total);
    if (!alone) st->total += leaf.size();
  });
  if (st->alone.empty()) return std::function<void()>([] {});
  if (axis.size() == 1) {
    // One rank: the reduction is the identity; only the scale factors remain.
    if (before * after != 1.0) {
      auto rescale = [&](auto& leaf) { scale(exec, leaf, before * after); };
      for_each_leaf(tree, rescale);
    }
    return std::function<void()>([] {});
  }
  if (checked_mode()) {
    Signature sig;
    sig.op = opname;
    sig.arg = "tree of " + std::to_string(st->alone.size()) + " leaves";
    sig.type = type;
    sig.rank = 1;
    sig.extents[0] = st->total;
    sig.param = static_cast<long long>(std::hash<std::string>{}(shapes)&0x7fffffffffffffffLL);
    verify_signature(axis, sig);
  }
  // Pass 2: allocate the buffer (typed, at leaf 0), pack fused leaves, start
  // the lone leaves.
  for_each_leaf_indexed(tree, [&](auto& leaf, std::size_t i) {
    using V = std::decay_t<decltype(leaf)>;
    using T = value_t<V>;
    using M = typename V::memory_space;
    if (i == 0 && st->total > 0) {
      if (reuse_buffer) {
        st->buffer = fusion_buffer<T, M>(st->total).data();
      } else {
        auto b = std::make_shared<Kokkos::View<T*, M>>(
            Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::fusion_buffer"), st->total);
        st->buffer = b->data();
        st->owner = b;
      }
    }
    if (st->alone[i]) {
      auto finish = start_reduce(exec, leaf, axis, op, before, after, pending);
      auto holder = std::make_shared<decltype(finish)>(std::move(finish));
      st->alone_finish.emplace_back([holder] { (*holder)(); });
      return;
    }
    // Pack, applying the `before` factor on the way (one pass over the data).
    flat_view_t<T, M> dst(static_cast<T*>(st->buffer) + st->offsets[i], leaf.size());
    if (is_contiguous(leaf)) {
      copy_scaled(exec, dst, flat_view_t<T, M>(leaf.data(), leaf.size()), before);
    } else {
      pack(exec, leaf, dst);
      if (before != 1.0) scale(exec, dst, before);
    }
  });
  if (st->total == 0) {
    return std::function<void()>([st] {
      for (auto& f : st->alone_finish) f();
    });
  }
  // Stage and reduce the fused buffer (typed through leaf 0).
  MPI_Datatype mpi_type = MPI_DATATYPE_NULL;
  for_each_leaf_indexed(tree, [&](auto& leaf, std::size_t i) {
    using V = std::decay_t<decltype(leaf)>;
    using T = value_t<V>;
    using M = typename V::memory_space;
    if (i != 0) return;
    mpi_type = mpi_datatype<T>();
    flat_view_t<T, M> buf(static_cast<T*>(st->buffer), st->total);
    if (must_stage<M>()) {
      st->lease = transport::StagingPool::instance().acquire(st->total * sizeof(T));
      Kokkos::deep_copy(
          exec, flat_view_t<T, PinnedHostSpace>(static_cast<T*>(st->lease.data()), st->total), buf);
      st->mpi = st->lease.data();
    } else {
      st->mpi = st->buffer;
    }
  });
  fence_before_mpi(exec);
  const std::size_t chunk = std::max<std::size_t>(1, fusion_threshold() / elem_size);
  for (std::size_t off = 0; off < st->total; off += chunk) {
    transport::allreduce(MPI_IN_PLACE, static_cast<char*>(st->mpi) + off * elem_size,
                         std::min(chunk, st->total - off), mpi_type, mpi_op(op), axis.comm(),
                         pending);
  }
  // The completion step: copy back, scale, unpack, and finish the lone leaves.
  // It keeps its own copy of the tree (Views are handles) when the tree can
  // be copied, so a non-blocking caller may pass a temporary such as std::tie(a, b).
  auto complete = [exec, st, after](auto& tree) {
    for_each_leaf_indexed(tree, [&](auto& leaf, std::size_t i) {
      using V = std::decay_t<decltype(leaf)>;
      using T = value_t<V>;
      using M = typename V::memory_space;
      if (i == 0) {
        flat_view_t<T, M> buf(static_cast<T*>(st->buffer), st->total);
        if (st->lease.data() != nullptr) {
          Kokkos::deep_copy(
              exec, buf,
              flat_view_t<T, PinnedHostSpace>(static_cast<T*>(st->lease.data()), st->total));
        }
      }
      if (st->alone[i]) return;
      // Unpack, applying the `after` factor on the way.
      flat_view_t<T, M> src(static_cast<T*>(st->buffer) + st->offsets[i], leaf.size());
      if (is_contiguous(leaf)) {
        copy_scaled(exec, flat_view_t<T, M>(leaf.data(), leaf.size()), src, after);
      } else {
        unpack(exec, src, leaf);
        if (after != 1.0) scale(exec, leaf, after);
      }
    });
    for (auto& f : st->alone_finish) f();
    // The buffer may be reused, and the staging lease returns to the pool.
    fence(exec, "kpmap: fused reduction complete");
  };
  if constexpr (std::is_copy_constructible_v<std::remove_const_t<Tree>>) {
    return std::function<void()>(
        [complete, copy = std::remove_const_t<Tree>(tree)]() mutable { complete(copy); });
  } else {
    return std::function<void()>([complete, &tree]() { complete(tree); });
  }
}

template <class X>
struct default_exec {
  using type = Kokkos::DefaultExecutionSpace;
};
template <class X>
struct default_exec_view {
  using type = typename X::execution_space;
};

/// The execution space a View (or the first View of a tree) runs on.
template <class X>
using exec_of_t = typename std::conditional_t<is_view_v<X>, default_exec_view<std::decay_t<X>>,
                                              default_exec<X>>::type;

}  // namespace detail

// ===== psum, pmean, pmax, pmin ===================================================

namespace detail {

template <class T>
T reduce_scalar(T x, const Axis& axis, ReduceOp op) {
  if (checked_mode()) {
    Signature s;
    s.op = op_name(op);
    s.arg = "scalar";
    s.type = type_name<T>();
    verify_signature(axis, s);
  }
  transport::allreduce(MPI_IN_PLACE, &x, 1, mpi_datatype<T>(), mpi_op(op), axis.comm(), nullptr);
  return x;
}

template <class Exec, class X>
void reduce_inplace(const Exec& exec, X& x, const Axis& axis, ReduceOp op, double before,
                    double after) {
  if constexpr (is_view_v<X>) {
    using M = typename std::decay_t<X>::memory_space;
    if (before == 1.0 && axis.size() > 1 && !checked_mode() && is_contiguous(x) &&
        !must_stage<M>()) {
      // The common case, with nothing between the caller and MPI: a
      // contiguous View that MPI can read where it is.
      fence_before_mpi(exec);
      transport::allreduce(MPI_IN_PLACE, x.data(), x.size(), mpi_datatype<value_t<X>>(), mpi_op(op),
                           axis.comm(), nullptr);
      if (after != 1.0) scale(exec, x, after);
      return;
    }
    start_reduce(exec, x, axis, op, before, after, nullptr)();
  } else {
    start_fused(exec, x, axis, op, op_name(op), before, after, true, nullptr)();
  }
}

template <class Exec, class X>
Request reduce_start(const Exec& exec, X& x, const Axis& axis, ReduceOp op, double before,
                     double after) {
  transport::Pending pending;
  if constexpr (is_view_v<X>) {
    auto finish = start_reduce(exec, x, axis, op, before, after, &pending);
    return make_request(std::move(pending), std::move(finish));
  } else {
    auto finish = start_fused(exec, x, axis, op, op_name(op), before, after, false, &pending);
    return make_request(std::move(pending), std::move(finish));
  }
}

template <class Exec, class V>
owning_like_t<V> copy_of(const Exec& exec, const V& x, const char* label) {
  auto y = allocate<owning_like_t<V>>(label, extents_of(x));
  Kokkos::deep_copy(exec, y, x);
  return y;
}

template <class E>
inline constexpr bool is_exec_v = Kokkos::is_execution_space<std::decay_t<E>>::value;

/// A reduced copy of x (out-of-place psum/pmax/pmin, or pmean when `mean`).
template <class Exec, class V>
owning_like_t<V> reduced_copy(const Exec& exec, const V& x, const Axis& axis, ReduceOp op,
                              bool mean) {
  auto y = copy_of(exec, x, mean ? "kpmap::pmean" : op_name(op));
  reduce_inplace(exec, y, axis, op, 1.0, mean ? 1.0 / axis.size() : 1.0);
  return y;
}

}  // namespace detail

// -- scalars: return the reduction over the axis --------------------------------

/// \brief Sum of `x` over `axis`. Collective over the axis.
template <class T, std::enable_if_t<detail::is_mpi_element_v<T>, int> = 0>
T psum(T x, AxisRef axis) {
  return detail::reduce_scalar(x, *axis, detail::ReduceOp::sum);
}
/// \brief Maximum of `x` over `axis`. Collective over the axis.
template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
T pmax(T x, AxisRef axis) {
  return detail::reduce_scalar(x, *axis, detail::ReduceOp::max);
}
/// \brief Minimum of `x` over `axis`. Collective over the axis.
template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
T pmin(T x, AxisRef axis) {
  return detail::reduce_scalar(x, *axis, detail::ReduceOp::min);
}
/// \brief Mean of `x` over the ranks of `axis`. Collective over the axis.
template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
T pmean(T x, AxisRef axis) {
  return detail::reduce_scalar(x, *axis, detail::ReduceOp::sum) / static_cast<T>(axis->size());
}
/// \brief Weighted mean sum(w_r x_r) / sum(w_r) over `axis`: the global mean
/// when x_r is a mean over w_r local samples (uneven shards). One message.
template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
T pmean(T x, AxisRef axis, Weight w) {
  double pair[2] = {static_cast<double>(x) * w.value, w.value};
  if (checked_mode()) {
    detail::Signature s;
    s.op = "pmean";
    s.arg = "weighted scalar";
    s.type = detail::type_name<T>();
    detail::verify_signature(*axis, s);
  }
  transport::allreduce(MPI_IN_PLACE, pair, 2, MPI_DOUBLE, MPI_SUM, axis->comm(), nullptr);
  if (!(pair[1] > 0)) {
    throw Error("kpmap::pmean: the weights over axis '" + axis->name() + "' sum to " +
                    std::to_string(pair[1]) + "; at least one rank needs a positive weight",
                exit_code::failure, ErrorScope::all_ranks);
  }
  return static_cast<T>(pair[0] / pair[1]);
}

// -- Views and trees, in place ----------------------------------------------------

/// \brief Replaces every element of `x` (a View or a tree of Views) by its sum
/// over `axis`. A tree's leaves travel fused in few messages. Collective.
template <class Exec, class X, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
void psum_inplace(const Exec& exec, X&& x, AxisRef axis) {
  detail::reduce_inplace(exec, x, *axis, detail::ReduceOp::sum, 1.0, 1.0);
}
template <class Exec, class X, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
void pmax_inplace(const Exec& exec, X&& x, AxisRef axis) {
  detail::reduce_inplace(exec, x, *axis, detail::ReduceOp::max, 1.0, 1.0);
}
template <class Exec, class X, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
void pmin_inplace(const Exec& exec, X&& x, AxisRef axis) {
  detail::reduce_inplace(exec, x, *axis, detail::ReduceOp::min, 1.0, 1.0);
}
/// \brief Replaces `x` by its mean over the ranks of `axis` (floating point).
template <class Exec, class X, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
void pmean_inplace(const Exec& exec, X&& x, AxisRef axis) {
  detail::require_mean_type<X>();
  const auto [before, after] = detail::mean_factors(*axis, nullptr);
  detail::reduce_inplace(exec, x, *axis, detail::ReduceOp::sum, before, after);
}
/// \brief Replaces `x` by sum_r(w_r x_r) / sum_r(w_r): the mean over all
/// samples when x_r is the mean of w_r local samples (uneven shards).
template <class Exec, class X, std::enable_if_t<detail::is_exec_v<Exec>, int> = 0>
void pmean_inplace(const Exec& exec, X&& x, AxisRef axis, Weight w) {
  detail::require_mean_type<X>();
  const auto [before, after] = detail::mean_factors(*axis, &w);
  detail::reduce_inplace(exec, x, *axis, detail::ReduceOp::sum, before, after);
}

template <class X, std::enable_if_t<!detail::is_exec_v<X>, int> = 0>
void psum_inplace(X&& x, AxisRef axis) {
  psum_inplace(detail::exec_of_t<std::decay_t<X>>{}, x, axis);
}
template <class X, std::enable_if_t<!detail::is_exec_v<X>, int> = 0>
void pmax_inplace(X&& x, AxisRef axis) {
  pmax_inplace(detail::exec_of_t<std::decay_t<X>>{}, x, axis);
}
template <class X, std::enable_if_t<!detail::is_exec_v<X>, int> = 0>
void pmin_inplace(X&& x, AxisRef axis) {
  pmin_inplace(detail::exec_of_t<std::decay_t<X>>{}, x, axis);
}
template <class X, std::enable_if_t<!detail::is_exec_v<X>, int> = 0>
void pmean_inplace(X&& x, AxisRef axis) {
  pmean_inplace(detail::exec_of_t<std::decay_t<X>>{}, x, axis);
}
template <class X, std::enable_if_t<!detail::is_exec_v<X>, int> = 0>
void pmean_inplace(X&& x, AxisRef axis, Weight w) {
  pmean_inplace(detail::exec_of_t<std::decay_t<X>>{}, x, axis, w);
}

// -- Views, out of place: a new View holds the result -----------------------------

/// \brief A new View holding the sum of `x` over `axis`. Collective.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
auto psum(const Exec& exec, const V& x, AxisRef axis) {
  return detail::reduced_copy(exec, x, *axis, detail::ReduceOp::sum, false);
}
/// \brief A new View holding the maximum of `x` over `axis`. Collective.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
auto pmax(const Exec& exec, const V& x, AxisRef axis) {
  return detail::reduced_copy(exec, x, *axis, detail::ReduceOp::max, false);
}
/// \brief A new View holding the minimum of `x` over `axis`. Collective.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
auto pmin(const Exec& exec, const V& x, AxisRef axis) {
  return detail::reduced_copy(exec, x, *axis, detail::ReduceOp::min, false);
}
/// \brief A new View holding the mean of `x` over the ranks of `axis`. Collective.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
auto pmean(const Exec& exec, const V& x, AxisRef axis) {
  detail::require_mean_type<V>();
  return detail::reduced_copy(exec, x, *axis, detail::ReduceOp::sum, true);
}
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
auto psum(const V& x, AxisRef axis) {
  return psum(typename V::execution_space{}, x, axis);
}
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
auto pmax(const V& x, AxisRef axis) {
  return pmax(typename V::execution_space{}, x, axis);
}
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
auto pmin(const V& x, AxisRef axis) {
  return pmin(typename V::execution_space{}, x, axis);
}
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
auto pmean(const V& x, AxisRef axis) {
  return pmean(typename V::execution_space{}, x, axis);
}

// -- non-blocking, in place ---------------------------------------------------------

/// \brief Starts psum_inplace; the result is in `x` once the Request completes.
/// A tree object must outlive the Request. Collective (every rank starts it
/// in the same order).
template <class X>
Request ipsum(X&& x, AxisRef axis) {
  return detail::reduce_start(detail::exec_of_t<std::decay_t<X>>{}, x, *axis, detail::ReduceOp::sum,
                              1.0, 1.0);
}
template <class X>
Request ipmax(X&& x, AxisRef axis) {
  return detail::reduce_start(detail::exec_of_t<std::decay_t<X>>{}, x, *axis, detail::ReduceOp::max,
                              1.0, 1.0);
}
template <class X>
Request ipmin(X&& x, AxisRef axis) {
  return detail::reduce_start(detail::exec_of_t<std::decay_t<X>>{}, x, *axis, detail::ReduceOp::min,
                              1.0, 1.0);
}
template <class X>
Request ipmean(X&& x, AxisRef axis) {
  detail::require_mean_type<X>();
  const auto [before, after] = detail::mean_factors(*axis, nullptr);
  return detail::reduce_start(detail::exec_of_t<std::decay_t<X>>{}, x, *axis, detail::ReduceOp::sum,
                              before, after);
}
template <class X>
Request ipmean(X&& x, AxisRef axis, Weight w) {
  const auto [before, after] = detail::mean_factors(*axis, &w);
  return detail::reduce_start(detail::exec_of_t<std::decay_t<X>>{}, x, *axis, detail::ReduceOp::sum,
                              before, after);
}

// ===== all_gather, all_to_all, psum_scatter, ppermute, pbroadcast ==================

namespace detail {

template <class V>
using stacked_t =
    owning_view_t<value_t<V>, rank_v<V> + 1, typename V::array_layout, typename V::memory_space>;
template <class V>
using dropped_t = owning_view_t<value_t<V>, (rank_v<V> > 0 ? rank_v<V> - 1 : 0),
                                typename V::array_layout, typename V::memory_space>;

inline void require_dim(const char* op, int dim, int rank) {
  if (dim < 0 || dim >= rank) {
    throw Error(std::string("kpmap::") + op + ": dimension " + std::to_string(dim) +
                " does not exist in a View of rank " + std::to_string(rank));
  }
}

inline void require_divisible(const char* op, const Axis& axis, int dim, std::size_t extent) {
  if (extent % static_cast<std::size_t>(axis.size()) != 0) {
    throw Error(std::string("kpmap::") + op + ": dimension " + std::to_string(dim) +
                " has extent " + std::to_string(extent) + ", which the " +
                std::to_string(axis.size()) + " ranks of axis '" + axis.name() +
                "' cannot split evenly");
  }
}

/// Copies the staged result back, unpacks when needed, and fences before the
/// buffers (and their pinned leases) are released.
template <class Exec, class B, class Unpack>
void complete_receive(const Exec& exec, B& recv, bool staged_send, Unpack&& unpack_fn) {
  if (recv.staged()) Kokkos::deep_copy(exec, recv.dev, recv.pinned());
  unpack_fn();
  if (recv.staged() || staged_send) fence(exec, "kpmap: staged result copied back");
}

template <class Exec, class V, class Out>
auto start_all_gather(const Exec& exec, const V& x, const Axis& axis, bool stacked, int dim,
                      const Out& out, transport::Pending* pending) {
  using T = value_t<V>;
  if (checked_mode()) {
    verify_signature(axis, signature_of(stacked ? "all_gather" : "all_gather(tiled)", "x", x, dim));
  }
  auto send = load(exec, x, true);
  const bool direct = (stacked || dim == 0) && is_canonical(out);
  auto recv = make_buffer<T, typename V::memory_space>(direct ? out.data() : nullptr, out.size());
  fence_before_mpi(exec);
  transport::allgather(send.mpi, recv.mpi, x.size(), mpi_datatype<T>(), axis.comm(), pending);
  const Extents chunk = extents_of(x);
  return [exec, out, send = std::move(send), recv = std::move(recv), direct, chunk, dim,
          stacked]() mutable {
    complete_receive(exec, recv, send.staged(), [&] {
      if (!direct) unpack_blocks(exec, recv.dev, chunk, rank_v<V>, dim, stacked, out);
    });
  };
}

/// Sends p blocks of x split along `split` (block j to rank j) and returns the
/// loaded send buffer.
template <class Exec, class V>
auto load_blocks(const Exec& exec, const V& x, int split, int p) {
  using T = value_t<V>;
  const bool direct = split == 0 && is_canonical(x);
  auto send = make_buffer<T, typename V::memory_space>(direct ? const_cast<T*>(x.data()) : nullptr,
                                                       x.size());
  if (!direct) pack_blocks(exec, x, split, p, send.dev);
  if (send.staged()) Kokkos::deep_copy(exec, send.pinned(), send.dev);
  return send;
}

template <class Exec, class V, class Out>
auto start_all_to_all(const Exec& exec, const V& x, const Axis& axis, int split, int concat,
                      const Out& out, transport::Pending* pending) {
  using T = value_t<V>;
  if (checked_mode()) {
    verify_signature(axis, signature_of("all_to_all", "x", x, split * 16 + concat));
  }
  const int p = axis.size();
  auto send = load_blocks(exec, x, split, p);
  const bool direct = concat == 0 && is_canonical(out);
  auto recv = make_buffer<T, typename V::memory_space>(direct ? out.data() : nullptr, out.size());
  fence_before_mpi(exec);
  Extents chunk = extents_of(x);
  chunk[split] /= p;
  transport::alltoall(send.mpi, recv.mpi, product(chunk, rank_v<V>), mpi_datatype<T>(), axis.comm(),
                      pending);
  return
      [exec, out, send = std::move(send), recv = std::move(recv), direct, chunk, concat]() mutable {
        complete_receive(exec, recv, send.staged(), [&] {
          if (!direct) unpack_blocks(exec, recv.dev, chunk, rank_v<V>, concat, false, out);
        });
      };
}

template <class Exec, class V, class Out>
auto start_psum_scatter(const Exec& exec, const V& x, const Axis& axis, int dim, bool tiled,
                        const Out& out, transport::Pending* pending) {
  using T = value_t<V>;
  if (checked_mode()) {
    verify_signature(axis,
                     signature_of(tiled ? "psum_scatter(tiled)" : "psum_scatter", "x", x, dim));
  }
  auto send = load_blocks(exec, x, dim, axis.size());
  const bool direct = is_canonical(out);
  auto recv = make_buffer<T, typename V::memory_space>(direct ? out.data() : nullptr, out.size());
  fence_before_mpi(exec);
  transport::reduce_scatter_block(send.mpi, recv.mpi, out.size(), mpi_datatype<T>(), MPI_SUM,
                                  axis.comm(), pending);
  return [exec, out, send = std::move(send), recv = std::move(recv), direct]() mutable {
    // Block order equals the output's row-major order (the scattered
    // dimension has extent 1 in a block, or is dropped).
    complete_receive(exec, recv, send.staged(), [&] {
      if (!direct) unpack(exec, recv.dev, out);
    });
  };
}

/// Validates ppermute pairs and returns (destination, source) for this rank,
/// MPI_PROC_NULL where there is none.
inline std::pair<int, int> permute_partners(const Axis& axis,
                                            const std::vector<PermutePair>& pairs) {
  const int p = axis.size();
  std::vector<int> seen_src(p, 0), seen_dst(p, 0);
  int dest = MPI_PROC_NULL;
  int source = MPI_PROC_NULL;
  for (const auto& [s, d] : pairs) {
    if (s < 0 || s >= p || d < 0 || d >= p) {
      throw Error("kpmap::ppermute: pair (" + std::to_string(s) + ", " + std::to_string(d) +
                  ") is outside axis '" + axis.name() + "' of size " + std::to_string(p));
    }
    if (seen_src[s]++ || seen_dst[d]++) {
      throw Error("kpmap::ppermute: axis index " + std::to_string(seen_src[s] > 1 ? s : d) +
                  " appears twice as a " + (seen_src[s] > 1 ? "source" : "destination") +
                  "; a permutation sends from and to each index at most once");
    }
    if (s == axis.index()) dest = d;
    if (d == axis.index()) source = s;
  }
  return {dest, source};
}

inline constexpr int ppermute_tag = 0x6b70;

template <class Exec, class V, class Out>
auto start_ppermute(const Exec& exec, const V& x, const Axis& axis,
                    const std::vector<PermutePair>& pairs, const Out& out,
                    transport::Pending* pending) {
  using T = value_t<V>;
  if (checked_mode()) {
    long long h = 0;
    for (const auto& [s, d] : pairs) h = h * 1000003LL + s * 1009LL + d + 1;
    verify_signature(axis, signature_of("ppermute", "x", x, h & 0x7fffffffffffLL));
  }
  const auto [dest, source] = permute_partners(axis, pairs);
  auto send = load(exec, x, true);
  const bool direct = is_canonical(out);
  auto recv = make_buffer<T, typename V::memory_space>(direct ? out.data() : nullptr, out.size());
  fence_before_mpi(exec);
  transport::sendrecv(send.mpi, recv.mpi, x.size(), mpi_datatype<T>(), dest, source, ppermute_tag,
                      axis.comm(), pending);
  const bool receives = source != MPI_PROC_NULL;
  return [exec, out, send = std::move(send), recv = std::move(recv), direct, receives]() mutable {
    if (!receives) {
      // As in JAX: a rank that no pair sends to gets zeros.
      Kokkos::deep_copy(exec, out, T{});
      if (send.staged()) fence(exec, "kpmap: ppermute send complete");
      return;
    }
    complete_receive(exec, recv, send.staged(), [&] {
      if (!direct) unpack(exec, recv.dev, out);
    });
  };
}

template <class Exec, class V>
auto start_pbroadcast(const Exec& exec, const V& x, const Axis& axis, int root,
                      transport::Pending* pending) {
  using T = value_t<V>;
  if (root < 0 || root >= axis.size()) {
    throw Error("kpmap::pbroadcast: root " + std::to_string(root) + " is outside axis '" +
                axis.name() + "' of size " + std::to_string(axis.size()));
  }
  if (checked_mode()) verify_signature(axis, signature_of("pbroadcast", "x", x, root));
  const bool direct = usable_in_place(x, false);
  auto b = load(exec, x, false);
  fence_before_mpi(exec);
  transport::bcast(b.mpi, b.count, mpi_datatype<T>(), root, axis.comm(), pending);
  return [exec, x, b = std::move(b), direct]() mutable { store(exec, b, x, direct); };
}

/// The shape of an untiled psum_scatter result: x without dimension `dim`,
/// whose extent must equal the axis size.
template <class V>
Extents scatter_extents(const V& x, const Axis& axis, int dim) {
  static_assert(rank_v<V> >= 1, "psum_scatter needs a View of rank 1 or more");
  require_dim("psum_scatter", dim, rank_v<V>);
  if (x.extent(dim) != static_cast<std::size_t>(axis.size())) {
    throw Error("kpmap::psum_scatter: dimension " + std::to_string(dim) + " has extent " +
                std::to_string(x.extent(dim)) + " but axis '" + axis.name() + "' has " +
                std::to_string(axis.size()) + " ranks (use Tiled{dim} to split it in blocks)");
  }
  Extents e{};
  const auto xe = extents_of(x);
  for (int d = 0, k = 0; d < max_view_rank; ++d) {
    if (d != dim) e[k++] = xe[d];
  }
  e[max_view_rank - 1] = 1;
  return e;
}

template <class V>
Extents stacked_extents(const V& x, int p) {
  Extents e;
  e[0] = static_cast<std::size_t>(p);
  for (int d = 0; d + 1 < max_view_rank; ++d) e[d + 1] = d < rank_v<V> ? x.extent(d) : 1;
  return e;
}

}  // namespace detail

/// \brief Gathers `x` from every rank of `axis`, stacked along a new leading
/// dimension: result(r, ...) = x on axis rank r. Collective.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
detail::stacked_t<V> all_gather(const Exec& exec, const V& x, AxisRef axis) {
  static_assert(detail::rank_v<V> < detail::max_view_rank,
                "all_gather adds a dimension: the input rank must be below 8");
  auto out = detail::allocate<detail::stacked_t<V>>("kpmap::all_gather",
                                                    detail::stacked_extents(x, axis->size()));
  detail::start_all_gather(exec, x, *axis, true, 0, out, nullptr)();
  return out;
}

/// \brief Gathers `x` from every rank of `axis`, concatenated along dimension
/// `tiled.dim` (JAX's tiled=True). Collective.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
detail::owning_like_t<V> all_gather(const Exec& exec, const V& x, AxisRef axis, Tiled tiled) {
  detail::require_dim("all_gather", tiled.dim, detail::rank_v<V>);
  auto e = detail::extents_of(x);
  e[tiled.dim] *= axis->size();
  auto out = detail::allocate<detail::owning_like_t<V>>("kpmap::all_gather", e);
  detail::start_all_gather(exec, x, *axis, false, tiled.dim, out, nullptr)();
  return out;
}

/// \brief Splits dimension `split_dim` of `x` into axis-size blocks, sends block
/// j to axis rank j, and concatenates the received blocks along `concat_dim`
/// (JAX's all_to_all). Collective.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
detail::owning_like_t<V> all_to_all(const Exec& exec, const V& x, AxisRef axis, int split_dim,
                                    int concat_dim) {
  detail::require_dim("all_to_all", split_dim, detail::rank_v<V>);
  detail::require_dim("all_to_all", concat_dim, detail::rank_v<V>);
  detail::require_divisible("all_to_all", *axis, split_dim, x.extent(split_dim));
  auto e = detail::extents_of(x);
  e[split_dim] /= axis->size();
  e[concat_dim] *= axis->size();
  auto out = detail::allocate<detail::owning_like_t<V>>("kpmap::all_to_all", e);
  detail::start_all_to_all(exec, x, *axis, split_dim, concat_dim, out, nullptr)();
  return out;
}

/// \brief Sums `x` over `axis` and gives axis rank j slice j of dimension
/// `dim` (whose extent must equal the axis size); the result drops that
/// dimension (JAX's psum_scatter). Collective.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
detail::dropped_t<V> psum_scatter(const Exec& exec, const V& x, AxisRef axis, int dim = 0) {
  auto out = detail::allocate<detail::dropped_t<V>>("kpmap::psum_scatter",
                                                    detail::scatter_extents(x, *axis, dim));
  detail::start_psum_scatter(exec, x, *axis, dim, false, out, nullptr)();
  return out;
}

/// \brief Sums `x` over `axis` and gives axis rank j block j of dimension
/// `tiled.dim` (JAX's psum_scatter with tiled=True). Collective.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
detail::owning_like_t<V> psum_scatter(const Exec& exec, const V& x, AxisRef axis, Tiled tiled) {
  detail::require_dim("psum_scatter", tiled.dim, detail::rank_v<V>);
  detail::require_divisible("psum_scatter", *axis, tiled.dim, x.extent(tiled.dim));
  auto e = detail::extents_of(x);
  e[tiled.dim] /= axis->size();
  auto out = detail::allocate<detail::owning_like_t<V>>("kpmap::psum_scatter", e);
  detail::start_psum_scatter(exec, x, *axis, tiled.dim, true, out, nullptr)();
  return out;
}

/// \brief Sends `x` from axis index `src` to `dst` for every (src, dst) pair;
/// a rank that no pair sends to receives zeros (as in JAX). Collective.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
detail::owning_like_t<V> ppermute(const Exec& exec, const V& x, AxisRef axis,
                                  const std::vector<PermutePair>& pairs) {
  auto out = detail::allocate<detail::owning_like_t<V>>("kpmap::ppermute", detail::extents_of(x));
  detail::start_ppermute(exec, x, *axis, pairs, out, nullptr)();
  return out;
}

/// \brief Overwrites `x` on every rank of `axis` with its value on axis rank
/// `root`. Collective.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
void pbroadcast(const Exec& exec, const V& x, AxisRef axis, int root = 0) {
  detail::start_pbroadcast(exec, x, *axis, root, nullptr)();
}

/// \brief The value of `x` on axis rank `root`, on every rank. Collective.
template <class T, std::enable_if_t<detail::is_mpi_element_v<T>, int> = 0>
T pbroadcast(T x, AxisRef axis, int root = 0) {
  Kokkos::View<T, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> v(&x);
  detail::start_pbroadcast(Kokkos::DefaultHostExecutionSpace(), v, *axis, root, nullptr)();
  return x;
}

// Overloads on the View's default execution space.
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
auto all_gather(const V& x, AxisRef axis) {
  return all_gather(typename V::execution_space{}, x, axis);
}
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
auto all_gather(const V& x, AxisRef axis, Tiled tiled) {
  return all_gather(typename V::execution_space{}, x, axis, tiled);
}
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
auto all_to_all(const V& x, AxisRef axis, int split_dim, int concat_dim) {
  return all_to_all(typename V::execution_space{}, x, axis, split_dim, concat_dim);
}
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
auto psum_scatter(const V& x, AxisRef axis, int dim = 0) {
  return psum_scatter(typename V::execution_space{}, x, axis, dim);
}
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
auto psum_scatter(const V& x, AxisRef axis, Tiled tiled) {
  return psum_scatter(typename V::execution_space{}, x, axis, tiled);
}
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
auto ppermute(const V& x, AxisRef axis, const std::vector<PermutePair>& pairs) {
  return ppermute(typename V::execution_space{}, x, axis, pairs);
}
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
void pbroadcast(const V& x, AxisRef axis, int root = 0) {
  pbroadcast(typename V::execution_space{}, x, axis, root);
}

// -- non-blocking forms ---------------------------------------------------------

/// \brief Non-blocking all_gather (stacked); the Async owns every buffer.
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
Async<detail::stacked_t<V>> iall_gather(const V& x, AxisRef axis) {
  auto out = detail::allocate<detail::stacked_t<V>>("kpmap::all_gather",
                                                    detail::stacked_extents(x, axis->size()));
  transport::Pending pending;
  auto finish =
      detail::start_all_gather(typename V::execution_space{}, x, *axis, true, 0, out, &pending);
  return {out, detail::make_request(std::move(pending), std::move(finish))};
}

/// \brief Non-blocking all_to_all.
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
Async<detail::owning_like_t<V>> iall_to_all(const V& x, AxisRef axis, int split_dim,
                                            int concat_dim) {
  detail::require_dim("all_to_all", split_dim, detail::rank_v<V>);
  detail::require_dim("all_to_all", concat_dim, detail::rank_v<V>);
  detail::require_divisible("all_to_all", *axis, split_dim, x.extent(split_dim));
  auto e = detail::extents_of(x);
  e[split_dim] /= axis->size();
  e[concat_dim] *= axis->size();
  auto out = detail::allocate<detail::owning_like_t<V>>("kpmap::all_to_all", e);
  transport::Pending pending;
  auto finish = detail::start_all_to_all(typename V::execution_space{}, x, *axis, split_dim,
                                         concat_dim, out, &pending);
  return {out, detail::make_request(std::move(pending), std::move(finish))};
}

/// \brief Non-blocking psum_scatter (untiled: dimension `dim` has the axis size).
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
Async<detail::dropped_t<V>> ipsum_scatter(const V& x, AxisRef axis, int dim = 0) {
  auto out = detail::allocate<detail::dropped_t<V>>("kpmap::psum_scatter",
                                                    detail::scatter_extents(x, *axis, dim));
  transport::Pending pending;
  auto finish = detail::start_psum_scatter(typename V::execution_space{}, x, *axis, dim, false, out,
                                           &pending);
  return {out, detail::make_request(std::move(pending), std::move(finish))};
}

/// \brief Non-blocking ppermute.
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
Async<detail::owning_like_t<V>> ippermute(const V& x, AxisRef axis,
                                          const std::vector<PermutePair>& pairs) {
  auto out = detail::allocate<detail::owning_like_t<V>>("kpmap::ppermute", detail::extents_of(x));
  transport::Pending pending;
  auto finish =
      detail::start_ppermute(typename V::execution_space{}, x, *axis, pairs, out, &pending);
  return {out, detail::make_request(std::move(pending), std::move(finish))};
}

/// \brief Non-blocking pbroadcast; `x` holds root's value once the Request completes.
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
Request ipbroadcast(const V& x, AxisRef axis, int root = 0) {
  transport::Pending pending;
  auto finish = detail::start_pbroadcast(typename V::execution_space{}, x, *axis, root, &pending);
  return detail::make_request(std::move(pending), std::move(finish));
}

}  // namespace kpmap
