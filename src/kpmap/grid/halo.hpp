// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Persistent halo-exchange plans over a CartesianLayout (layout.hpp).
///
/// A HaloExchange is a plan for one set of fields: it packs the cells next to
/// each neighbour into persistent buffers with Kokkos kernels, sends all fields
/// to a neighbour in one message with non-blocking MPI, and unpacks what
/// arrives into the ghost cells. start() and finish() split the exchange so
/// that work on the interior overlaps the messages. Fields and local indices
/// follow layout.hpp's conventions.

#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/base/detail/mpi_datatype.hpp>
#include <kpmap/base/error.hpp>
#include <kpmap/base/policy.hpp>
#include <kpmap/collectives/collectives.hpp>
#include <kpmap/grid/detail/halo_plan.hpp>
#include <kpmap/grid/layout.hpp>
#include <kpmap/tools/profiling.hpp>
#include <kpmap/transport/buffer.hpp>

#include <mpi.h>
#include <Kokkos_Core.hpp>

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace kpmap {

/// \brief What a HaloExchange moves.
struct HaloOptions {
  /// Ghost layers to fill, 1 .. the layout's ghost width.
  int depth = 1;
  /// Fill edge and corner ghosts too (diagonal neighbours get their own
  /// messages), as 9- and 27-point stencils need; faces only otherwise.
  bool corners = false;
};

/// \brief A persistent halo-exchange plan for a fixed set of fields on a CartesianLayout.
///
/// Construction sizes the buffers once (device buffers, plus pinned host
/// mirrors when MPI cannot take device pointers); each exchange then packs,
/// sends, receives and unpacks without allocating. Every neighbour receives
/// one message holding all fields. Ghosts on the global boundary are left
/// untouched: physical boundary conditions belong to the caller.
///
/// start() and finish() are collective over the layout's communicator in the
/// sense that every rank must call them in the same order for the same plans
/// (each rank talks only to its neighbours). Between start() and finish()
/// the caller may read the fields anywhere and write owned cells that are
/// not in any neighbour's send box (the interior shrunk by `depth`), but must
/// not write ghosts.
template <class T = double, class ExecSpace = Kokkos::DefaultExecutionSpace>
class HaloExchange {
 public:
  using memory_space = typename ExecSpace::memory_space;
  using field_type = Field<T, memory_space>;

  /// Collective (see the class comment). The fields must have the layout's
  /// extents and stay allocated for the life of the plan.
  /// \throws kpmap::InputError for a bad depth, too many fields, or blocks
  /// thinner than the depth.
  HaloExchange(const CartesianLayout& layout, const std::vector<field_type>& fields,
               HaloOptions options = {});

  HaloExchange(const HaloExchange&) = delete;
  HaloExchange& operator=(const HaloExchange&) = delete;

  /// \brief Waits for an exchange still in flight: MPI must never be left
  /// writing into freed buffers.
  ~HaloExchange() {
    if (!requests_.empty()) {
      MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
    }
  }

  /// \brief Packs the send boxes on `exec` and posts every message: pack(),
  /// a fence of `exec`, post().
  void start(const ExecSpace& exec = ExecSpace());

  /// \brief The first half of start(): enqueues on `exec` the packing of the
  /// send boxes (and their copy to the staging buffers), without waiting. A
  /// caller that must fence `exec` for MPI anyway (a solver's local sums)
  /// fences once for both, then calls post().
  void pack(const ExecSpace& exec = ExecSpace());

  /// \brief The second half of start(): posts every message. The instance
  /// pack() ran on must have been fenced since. finish() completes it.
  void post();

  /// \brief True between post() (or start()) and finish(): messages are posted.
  bool in_flight() const noexcept { return !requests_.empty(); }

  /// \brief Waits for the messages and unpacks them into the ghosts on `exec`.
  /// Work enqueued on `exec` afterwards sees the ghosts.
  void finish(const ExecSpace& exec = ExecSpace());

  /// \brief start() then finish().
  void exchange(const ExecSpace& exec = ExecSpace()) {
    const ProfilingRegion region("kpmap::HaloExchange::exchange", trace::Track::communication);
    start(exec);
    finish(exec);
  }

  const CartesianLayout& layout() const noexcept { return layout_; }
  const HaloOptions& options() const noexcept { return options_; }
  /// \brief Number of neighbours this rank exchanges with.
  std::size_t neighbor_count() const noexcept { return neighbors_.size(); }
  /// \brief True when buffers go through pinned host memory.
  bool staged() const noexcept { return send_mpi_.staged(); }

 private:
  // One kernel for every neighbour: a thread per cell of the index list.
  template <bool Pack>
  void copy(const ExecSpace& exec, const Kokkos::View<T*, memory_space>& buffer,
            const Kokkos::View<detail::HaloCell*, memory_space>& cells, const char* label) {
    if (cells.extent(0) == 0) return;
    Kokkos::parallel_for(label, Kokkos::RangePolicy<ExecSpace>(exec, 0, cells.extent(0)),
                         detail::HaloCopy<T, memory_space, Pack>{fields_, buffer, cells,
                                                                 static_cast<int>(nfields_)});
  }

  CartesianLayout layout_;
  HaloOptions options_;
  std::size_t nfields_;
  Kokkos::Array<field_type, detail::max_halo_fields> fields_;
  std::vector<detail::HaloNeighbor> neighbors_;
  Kokkos::View<T*, memory_space> send_;
  Kokkos::View<T*, memory_space> recv_;
  // The cells each kernel walks (detail::halo_cells).
  Kokkos::View<detail::HaloCell*, memory_space> send_cells_;
  Kokkos::View<detail::HaloCell*, memory_space> recv_cells_;
  transport::MpiBuffer<T, memory_space> send_mpi_;  // how send_ reaches MPI
  transport::MpiBuffer<T, memory_space> recv_mpi_;
  std::vector<MPI_Request> requests_;
};

// Defined below the class so that, under `extern template`, a program's
// files do not compile them again.
template <class T, class ExecSpace>
HaloExchange<T, ExecSpace>::HaloExchange(const CartesianLayout& layout,
                                         const std::vector<field_type>& fields, HaloOptions options)
    : layout_(layout), options_(options), nfields_(fields.size()) {
  if (fields.empty() || fields.size() > static_cast<std::size_t>(detail::max_halo_fields)) {
    throw InputError("kpmap::HaloExchange: a plan moves 1 to " +
                     std::to_string(detail::max_halo_fields) + " fields, got " +
                     std::to_string(fields.size()));
  }
  for (std::size_t f = 0; f < fields.size(); ++f) {
    for (int d = 0; d < 3; ++d) {
      if (fields[f].extent(2 - d) != layout.extent(d)) {
        throw Error("kpmap::HaloExchange: field '" + fields[f].label() +
                    "' does not have the layout's extents");
      }
    }
    // The copy kernels address each field's cells by one offset (HaloCell).
    if (!fields[f].span_is_contiguous()) {
      throw Error("kpmap::HaloExchange: field '" + fields[f].label() +
                  "' is not contiguous (padded rows or a strided subview)");
    }
    fields_[f] = fields[f];
  }
  neighbors_ = detail::plan_neighbors(layout, options, nfields_, layout.next_tag_base());
  std::size_t total = 0;
  for (const auto& n : neighbors_) total += n.cells * nfields_;
  send_ = Kokkos::View<T*, memory_space>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::HaloExchange::send"), total);
  recv_ = Kokkos::View<T*, memory_space>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::HaloExchange::recv"), total);
  // The transport's decision, as for every collective: device memory goes
  // to MPI as is when MPI is GPU-aware, else through pinned leases of the
  // one staging pool, held for the life of the plan.
  send_mpi_ = transport::make_buffer<T, memory_space>(send_.data(), total);
  recv_mpi_ = transport::make_buffer<T, memory_space>(recv_.data(), total);
  send_cells_ = detail::halo_cells<memory_space>(neighbors_, true, layout_,
                                                 "kpmap::HaloExchange::send_cells");
  recv_cells_ = detail::halo_cells<memory_space>(neighbors_, false, layout_,
                                                 "kpmap::HaloExchange::recv_cells");
}

template <class T, class ExecSpace>
void HaloExchange<T, ExecSpace>::start(const ExecSpace& exec) {
  const ProfilingRegion region("kpmap::HaloExchange::start", trace::Track::communication);
  pack(exec);
  // MPI reads the send buffers from its own threads or DMA engines and knows
  // nothing of Kokkos' asynchronous kernels and copies: they must be done.
  detail::fence(exec, "kpmap::HaloExchange: packed buffers ready for MPI");
  post();
}

template <class T, class ExecSpace>
void HaloExchange<T, ExecSpace>::pack(const ExecSpace& exec) {
  if (!requests_.empty()) throw Error("kpmap::HaloExchange::pack: an exchange is in flight");
  copy<true>(exec, send_, send_cells_, "kpmap::HaloExchange::pack");
  transport::to_mpi(exec, send_mpi_);
}

template <class T, class ExecSpace>
void HaloExchange<T, ExecSpace>::post() {
  if (!requests_.empty()) throw Error("kpmap::HaloExchange::post: an exchange is in flight");
  detail::post_halo_messages(neighbors_, nfields_, detail::mpi_datatype<T>(), recv_mpi_.mpi,
                             send_mpi_.mpi, sizeof(T), layout_.comm(), requests_);
}

template <class T, class ExecSpace>
void HaloExchange<T, ExecSpace>::finish(const ExecSpace& exec) {
  const ProfilingRegion region("kpmap::HaloExchange::finish", trace::Track::communication);
  if (requests_.empty() && !neighbors_.empty()) {
    throw Error("kpmap::HaloExchange::finish: no exchange was started");
  }
  if (!requests_.empty()) {
    const int rc =
        MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
    requests_.clear();
    if (rc != MPI_SUCCESS) throw Error("kpmap::HaloExchange: MPI_Waitall failed");
  }
  transport::from_mpi(exec, recv_mpi_);
  copy<false>(exec, recv_, recv_cells_, "kpmap::HaloExchange::unpack");
}

// The plan kpmap-heat and its solvers use, compiled once (grid/halo.cpp).
extern template class HaloExchange<double, Kokkos::DefaultExecutionSpace>;

}  // namespace kpmap
