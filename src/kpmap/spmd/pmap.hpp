// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief The pmap layer: shard, replicate and gather arrays along a mesh
/// axis, and `pmap(axis, fn, in_axes, out_axes)`, which runs `fn` on every
/// rank with its local blocks, as JAX's pmap / shard_map does.
///
/// Sharding splits the leading dimension into blocks that differ by at most
/// one row (the first `n % p` ranks hold one more), so no size has to divide
/// by the device count. Every function here is collective over its axis.

#include <kpmap/base/detail/backend.hpp>
#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/base/detail/view_utils.hpp>
#include <kpmap/collectives/checked.hpp>
#include <kpmap/collectives/collectives.hpp>
#include <kpmap/runtime/mesh.hpp>
#include <kpmap/transport/mpi_ops.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace kpmap {

/// \brief How `rows` rows split over `parts` ranks: blocks differ by at most
/// one row; the first `rows % parts` blocks hold the extra rows.
struct BlockPartition {
  std::size_t rows = 0;
  int parts = 1;

  BlockPartition(std::size_t rows_, int parts_) : rows(rows_), parts(parts_) {}
  BlockPartition(std::size_t rows_, AxisRef axis) : rows(rows_), parts(axis->size()) {}

  /// \brief Rows held by block r.
  std::size_t count(int r) const {
    const std::size_t p = static_cast<std::size_t>(parts);
    return rows / p + (static_cast<std::size_t>(r) < rows % p ? 1 : 0);
  }
  /// \brief First global row of block r.
  std::size_t begin(int r) const {
    const std::size_t p = static_cast<std::size_t>(parts);
    const std::size_t q = static_cast<std::size_t>(r);
    return q * (rows / p) + std::min(q, rows % p);
  }
  std::size_t end(int r) const { return begin(r) + count(r); }
};

namespace detail {

/// Everything but the leading dimension, as a count of elements per row.
template <class V>
std::size_t row_size(const V& v) {
  std::size_t n = 1;
  for (int d = 1; d < rank_v<V>; ++d) n *= v.extent(d);
  return n;
}

/// The rows [b, e) of v as a subview (rank and layout kept where Kokkos can).
template <class V>
auto rows_of(const V& v, std::size_t b, std::size_t e) {
  constexpr int R = rank_v<V>;
  const auto rows = std::make_pair(b, e);
  static_assert(R >= 1 && R <= 8, "sharding needs a View of rank 1 to 8");
  if constexpr (R == 1)
    return Kokkos::subview(v, rows);
  else if constexpr (R == 2)
    return Kokkos::subview(v, rows, Kokkos::ALL);
  else if constexpr (R == 3)
    return Kokkos::subview(v, rows, Kokkos::ALL, Kokkos::ALL);
  else if constexpr (R == 4)
    return Kokkos::subview(v, rows, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL);
  else if constexpr (R == 5)
    return Kokkos::subview(v, rows, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL);
  else if constexpr (R == 6)
    return Kokkos::subview(v, rows, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL,
                           Kokkos::ALL);
  else if constexpr (R == 7)
    return Kokkos::subview(v, rows, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL,
                           Kokkos::ALL);
  else
    return Kokkos::subview(v, rows, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL,
                           Kokkos::ALL, Kokkos::ALL);
}

/// Copies `src` into `dst` (same shape) across memory spaces and layouts.
template <class Dst, class Src>
void copy_any(const Dst& dst, const Src& src) {
  using DM = typename Dst::memory_space;
  using SM = typename Src::memory_space;
  // Device paths: through the mirror, as between a GPU and the host.
  if constexpr (!device_paths &&
                Kokkos::SpaceAccessibility<typename Dst::execution_space, SM>::accessible) {
    Kokkos::deep_copy(dst, src);  // one space: any layouts
  } else {
    // Through a copy with dst's shape and layout in src's space (one
    // spelling for Kokkos 3.4 and 4.x, whose create_mirror_view orders its
    // WithoutInitializing argument differently).
    Kokkos::View<typename Dst::non_const_data_type, typename Dst::array_layout, SM> tmp(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("kpmap::pmap::copy")),
        dst.layout());
    Kokkos::deep_copy(tmp, src);
    Kokkos::deep_copy(dst, tmp);
    (void)sizeof(DM);
  }
}

