// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief How kpmap decides whether MPI may be handed device pointers.
///
/// Internal to the transport layer; the public API never exposes it. Two
/// environment variables steer it:
///  - `KPMAP_GPU_AWARE=auto|on|off` (default auto: ask the MPI library);
///  - `KPMAP_STAGING=auto|always` (always: stage even host memory through the
///    pinned pool, so CI exercises that path on machines without a GPU).

#include <optional>
#include <string>

namespace kpmap::transport {

/// \brief The transport decision for this process, made once at start-up.
struct GpuAwareness {
  bool device_memory_is_host_accessible = true;  ///< no GPU backend: nothing to decide
  bool gpu_aware = false;                        ///< device pointers may be passed straight to MPI
  bool staging_always = false;                   ///< KPMAP_STAGING=always
  std::string reason;  ///< how the decision was made, for kpmap-info and logs
};

/// \brief What the MPI library says about GPU support, found by querying it.
struct MpiGpuSupport {
  bool supported = false;
  std::string reason;
};

/// \brief Asks the MPI library whether it accepts device pointers for the GPU
/// backend Kokkos was built with (Open MPI's MPIX_Query_cuda_support and
/// MPIX_Query_rocm_support, Cray MPICH's MPICH_GPU_SUPPORT_ENABLED, MVAPICH's
/// MV2_USE_CUDA). Call after MPI_Init.
MpiGpuSupport query_mpi_gpu_support();

/// \brief Pure decision logic, separated from the environment so it can be
/// tested. `gpu_aware_env` and `staging_env` are the values of
/// KPMAP_GPU_AWARE and KPMAP_STAGING (nullopt when unset).
/// \throws kpmap::InputError naming the variable when a value is not allowed.
GpuAwareness decide_gpu_awareness(const std::optional<std::string>& gpu_aware_env,
                                  const std::optional<std::string>& staging_env,
                                  bool device_memory_is_host_accessible,
                                  const MpiGpuSupport& mpi_support);

/// \brief Reads the environment and the MPI library and decides. Call after MPI_Init.
GpuAwareness detect_gpu_awareness();

/// \brief The decision in force for this process: set once by kpmap::Runtime
/// at start-up (set_gpu_awareness), read by every call that moves a buffer.
const GpuAwareness& gpu_awareness() noexcept;
void set_gpu_awareness(GpuAwareness g);
/// \brief Turns KPMAP_STAGING=always on or off from now on (benchmarks
/// compare the two paths). Every rank must make the same choice.
void set_staging_always(bool on) noexcept;

}  // namespace kpmap::transport
