// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief How one flat buffer reaches MPI: the transport's per-call decision.
///
/// Internal. Host-accessible memory goes straight to MPI. Device memory goes
/// straight to MPI when MPI is GPU-aware, else through a lease of the pinned
/// staging pool. KPMAP_STAGING=always stages every buffer, so the staged path
/// runs on machines without a GPU. Collectives, pmap and the halo exchange
/// all come through here; none of them knows which path a call took.

#include <kpmap/base/detail/backend.hpp>
#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/base/detail/view_utils.hpp>
#include <kpmap/transport/buffer_pool.hpp>
#include <kpmap/transport/gpu_aware.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace kpmap::transport {

template <class M>
inline constexpr bool host_accessible_v =
    Kokkos::SpaceAccessibility<Kokkos::HostSpace, M>::accessible;

/// \brief Whether buffers in memory space M go through the staging pool.
template <class M>
bool must_stage() {
  const auto& g = gpu_awareness();
  if (g.staging_always) return true;
  if constexpr (detail::host_reaches_v<M>) {
    return false;
  } else if constexpr (host_accessible_v<M>) {
    return true;  // device paths: host memory staged as device memory without GPU-aware MPI
  } else {
    return !g.gpu_aware;
  }
}

/// \brief must_stage<M>() for an MPI call whose operation runs on the host
/// (`host_op`: kpmap's own reductions, detail::own_mpi_op), which must not be
/// handed memory that the host cannot reach, GPU-aware MPI or not.
template <class M>
bool must_stage_for(bool host_op) {
  if constexpr (detail::host_reaches_v<M>) {
    return must_stage<M>();
  } else {
    return host_op || must_stage<M>();
  }
}

/// \brief A flat buffer of `count` elements in memory space M as MPI sees
/// it: `dev`, over a View's own memory or a pooled scratch buffer, and, when
/// the transport stages, its pinned host shadow (the memory MPI reads and writes).
template <class T, class M>
struct MpiBuffer {
  detail::flat_view_t<T, M> dev;
  typename ScratchPool<M>::Lease scratch;  ///< dev's memory when it is not the caller's
  StagingPool::Lease lease;                ///< the pinned shadow, when staged
  T* mpi = nullptr;
  std::size_t count = 0;

  bool staged() const { return lease.data() != nullptr; }
  detail::flat_view_t<T, detail::PinnedHostSpace> pinned() const {
    return detail::flat_view_t<T, detail::PinnedHostSpace>(static_cast<T*>(lease.data()), count);
  }
};

/// \brief A buffer of n elements of M: over `alias` when given, else a pooled
/// scratch buffer (no allocation once the pool has settled). `host_op`: the
/// MPI call's operation runs on the host (must_stage_for).
template <class T, class M>
MpiBuffer<T, M> make_buffer(T* alias, std::size_t n, bool host_op = false) {
  MpiBuffer<T, M> b;
  b.count = n;
  if (alias != nullptr) {
    b.dev = detail::flat_view_t<T, M>(alias, n);
  } else {
    b.scratch = ScratchPool<M>::instance().acquire(n * sizeof(T));
    b.dev = detail::flat_view_t<T, M>(static_cast<T*>(b.scratch.data()), n);
  }
  if (must_stage_for<M>(host_op)) {
    b.lease = StagingPool::instance().acquire(n * sizeof(T));
    b.mpi = static_cast<T*>(b.lease.data());
  } else {
    b.mpi = b.dev.data();
  }
  return b;
}

/// \brief Send side: copies `b.dev` to its pinned shadow when staged.
/// Asynchronous on `exec`: fence before MPI reads.
template <class Exec, class T, class M>
void to_mpi(const Exec& exec, const MpiBuffer<T, M>& b) {
  if (b.staged()) Kokkos::deep_copy(exec, b.pinned(), b.dev);
}

/// \brief Receive side: copies what MPI wrote to the pinned shadow into `b.dev`.
/// Asynchronous on `exec`.
template <class Exec, class T, class M>
void from_mpi(const Exec& exec, const MpiBuffer<T, M>& b) {
  if (b.staged()) Kokkos::deep_copy(exec, b.dev, b.pinned());
}

}  // namespace kpmap::transport