template <class T, int R, class M>
using local_view_t = owning_view_t<T, R, Kokkos::LayoutRight, M>;

}  // namespace detail

/// \brief This rank's block of `global`, a View of the whole array that every
/// rank holds, split along its leading dimension over `axis`: a new View in
/// memory space `M` (the default device's unless given). Collective only in
/// the sense that every rank takes its own part; no messages are sent.
template <class M = Kokkos::DefaultExecutionSpace::memory_space, class V>
auto shard(const V& global, AxisRef axis) {
  using T = detail::value_t<V>;
  constexpr int R = detail::rank_v<V>;
  const BlockPartition part(global.extent(0), axis);
  const int me = axis->index();
  auto block = detail::rows_of(global, part.begin(me), part.end(me));
  auto e = detail::extents_of(global);
  e[0] = part.count(me);
  auto out = detail::allocate<detail::local_view_t<T, R, M>>("kpmap::shard", e);
  detail::copy_any(out, block);
  return out;
}

/// \brief This rank's block of an array that only axis rank `root` holds
/// (`global` is ignored elsewhere), sent with one scatter, in memory space M.
/// `exec` (an instance of `global`'s execution space) is the instance whose
/// work on `global` MPI waits for. Collective.
template <class M = Kokkos::DefaultExecutionSpace::memory_space, class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
auto shard_from_root(const Exec& exec, const V& global, AxisRef axis, int root = 0) {
  using T = detail::value_t<V>;
  constexpr int R = detail::rank_v<V>;
  static_assert(R >= 1, "shard_from_root needs a View of rank 1 or more");
  // Everyone learns the global shape from the root.
  std::size_t shape[8];
  for (int d = 0; d < 8; ++d) shape[d] = d < R ? global.extent(d) : 1;
  transport::bcast(shape, 8, MPI_UINT64_T, root, axis->comm(), nullptr);
  detail::Extents ge;
  for (int d = 0; d < 8; ++d) ge[d] = shape[d];
  const BlockPartition part(ge[0], axis);
  std::size_t per_row = 1;
  for (int d = 1; d < R; ++d) per_row *= ge[d];
  std::vector<std::size_t> counts(static_cast<std::size_t>(axis->size()));
  for (int r = 0; r < axis->size(); ++r) counts[r] = part.count(r) * per_row;

  // The root's array goes to MPI from its own memory (packed when it is not
  // row-major), or staged: the transport decides, as for every collective.
  const bool is_root = axis->index() == root;
  auto send = detail::load(exec, is_root ? global : V(), true);
  auto e = ge;
  e[0] = part.count(axis->index());
  auto out = detail::allocate<detail::local_view_t<T, R, M>>("kpmap::shard", e);
  auto recv = transport::make_buffer<T, M>(out.data(), out.size());
  detail::fence_before_mpi(exec);
  transport::scatterv(send.mpi, recv.mpi, counts, detail::mpi_datatype<T>(), root, axis->comm());
  using OutExec = typename decltype(out)::execution_space;
  if constexpr (std::is_same_v<OutExec, Exec>) {
    detail::complete_receive(exec, recv, [] {});
  } else {
    detail::complete_receive(OutExec(), recv, [] {});  // its own copies, fenced there
  }
  return out;
}

/// \brief As above, once every execution space instance has finished (no
/// instance named: see detail::unnamed_instance).
template <class M = Kokkos::DefaultExecutionSpace::memory_space, class V,
          std::enable_if_t<detail::is_view_v<V>, int> = 0>
auto shard_from_root(const V& global, AxisRef axis, int root = 0) {
  return shard_from_root<M>(detail::unnamed_instance<typename V::execution_space>(), global, axis,
                            root);
}

