// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/transport/gpu_aware.hpp>

#include <kpmap/base/error.hpp>

#include <mpi.h>
#include <Kokkos_Core.hpp>

#if defined(OPEN_MPI) && OPEN_MPI && __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <utility>

namespace kpmap::transport {

namespace {

std::optional<std::string> getenv_opt(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

[[maybe_unused]] bool env_is_true(const char* name) {
  auto v = getenv_opt(name);
  if (!v) return false;
  const std::string s = lower(*v);
  return s == "1" || s == "yes" || s == "true" || s == "on";
}

}  // namespace

MpiGpuSupport query_mpi_gpu_support() {
#if defined(KOKKOS_ENABLE_CUDA)
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  if (MPIX_Query_cuda_support() == 1) {
    return {true, "Open MPI reports CUDA support (MPIX_Query_cuda_support() = 1)"};
  }
  return {false,
          "Open MPI was built with CUDA support but reports it off at run time "
          "(MPIX_Query_cuda_support() = 0)"};
#elif defined(OPEN_MPI) && OPEN_MPI
  return {false, "this Open MPI was built without CUDA support (MPIX_CUDA_AWARE_SUPPORT is 0)"};
#else
  if (env_is_true("MPICH_GPU_SUPPORT_ENABLED")) {
    return {true, "MPICH_GPU_SUPPORT_ENABLED=1 (Cray MPICH)"};
  }
  if (env_is_true("MV2_USE_CUDA")) return {true, "MV2_USE_CUDA=1 (MVAPICH2)"};
  return {false,
          "the MPI library gives no sign of CUDA support "
          "(no MPIX_Query_cuda_support, MPICH_GPU_SUPPORT_ENABLED or MV2_USE_CUDA)"};
#endif
#elif defined(KOKKOS_ENABLE_HIP)
#if defined(MPIX_ROCM_AWARE_SUPPORT) && MPIX_ROCM_AWARE_SUPPORT
  if (MPIX_Query_rocm_support() == 1) {
    return {true, "Open MPI reports ROCm support (MPIX_Query_rocm_support() = 1)"};
  }
  return {false, "Open MPI reports ROCm support off at run time (MPIX_Query_rocm_support() = 0)"};
#elif defined(OPEN_MPI) && OPEN_MPI
  return {false, "this Open MPI was built without ROCm support"};
#else
  if (env_is_true("MPICH_GPU_SUPPORT_ENABLED")) {
    return {true, "MPICH_GPU_SUPPORT_ENABLED=1 (Cray MPICH)"};
  }
  return {false,
          "the MPI library gives no sign of ROCm support "
          "(no MPIX_Query_rocm_support or MPICH_GPU_SUPPORT_ENABLED)"};
#endif
#else
  return {false, "no GPU backend is enabled in Kokkos"};
#endif
}

GpuAwareness decide_gpu_awareness(const std::optional<std::string>& gpu_aware_env,
                                  const std::optional<std::string>& staging_env,
                                  bool device_memory_is_host_accessible,
                                  const MpiGpuSupport& mpi_support) {
  GpuAwareness g;
  g.device_memory_is_host_accessible = device_memory_is_host_accessible;

  const std::string staging = staging_env ? lower(*staging_env) : "auto";
  if (staging == "always") {
    g.staging_always = true;
  } else if (staging != "auto" && !staging.empty()) {
    throw InputError("environment variable KPMAP_STAGING='" + *staging_env +
                     "' is not allowed: expected 'auto' or 'always'");
  }

  const std::string mode = gpu_aware_env ? lower(*gpu_aware_env) : "auto";
  if (mode == "on" || mode == "1" || mode == "yes") {
    g.gpu_aware = true;
    g.reason = "forced on by KPMAP_GPU_AWARE=" + *gpu_aware_env;
  } else if (mode == "off" || mode == "0" || mode == "no") {
    g.gpu_aware = false;
    g.reason = "forced off by KPMAP_GPU_AWARE=" + *gpu_aware_env;
  } else if (mode == "auto" || mode.empty()) {
    g.gpu_aware = mpi_support.supported;
    g.reason = "auto: " + mpi_support.reason;
  } else {
    throw InputError("environment variable KPMAP_GPU_AWARE='" + *gpu_aware_env +
                     "' is not allowed: expected 'auto', 'on' or 'off'");
  }
  if (device_memory_is_host_accessible) {
    g.reason +=
        "; not needed: the default memory space is host-accessible, so buffers go "
        "straight to MPI";
  }
  if (g.staging_always) g.reason += "; KPMAP_STAGING=always stages every buffer";
  return g;
}

GpuAwareness detect_gpu_awareness() {
  constexpr bool host_accessible =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                 Kokkos::DefaultExecutionSpace::memory_space>::accessible;
  return decide_gpu_awareness(getenv_opt("KPMAP_GPU_AWARE"), getenv_opt("KPMAP_STAGING"),
                              host_accessible, query_mpi_gpu_support());
}

namespace {
GpuAwareness g_gpu_awareness;
}  // namespace

const GpuAwareness& gpu_awareness() noexcept { return g_gpu_awareness; }

void set_gpu_awareness(GpuAwareness g) { g_gpu_awareness = std::move(g); }

void set_staging_always(bool on) noexcept { g_gpu_awareness.staging_always = on; }

}  // namespace kpmap::transport
