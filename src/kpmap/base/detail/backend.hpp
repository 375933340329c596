// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Which branches kpmap takes on this backend: the one place that
/// decides between a host shortcut and the path a GPU takes.
///
/// On host backends kpmap takes shortcuts a GPU cannot: a parallel loop over
/// rows with a vector loop inside instead of an MDRange or team policy, and
/// host memory handed straight to MPI and to HDF5 instead of through a staging
/// or mirror copy. A build configured with KPMAP_DEVICE_PATHS=ON takes the
/// GPU's branches on every backend, so a CPU-only CI compiles and runs them
/// (docs/portability.md). Code asks the three constants below; nothing else tests
/// the option or the backend.

#include <kpmap/base/config.hpp>

#include <Kokkos_Core.hpp>

#include <type_traits>

namespace kpmap::detail {

/// \brief True in a build configured with KPMAP_DEVICE_PATHS=ON.
inline constexpr bool device_paths = KPMAP_DEVICE_PATHS != 0;

/// \brief Whether work on execution space E may take the host shortcut:
/// E is the host's default execution space and device paths are off.
template <class E>
inline constexpr bool host_shortcut_v =
    !device_paths && std::is_same_v<E, Kokkos::DefaultHostExecutionSpace>;

/// \brief Whether host code (MPI, HDF5, a loop on the host) may read and write
/// memory space M in place: M is host-accessible and device paths are off.
/// Otherwise a copy goes between (a staging buffer, a host mirror).
template <class M>
inline constexpr bool host_reaches_v =
    !device_paths && Kokkos::SpaceAccessibility<Kokkos::HostSpace, M>::accessible;

}  // namespace kpmap::detail