namespace detail {
/// Kernel of shard_generate: out(local index) = gen(global index). A functor
/// rather than a lambda, so that CUDA accepts the rank dispatch inside it.
template <int R, class Out, class Gen>
struct Generate {
  Out out;
  Gen gen;
  Extents e;
  std::size_t row0;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t k) const {
    std::size_t i[max_view_rank];
    unflatten(k, e, R, i);
    const std::size_t g = row0 + i[0];
    if constexpr (R == 1)
      out(i[0]) = gen(g);
    else if constexpr (R == 2)
      out(i[0], i[1]) = gen(g, i[1]);
    else if constexpr (R == 3)
      out(i[0], i[1], i[2]) = gen(g, i[1], i[2]);
    else if constexpr (R == 4)
      out(i[0], i[1], i[2], i[3]) = gen(g, i[1], i[2], i[3]);
    else if constexpr (R == 5)
      out(i[0], i[1], i[2], i[3], i[4]) = gen(g, i[1], i[2], i[3], i[4]);
    else
      out(i[0], i[1], i[2], i[3], i[4], i[5]) = gen(g, i[1], i[2], i[3], i[4], i[5]);
  }
};
}  // namespace detail

/// \brief This rank's block of a global array of shape `global_extents`
/// (rank R) whose elements `gen(i0, i1, ...)` computes from *global* indices,
/// run as a Kokkos kernel (use KOKKOS_LAMBDA). The array never exists whole.
template <class T, int R, class M = Kokkos::DefaultExecutionSpace::memory_space, class Gen>
detail::local_view_t<T, R, M> shard_generate(const std::string& label,
                                             const std::array<std::size_t, R>& global_extents,
                                             AxisRef axis, Gen gen) {
  static_assert(R >= 1 && R <= 6, "shard_generate handles ranks 1 to 6");
  using Out = detail::local_view_t<T, R, M>;
  using Exec = typename Out::execution_space;
  const BlockPartition part(global_extents[0], axis);
  detail::Extents e;
  for (int d = 0; d < 8; ++d) e[d] = d < R ? global_extents[d] : 1;
  e[0] = part.count(axis->index());
  auto out = detail::allocate<Out>(label, e);
  Kokkos::parallel_for("kpmap::shard_generate", Kokkos::RangePolicy<Exec>(0, out.size()),
                       detail::Generate<R, Out, Gen>{out, gen, e, part.begin(axis->index())});
  detail::fence(Exec(), "kpmap::shard_generate: generated");
  return out;
}

/// \brief Makes `x` replicated: every rank of `axis` gets axis rank 0's
/// value (in place, on `exec`; returns x). Collective.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
const V& replicate(const Exec& exec, const V& x, AxisRef axis) {
  pbroadcast_inplace(exec, x, axis, 0);
  return x;
}
/// \brief As above, once every execution space instance has finished.
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
const V& replicate(const V& x, AxisRef axis) {
  pbroadcast_inplace(x, axis, 0);
  return x;
}

/// \brief Reassembles blocks along the leading dimension (any sizes, in axis
/// order) into the whole array on every rank, or only on `root` when root >= 0
/// (other ranks get an empty View), on `exec` (an instance of `local`'s
/// execution space). Collective.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
auto gather(const Exec& exec, const V& local, AxisRef axis, int root = -1) {
  using T = detail::value_t<V>;
  using M = typename V::memory_space;
  constexpr int R = detail::rank_v<V>;
  static_assert(R >= 1, "gather needs a View of rank 1 or more");
  std::vector<std::size_t> rows(static_cast<std::size_t>(axis->size()));
  std::size_t mine = local.extent(0);
  transport::allgather(&mine, rows.data(), 1, MPI_UINT64_T, axis->comm(), nullptr);
  if (checked_mode()) {
    auto sig = detail::signature_of("gather", "local", local, root);
    sig.extents[0] = 0;  // blocks may differ in rows, not in the rest of the shape
    detail::verify_signature(*axis, sig);
  }
  std::size_t total = 0;
  for (auto r : rows) total += r;
  const std::size_t per_row = detail::row_size(local);
  std::vector<std::size_t> counts;
  for (auto r : rows) counts.push_back(r * per_row);

  // The transport's path, as for every collective: the block goes to MPI
  // from its own memory (packed when it is not row-major), or staged.
  auto send = detail::load(exec, local, true);
  auto e = detail::extents_of(local);
  const bool receives = root < 0 || axis->index() == root;
  e[0] = receives ? total : 0;
  auto out = detail::allocate<detail::local_view_t<T, R, M>>("kpmap::gather", e);
  auto recv = transport::make_buffer<T, M>(out.data(), out.size());
  detail::fence_before_mpi(exec);
  if (root < 0) {
    transport::allgatherv(send.mpi, recv.mpi, counts, detail::mpi_datatype<T>(), axis->comm());
  } else {
    transport::gatherv(send.mpi, recv.mpi, counts, detail::mpi_datatype<T>(), root, axis->comm());
  }
  detail::complete_receive(exec, recv, [] {});
  return out;
}
/// \brief As above, once every execution space instance has finished.
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
auto gather(const V& local, AxisRef axis, int root = -1) {
  return gather(detail::unnamed_instance<typename V::execution_space>(), local, axis, root);
}

