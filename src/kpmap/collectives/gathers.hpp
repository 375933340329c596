// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief all_gather, all_to_all and psum_scatter: collectives whose result
/// has another shape than their input, blocking or not.
///
/// Every function here is **collective over its axis**: every rank of the
/// axis calls it, in the same order, with the same element type and shape
/// (checked mode verifies this).

#include <kpmap/base/detail/mpi_datatype.hpp>
#include <kpmap/base/detail/view_utils.hpp>
#include <kpmap/base/error.hpp>
#include <kpmap/collectives/buffers.hpp>
#include <kpmap/collectives/checked.hpp>
#include <kpmap/collectives/request.hpp>
#include <kpmap/runtime/mesh.hpp>
#include <kpmap/tools/profiling.hpp>
#include <kpmap/transport/mpi_ops.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace kpmap {

/// \brief Selects the tiled (concatenating) form of all_gather / psum_scatter
/// along dimension `dim`, as JAX's `tiled=True`.
struct Tiled {
  int dim = 0;
};

/// \brief Selects the tiled form of all_to_all (JAX's `tiled=True`): no
/// dimension is added or removed.
struct TiledForm {};
inline constexpr TiledForm tiled{};

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

/// An untiled all_gather stacks the blocks of a View of rank `rank` along a
/// new dimension `dim` of its result, one of 0 .. rank.
inline void require_stack_dim(const char* op, int dim, int rank) {
  if (dim < 0 || dim > rank) {
    throw Error(std::string("kpmap::") + op + ": dimension " + std::to_string(dim) +
                " cannot stack the blocks of a View of rank " + std::to_string(rank) +
                " (a new dimension 0 to " + std::to_string(rank) + " of the rank-" +
                std::to_string(rank + 1) + " result)");
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

template <class Exec, class V, class Out>
auto start_all_gather(const Exec& exec, const V& x, const Axis& axis, bool stacked, int dim,
                      const Out& out, transport::Pending* pending) {
  using T = value_t<V>;
  if (checked_mode()) {
    verify_signature(axis, signature_of(stacked ? "all_gather" : "all_gather(tiled)", "x", x, dim));
  }
  auto send = load(exec, x, true);
  const bool direct = dim == 0 && is_canonical(out);
  auto recv = transport::make_buffer<T, typename V::memory_space>(direct ? out.data() : nullptr,
                                                                  out.size());
  fence_before_mpi(exec);
  transport::allgather(send.mpi, recv.mpi, x.size(), mpi_datatype<T>(), axis.comm(), pending);
  // Stacked at `dim`, each block is x with a dimension of extent 1 inserted
  // there (the same row-major order), concatenated along it.
  Extents chunk = extents_of(x);
  if (stacked) {
    chunk = extents_of(out);
    chunk[dim] = 1;
  }
  return [exec, out, send = std::move(send), recv = std::move(recv), direct, chunk, dim]() mutable {
    complete_receive(exec, recv, [&] {
      if (!direct) unpack_blocks(exec, recv.dev, chunk, rank_v<Out>, dim, out);
    });
  };
}

/// Sends p blocks of x split along `split` (block j to rank j) and returns the
/// loaded send buffer.
template <class Exec, class V>
auto load_blocks(const Exec& exec, const V& x, int split, int p) {
  using T = value_t<V>;
  const bool direct = split == 0 && is_canonical(x);
  auto send = transport::make_buffer<T, typename V::memory_space>(
      direct ? const_cast<T*>(x.data()) : nullptr, x.size());
  if (!direct) pack_blocks(exec, x, split, p, send.dev);
  transport::to_mpi(exec, send);
  return send;
}

template <class Exec, class V, class Out>
auto start_all_to_all(const Exec& exec, const V& x, const Axis& axis, int split, int concat,
                      bool tiled, const Out& out, transport::Pending* pending) {
  using T = value_t<V>;
  if (checked_mode()) {
    verify_signature(axis, signature_of(tiled ? "all_to_all(tiled)" : "all_to_all", "x", x,
                                        split * 16 + concat));
  }
  const int p = axis.size();
  auto send = load_blocks(exec, x, split, p);
  const bool direct = concat == 0 && is_canonical(out);
  auto recv = transport::make_buffer<T, typename V::memory_space>(direct ? out.data() : nullptr,
                                                                  out.size());
  fence_before_mpi(exec);
  Extents block = extents_of(x);
  block[split] /= p;
  transport::alltoall(send.mpi, recv.mpi, product(block, rank_v<V>), mpi_datatype<T>(), axis.comm(),
                      pending);
  // Untiled, a received block is x without its split dimension (extent 1
  // there): in row-major order, the output's shape with 1 at `concat`.
  Extents chunk = block;
  if (!tiled) {
    chunk = extents_of(out);
    chunk[concat] = 1;
  }
  return
      [exec, out, send = std::move(send), recv = std::move(recv), direct, chunk, concat]() mutable {
        complete_receive(exec, recv, [&] {
          if (!direct) unpack_blocks(exec, recv.dev, chunk, rank_v<V>, concat, out);
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
  auto recv = transport::make_buffer<T, typename V::memory_space>(direct ? out.data() : nullptr,
                                                                  out.size());
  fence_before_mpi(exec);
  transport::reduce_scatter_block(send.mpi, recv.mpi, out.size(), mpi_datatype<T>(), MPI_SUM,
                                  axis.comm(), pending);
  return [exec, out, send = std::move(send), recv = std::move(recv), direct]() mutable {
    // Block order equals the output's row-major order (the scattered
    // dimension has extent 1 in a block, or is dropped).
    complete_receive(exec, recv, [&] {
      if (!direct) unpack(exec, recv.dev, out);
    });
  };
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

/// The shape of an all_to_all result. Tiled: dimension `split` divided by
/// the axis size, dimension `concat` multiplied by it. Untiled (JAX's
/// default): `split`, whose extent must be the axis size, removed, and a
/// dimension of the axis size inserted at `concat`.
template <class V>
Extents all_to_all_extents(const V& x, const Axis& axis, int split, int concat, bool tiled) {
  require_dim("all_to_all", split, rank_v<V>);
  require_dim("all_to_all", concat, rank_v<V>);
  auto e = extents_of(x);
  const auto p = static_cast<std::size_t>(axis.size());
  if (tiled) {
    require_divisible("all_to_all", axis, split, x.extent(split));
    e[split] /= p;
    e[concat] *= p;
    return e;
  }
  if (x.extent(split) != p) {
    throw Error("kpmap::all_to_all: split dimension " + std::to_string(split) + " has extent " +
                std::to_string(x.extent(split)) + " but axis '" + axis.name() + "' has " +
                std::to_string(p) + " ranks (use kpmap::tiled to split it in blocks)");
  }
  for (int d = split; d + 1 < max_view_rank; ++d) e[d] = e[d + 1];   // np.delete
  for (int d = max_view_rank - 1; d > concat; --d) e[d] = e[d - 1];  // np.insert
  e[concat] = p;
  return e;
}

/// The shape of a stacked all_gather along `dim`: a dimension of size p
/// inserted there.
template <class V>
Extents stacked_extents_at(const V& x, int p, int dim) {
  auto e = extents_of(x);
  for (int d = max_view_rank - 1; d > dim; --d) e[d] = e[d - 1];
  e[dim] = static_cast<std::size_t>(p);
  return e;
}

}  // namespace detail

/// \brief Gathers `x` from every rank of `axis`, stacked along a new
/// dimension inserted at `dim` (JAX's all_gather(x, axis_name, axis=dim)):
/// for dim 0, result(r, ...) = x on axis rank r. Collective.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
detail::stacked_t<V> all_gather(const Exec& exec, const V& x, AxisRef axis, int dim = 0) {
  ProfilingRegion region("kpmap::all_gather", axis->name());
  if (region.traced()) region.note(detail::trace_args(x));
  static_assert(detail::rank_v<V> < detail::max_view_rank,
                "all_gather adds a dimension: the input rank must be below 8");
  detail::require_stack_dim("all_gather", dim, detail::rank_v<V>);
  auto out = detail::allocate<detail::stacked_t<V>>(
      "kpmap::all_gather", detail::stacked_extents_at(x, axis->size(), dim));
  detail::start_all_gather(exec, x, *axis, true, dim, out, nullptr)();
  return out;
}

/// \brief Gathers `x` from every rank of `axis`, concatenated along dimension
/// `tiled.dim` (JAX's tiled=True). Collective.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
detail::owning_like_t<V> all_gather(const Exec& exec, const V& x, AxisRef axis, Tiled tiled) {
  ProfilingRegion region("kpmap::all_gather", axis->name());
  if (region.traced()) region.note(detail::trace_args(x));
  detail::require_dim("all_gather", tiled.dim, detail::rank_v<V>);
  auto e = detail::extents_of(x);
  e[tiled.dim] *= axis->size();
  auto out = detail::allocate<detail::owning_like_t<V>>("kpmap::all_gather", e);
  detail::start_all_gather(exec, x, *axis, false, tiled.dim, out, nullptr)();
  return out;
}

/// \brief JAX's all_to_all(x, axis, split_axis, concat_axis) with its
/// default tiled=False: dimension `split_dim`, whose extent must be the axis
/// size p, is removed, and a dimension of size p is inserted at `concat_dim`
/// of the result (np.insert(np.delete(x.shape, split), concat, p)); on axis
/// rank r, index j of that dimension holds x of axis rank j at index r of
/// `split_dim`. Collective.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
detail::owning_like_t<V> all_to_all(const Exec& exec, const V& x, AxisRef axis, int split_dim,
                                    int concat_dim) {
  ProfilingRegion region("kpmap::all_to_all", axis->name());
  if (region.traced()) region.note(detail::trace_args(x));
  auto out = detail::allocate<detail::owning_like_t<V>>(
      "kpmap::all_to_all", detail::all_to_all_extents(x, *axis, split_dim, concat_dim, false));
  detail::start_all_to_all(exec, x, *axis, split_dim, concat_dim, false, out, nullptr)();
  return out;
}

/// \brief JAX's all_to_all with tiled=True: splits dimension `split_dim` of
/// `x` into p blocks, sends block j to axis rank j, and concatenates the
/// received blocks along `concat_dim`; no dimension is added or removed.
/// Collective.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
detail::owning_like_t<V> all_to_all(const Exec& exec, const V& x, AxisRef axis, int split_dim,
                                    int concat_dim, TiledForm) {
  ProfilingRegion region("kpmap::all_to_all", axis->name());
  if (region.traced()) region.note(detail::trace_args(x));
  auto out = detail::allocate<detail::owning_like_t<V>>(
      "kpmap::all_to_all", detail::all_to_all_extents(x, *axis, split_dim, concat_dim, true));
  detail::start_all_to_all(exec, x, *axis, split_dim, concat_dim, true, out, nullptr)();
  return out;
}

/// \brief Sums `x` over `axis` and gives axis rank j slice j of dimension
/// `dim` (whose extent must equal the axis size); the result drops that
/// dimension (JAX's psum_scatter). Collective.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
detail::dropped_t<V> psum_scatter(const Exec& exec, const V& x, AxisRef axis, int dim = 0) {
  ProfilingRegion region("kpmap::psum_scatter", axis->name());
  if (region.traced()) region.note(detail::trace_args(x));
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
  ProfilingRegion region("kpmap::psum_scatter", axis->name());
  if (region.traced()) region.note(detail::trace_args(x));
  detail::require_dim("psum_scatter", tiled.dim, detail::rank_v<V>);
  detail::require_divisible("psum_scatter", *axis, tiled.dim, x.extent(tiled.dim));
  auto e = detail::extents_of(x);
  e[tiled.dim] /= axis->size();
  auto out = detail::allocate<detail::owning_like_t<V>>("kpmap::psum_scatter", e);
  detail::start_psum_scatter(exec, x, *axis, tiled.dim, true, out, nullptr)();
  return out;
}

/// \brief Completes a View of rank 1 that the ranks of `axis` fill in
/// blocks: axis rank r owns `counts[r]` elements, after those of the ranks
/// before it (blocks of any size, 0 included, summing to x's extent). Each
/// rank's own block is read from x and every other block is written into
/// x: the all-gather of ZeRO's updated parameter shards, with no buffer of
/// its own (MPI_Allgatherv in place, staged where the transport stages).
/// Collective; blocking (fences `exec`).
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
void all_gather_inplace(const Exec& exec, const V& x, const std::vector<std::size_t>& counts,
                        AxisRef axis) {
  using T = detail::value_t<V>;
  using M = typename V::memory_space;
  static_assert(detail::rank_v<V> == 1, "all_gather_inplace fills a View of rank 1");
  ProfilingRegion region("kpmap::all_gather_inplace", axis->name());
  if (region.traced()) region.note(detail::trace_args(x));
  std::size_t total = 0, mine = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    if (static_cast<int>(r) == axis->index()) mine = total;
    total += counts[r];
  }
  if (counts.size() != static_cast<std::size_t>(axis->size()) || total != x.extent(0) ||
      !detail::is_contiguous(x)) {
    throw Error("kpmap::all_gather_inplace: " + std::to_string(counts.size()) + " blocks of " +
                std::to_string(total) + " elements for a View of " + std::to_string(x.extent(0)) +
                " over the " + std::to_string(axis->size()) + " ranks of axis '" + axis->name() +
                "' (one block per rank, summing to a "
                "contiguous View's extent)");
  }
  if (checked_mode()) {
    detail::verify_signature(*axis, detail::signature_of("all_gather_inplace", "x", x, 0));
  }
  auto buf = transport::make_buffer<T, M>(const_cast<T*>(x.data()), x.size());
  const auto own = Kokkos::make_pair(mine, mine + counts[static_cast<std::size_t>(axis->index())]);
  if (buf.staged())
    Kokkos::deep_copy(exec, Kokkos::subview(buf.pinned(), own), Kokkos::subview(buf.dev, own));
  detail::fence_before_mpi(exec);
  transport::allgatherv(MPI_IN_PLACE, buf.mpi, counts, detail::mpi_datatype<T>(), axis->comm());
  detail::complete_receive(exec, buf, [] {});
}

/// \brief Starts all_gather_inplace: rank r's block of `counts[r]` elements
/// lies in `x` at `displs[r]`, and every block is in every rank's `x` once
/// the Request completes (wait() fences `exec` only where the transport
/// stages). The ranks' blocks must not overlap; `counts` and `displs` must
/// outlive the Request (MPI reads them until it completes), and x must not
/// be touched before it does: how the next layer's parameters are gathered
/// while this one computes (ZeRO stage 3). Collective.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
Request iall_gather_inplace(const Exec& exec, const V& x, const std::vector<int>& counts,
                            const std::vector<int>& displs, AxisRef axis) {
  using T = detail::value_t<V>;
  using M = typename V::memory_space;
  static_assert(detail::rank_v<V> == 1, "iall_gather_inplace fills a View of rank 1");
  ProfilingRegion region("kpmap::iall_gather_inplace", axis->name());
  if (region.traced()) region.note(detail::trace_args(x));
  const auto ranks = static_cast<std::size_t>(axis->size());
  bool fits = counts.size() == ranks && displs.size() == ranks && detail::is_contiguous(x);
  for (std::size_t r = 0; fits && r < ranks; ++r) {
    fits = counts[r] >= 0 && displs[r] >= 0 &&
           static_cast<std::size_t>(displs[r]) + static_cast<std::size_t>(counts[r]) <= x.extent(0);
  }
  if (!fits) {
    throw Error("kpmap::iall_gather_inplace: " + std::to_string(counts.size()) + " counts and " +
                std::to_string(displs.size()) + " displacements for a View of " +
                std::to_string(x.extent(0)) + " over the " + std::to_string(axis->size()) +
                " ranks of axis '" + axis->name() +
                "' (one block per rank, each within a contiguous View)");
  }
  if (checked_mode()) {
    detail::verify_signature(*axis, detail::signature_of("all_gather_inplace", "x", x, 0));
  }
  // Staged, the whole View goes out and back, so that what lies between
  // the blocks comes back as it was.
  auto buf = transport::make_buffer<T, M>(const_cast<T*>(x.data()), x.size());
  transport::to_mpi(exec, buf);
  detail::fence_before_mpi(exec);
  transport::Pending pending;
  transport::allgatherv_inplace(buf.mpi, counts.data(), displs.data(), detail::mpi_datatype<T>(),
                                axis->comm(), &pending);
  return detail::make_request(std::move(pending), [exec, buf = std::move(buf)]() mutable {
    if (buf.staged()) detail::complete_receive(exec, buf, [] {});
  });
}

/// \brief Starts the sum over `axis` of `x`, a View of rank 1 that every
/// rank holds whole and that the ranks own in blocks (block r: `counts[r]`
/// elements after those of the ranks before it; empty ones too), giving
/// each rank the sum of its own block in `out` (of its count's extent): an
/// uneven psum_scatter, the reduce-scatter of ZeRO's sharded gradients.
/// `counts` must outlive the Request (MPI reads it until it completes), and
/// x must not change before it does. Collective.
template <class Exec, class V, class O,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
Request ipsum_scatter_blocks(const Exec& exec, const V& x, const std::vector<int>& counts,
                             const O& out, AxisRef axis) {
  using T = detail::value_t<V>;
  using M = typename V::memory_space;
  static_assert(detail::rank_v<V> == 1 && detail::rank_v<O> == 1,
                "ipsum_scatter_blocks reduces a View of rank 1 into one of rank 1");
  ProfilingRegion region("kpmap::ipsum_scatter_blocks", axis->name());
  if (region.traced()) region.note(detail::trace_args(x));
  std::size_t total = 0;
  for (int c : counts) total += static_cast<std::size_t>(c < 0 ? 0 : c);
  const auto me = static_cast<std::size_t>(axis->index());
  if (counts.size() != static_cast<std::size_t>(axis->size()) || total != x.extent(0) ||
      out.extent(0) != static_cast<std::size_t>(counts[me]) || !detail::is_contiguous(x) ||
      !detail::is_contiguous(out)) {
    throw Error("kpmap::ipsum_scatter_blocks: " + std::to_string(counts.size()) + " blocks of " +
                std::to_string(total) + " elements for a View of " + std::to_string(x.extent(0)) +
                " over the " + std::to_string(axis->size()) + " ranks of axis '" + axis->name() +
                "', and a result of " + std::to_string(out.extent(0)) +
                " (one block per rank, summing to x's extent; "
                "the result of this rank's block's; both contiguous)");
  }
  if (checked_mode()) {
    detail::verify_signature(*axis, detail::signature_of("psum_scatter_blocks", "x", x, 0));
  }
  auto send = transport::make_buffer<T, M>(const_cast<T*>(x.data()), x.size());
  transport::to_mpi(exec, send);
  auto recv = transport::make_buffer<T, typename O::memory_space>(out.data(), out.size());
  detail::fence_before_mpi(exec);
  transport::Pending pending;
  transport::reduce_scatter(send.mpi, recv.mpi, counts.data(), detail::mpi_datatype<T>(), MPI_SUM,
                            axis->comm(), &pending);
  // Staged, the sum is copied back and waited for before the pinned buffer
  // returns to its pool; direct, MPI wrote it in place.
  return detail::make_request(std::move(pending),
                              [exec, send = std::move(send), recv = std::move(recv)]() mutable {
                                if (recv.staged()) detail::complete_receive(exec, recv, [] {});
                              });
}

// Without an execution space: every instance is fenced first, then a default
// instance of the View's space runs the collective (see unnamed_instance).
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
auto all_gather(const V& x, AxisRef axis, int dim = 0) {
  return all_gather(detail::unnamed_instance<typename V::execution_space>(), x, axis, dim);
}
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
auto all_gather(const V& x, AxisRef axis, Tiled tiled) {
  return all_gather(detail::unnamed_instance<typename V::execution_space>(), x, axis, tiled);
}
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
void all_gather_inplace(const V& x, const std::vector<std::size_t>& counts, AxisRef axis) {
  all_gather_inplace(detail::unnamed_instance<typename V::execution_space>(), x, counts, axis);
}
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
auto all_to_all(const V& x, AxisRef axis, int split_dim, int concat_dim) {
  return all_to_all(detail::unnamed_instance<typename V::execution_space>(), x, axis, split_dim,
                    concat_dim);
}
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
auto all_to_all(const V& x, AxisRef axis, int split_dim, int concat_dim, TiledForm t) {
  return all_to_all(detail::unnamed_instance<typename V::execution_space>(), x, axis, split_dim,
                    concat_dim, t);
}
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
auto psum_scatter(const V& x, AxisRef axis, int dim = 0) {
  return psum_scatter(detail::unnamed_instance<typename V::execution_space>(), x, axis, dim);
}
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
auto psum_scatter(const V& x, AxisRef axis, Tiled tiled) {
  return psum_scatter(detail::unnamed_instance<typename V::execution_space>(), x, axis, tiled);
}

// -- non-blocking forms ---------------------------------------------------------

/// \brief Non-blocking all_gather (stacked at `dim`) on `exec`; the Async
/// owns every buffer, and its wait() fences `exec` only.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
Async<detail::stacked_t<V>> iall_gather(const Exec& exec, const V& x, AxisRef axis, int dim = 0) {
  ProfilingRegion region("kpmap::iall_gather", axis->name());
  if (region.traced()) region.note(detail::trace_args(x));
  detail::require_stack_dim("all_gather", dim, detail::rank_v<V>);
  auto out = detail::allocate<detail::stacked_t<V>>(
      "kpmap::all_gather", detail::stacked_extents_at(x, axis->size(), dim));
  transport::Pending pending;
  auto finish = detail::start_all_gather(exec, x, *axis, true, dim, out, &pending);
  return {out, detail::make_request(std::move(pending), std::move(finish))};
}

namespace detail {
template <class Exec, class V>
Async<owning_like_t<V>> iall_to_all(const Exec& exec, const V& x, const Axis& axis, int split_dim,
                                    int concat_dim, bool tiled) {
  ProfilingRegion region("kpmap::iall_to_all", axis.name());
  if (region.traced()) region.note(trace_args(x));
  auto out = allocate<owning_like_t<V>>("kpmap::all_to_all",
                                        all_to_all_extents(x, axis, split_dim, concat_dim, tiled));
  transport::Pending pending;
  auto finish = start_all_to_all(exec, x, axis, split_dim, concat_dim, tiled, out, &pending);
  return {out, make_request(std::move(pending), std::move(finish))};
}
}  // namespace detail

/// \brief Non-blocking all_to_all (JAX's default, untiled) on `exec`.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
Async<detail::owning_like_t<V>> iall_to_all(const Exec& exec, const V& x, AxisRef axis,
                                            int split_dim, int concat_dim) {
  return detail::iall_to_all(exec, x, *axis, split_dim, concat_dim, false);
}
/// \brief Non-blocking tiled all_to_all on `exec`.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
Async<detail::owning_like_t<V>> iall_to_all(const Exec& exec, const V& x, AxisRef axis,
                                            int split_dim, int concat_dim, TiledForm) {
  return detail::iall_to_all(exec, x, *axis, split_dim, concat_dim, true);
}

/// \brief Non-blocking psum_scatter on `exec` (untiled: dimension `dim` has
/// the axis size).
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
Async<detail::dropped_t<V>> ipsum_scatter(const Exec& exec, const V& x, AxisRef axis, int dim = 0) {
  ProfilingRegion region("kpmap::ipsum_scatter", axis->name());
  if (region.traced()) region.note(detail::trace_args(x));
  auto out = detail::allocate<detail::dropped_t<V>>("kpmap::psum_scatter",
                                                    detail::scatter_extents(x, *axis, dim));
  transport::Pending pending;
  auto finish = detail::start_psum_scatter(exec, x, *axis, dim, false, out, &pending);
  return {out, detail::make_request(std::move(pending), std::move(finish))};
}

// Without an execution space: every instance is fenced first, then a default
// instance of the View's space runs the collective (see unnamed_instance).
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
Async<detail::stacked_t<V>> iall_gather(const V& x, AxisRef axis, int dim = 0) {
  return iall_gather(detail::unnamed_instance<typename V::execution_space>(), x, axis, dim);
}
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
Async<detail::owning_like_t<V>> iall_to_all(const V& x, AxisRef axis, int split_dim,
                                            int concat_dim) {
  return iall_to_all(detail::unnamed_instance<typename V::execution_space>(), x, axis, split_dim,
                     concat_dim);
}
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
Async<detail::owning_like_t<V>> iall_to_all(const V& x, AxisRef axis, int split_dim, int concat_dim,
                                            TiledForm t) {
  return iall_to_all(detail::unnamed_instance<typename V::execution_space>(), x, axis, split_dim,
                     concat_dim, t);
}
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
Async<detail::dropped_t<V>> ipsum_scatter(const V& x, AxisRef axis, int dim = 0) {
  return ipsum_scatter(detail::unnamed_instance<typename V::execution_space>(), x, axis, dim);
}

}  // namespace kpmap