// ===== pmap ===================================================================

/// \brief in_axes / out_axes marker: split along the leading dimension. A
/// result so marked stays split: each rank keeps its block, as a JAX user
/// has until they index the array.
struct Sharded {};
/// \brief in_axes / out_axes marker: the same value on every rank.
struct Replicated {};
/// \brief out_axes marker: a sharded result reassembled into the whole
/// array on every rank (one allgather of the block sizes, one allgatherv and
/// a whole array per rank on every call; kpmap::gather does the same later).
struct Gathered {};
inline constexpr Sharded sharded{};
inline constexpr Replicated replicated{};
inline constexpr Gathered gathered{};

/// \brief JAX's in_axes: one marker per argument of the mapped function.
template <class... Specs>
std::tuple<Specs...> in_axes(Specs... specs) {
  return {specs...};
}
/// \brief JAX's out_axes: one marker per result (a single one, or one per
/// element of a returned std::tuple).
template <class... Specs>
std::tuple<Specs...> out_axes(Specs... specs) {
  return {specs...};
}

namespace detail {

/// checked mode: `x` (a number, a View or a tree of Views) is identical on
/// every rank of `axis`. A tree is compared leaf by leaf, each named by its
/// index and its View's label ("pmap argument 1, leaf 2 ('b')"), after its
/// leaf count. Collective over `axis`.
template <class T>
void verify_replicated_value(const Axis& axis, const std::string& what, const T& x) {
  if constexpr (is_view_v<T>) {
    verify_replicated(axis, what, x);
  } else if constexpr (std::is_arithmetic_v<T>) {
    verify_identical(axis, what, &x, sizeof(T), sizeof(T), &format_element<T>);
  } else if constexpr (is_tree_v<T>) {
    // Visiting reads the leaves only; for_each_view may be a non-const member.
    T& tree = const_cast<T&>(x);
    long long leaves = 0;
    auto count = [&](const auto&) { ++leaves; };
    for_each_leaf(tree, count);
    Signature s;
    s.op = "replicated tree";
    s.arg = what;
    s.type = "leaves";
    s.param = leaves;
    verify_signature(axis, s);
    std::size_t i = 0;
    auto each = [&](const auto& leaf) {
      const std::string label = leaf.label();
      verify_replicated(axis,
                        what + ", leaf " + std::to_string(i++) +
                            (label.empty() ? std::string() : " ('" + label + "')"),
                        leaf);
    };
    for_each_leaf(tree, each);
  }
  // Other types (functors, structs of constants) cannot be compared; they
  // are assumed to be compile-time or program-wide constants.
}

template <class Spec, class Arg>
decltype(auto) localize(const Axis& axis, const Arg& arg, std::size_t i) {
  if constexpr (std::is_same_v<Spec, Sharded>) {
    static_assert(is_view_v<Arg>, "pmap: an argument marked sharded must be a Kokkos::View");
    const BlockPartition part(arg.extent(0), axis.size());
    return rows_of(arg, part.begin(axis.index()), part.end(axis.index()));
  } else {
    static_assert(std::is_same_v<Spec, Replicated>,
                  "pmap: in_axes markers are kpmap::sharded or kpmap::replicated");
    if (checked_mode()) verify_replicated_value(axis, "pmap argument " + std::to_string(i), arg);
    return (arg);
  }
}

template <class Spec, class R>
auto globalize(const Axis& axis, R&& result, std::size_t i) {
  if constexpr (std::is_same_v<Spec, Sharded>) {
    return std::forward<R>(result);  // this rank's block
  } else if constexpr (std::is_same_v<Spec, Gathered>) {
    static_assert(is_view_v<std::decay_t<R>>, "pmap: a result marked gathered must be a View");
    return gather(result, axis);
  } else {
    static_assert(
        std::is_same_v<Spec, Replicated>,
        "pmap: out_axes markers are kpmap::sharded, kpmap::gathered or kpmap::replicated");
    if (checked_mode()) verify_replicated_value(axis, "pmap result " + std::to_string(i), result);
    return std::forward<R>(result);
  }
}

}  // namespace detail

/// \brief A function mapped over a mesh axis; see kpmap::pmap.
template <class F, class InSpecs, class OutSpecs>
class Pmapped {
 public:
  /// The specs are types only (in_axes/out_axes markers): nothing of them is kept.
  Pmapped(const Axis& axis, F fn, InSpecs, OutSpecs) : axis_(&axis), fn_(std::move(fn)) {}

  /// \brief Runs the function on every rank with its local blocks.
  /// Collective over the axis.
  template <class... Args>
  auto operator()(const Args&... args) const {
    static_assert(sizeof...(Args) == std::tuple_size_v<InSpecs>,
                  "pmap: give in_axes one marker per argument");
    return call(std::index_sequence_for<Args...>{}, args...);
  }

 private:
  template <std::size_t... I, class... Args>
  auto call(std::index_sequence<I...>, const Args&... args) const {
    using Result =
        decltype(fn_(detail::localize<std::tuple_element_t<I, InSpecs>>(*axis_, args, I)...));
    if constexpr (std::is_void_v<Result>) {
      fn_(detail::localize<std::tuple_element_t<I, InSpecs>>(*axis_, args, I)...);
    } else {
      auto result = fn_(detail::localize<std::tuple_element_t<I, InSpecs>>(*axis_, args, I)...);
      if constexpr (detail::is_tuple<Result>::value) {
        static_assert(std::tuple_size_v<Result> == std::tuple_size_v<OutSpecs>,
                      "pmap: give out_axes one marker per result");
        return globalize_all(result, std::make_index_sequence<std::tuple_size_v<Result>>{});
      } else {
        static_assert(std::tuple_size_v<OutSpecs> == 1,
                      "pmap: a function with one result takes one out_axes marker");
        return detail::globalize<std::tuple_element_t<0, OutSpecs>>(*axis_, std::move(result), 0);
      }
    }
  }

  template <class Tuple, std::size_t... I>
  auto globalize_all(Tuple& result, std::index_sequence<I...>) const {
    return std::make_tuple(detail::globalize<std::tuple_element_t<I, OutSpecs>>(
        *axis_, std::move(std::get<I>(result)), I)...);
  }

  const Axis* axis_;
  F fn_;
};

/// \brief JAX's `pmap(fn, axis_name, in_axes, out_axes)`: returns a callable
/// that, called on every rank with whole arrays, runs `fn` on each rank's
/// block of the arguments marked sharded (the leading dimension split as
/// BlockPartition does) and on the replicated arguments as they are. Results
/// marked sharded stay where they are, each rank's block (kpmap::gather
/// reassembles one later); results marked gathered are reassembled into whole
/// arrays on every rank; results marked replicated are returned as they are,
/// and in checked mode, replicated
/// arguments and results are verified identical across ranks, which catches a
/// forgotten pmean at once.
template <class F, class... In, class... Out>
auto pmap(AxisRef axis, F fn, std::tuple<In...> in, std::tuple<Out...> out) {
  return Pmapped<F, std::tuple<In...>, std::tuple<Out...>>(*axis, std::move(fn), in, out);
}

}  // namespace kpmap
