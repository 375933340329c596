// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Every call whose spelling differs between Kokkos 3.4 (Debian's) and
/// Kokkos 4.x lives here, so the rest of kpmap reads as one version.

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime_api.h>
#elif defined(KOKKOS_ENABLE_HIP)
#include <hip/hip_runtime_api.h>
#endif

namespace kpmap::detail {

/// \brief "major.minor.patch" of the Kokkos kpmap was compiled against.
inline std::string kokkos_version_string() {
  const int patch = KOKKOS_VERSION % 100;
  return std::to_string(KOKKOS_VERSION / 10000) + "." + std::to_string(KOKKOS_VERSION / 100 % 100) +
         "." + (patch < 10 ? "0" : "") + std::to_string(patch);
}

/// \brief Number of GPUs this process can see before Kokkos is initialised;
/// 0 when Kokkos has no GPU backend (the "device" is then the host).
inline int visible_device_count() {
#if defined(KOKKOS_ENABLE_CUDA)
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
#elif defined(KOKKOS_ENABLE_HIP)
  int n = 0;
  if (hipGetDeviceCount(&n) != hipSuccess) return 0;
  return n;
#else
  return 0;
#endif
}

/// \brief The device Kokkos runs on after initialisation (-1 on host backends).
inline int kokkos_device_id(int chosen) {
#if KOKKOS_VERSION >= 40100
  (void)chosen;
  return Kokkos::device_id();
#else
  return chosen;
#endif
}

/// \brief Whether Kokkos' host backend runs threads (OpenMP, Threads, HPX),
/// whose count kpmap::Runtime chooses.
#if defined(KOKKOS_ENABLE_OPENMP) || defined(KOKKOS_ENABLE_THREADS) || defined(KOKKOS_ENABLE_HPX)
inline constexpr bool threaded_host_backend = true;
#else
inline constexpr bool threaded_host_backend = false;
#endif

/// \brief Kokkos' command-line flag for the host thread count
/// (`--kokkos-threads` until 3.6, `--kokkos-num-threads` since 3.7).
inline std::string num_threads_flag(int n) {
#if KOKKOS_VERSION >= 30700
  return "--kokkos-num-threads=" + std::to_string(n);
#else
  return "--kokkos-threads=" + std::to_string(n);
#endif
}

/// \brief Tells a loaded Kokkos Tools library of a host synchronisation that
/// Kokkos before 3.6 does not report: an instance fence, or a reduction into
/// a host value (which waits for its kernel), or with `global` a fence of
/// every instance. Kokkos 3.6 and later report all three themselves; there
/// this does nothing. The device id is what Kokkos 4 passes: instance bits 0
/// for a global fence, an instance's own id (1 and up) otherwise.
inline void report_host_sync([[maybe_unused]] const char* label,
                             [[maybe_unused]] bool global = false) {
#if KOKKOS_VERSION < 30600
  if (Kokkos::Tools::profileLibraryLoaded()) {
    std::uint64_t handle = 0;
    Kokkos::Tools::beginFence(label, global ? 0u : 1u, &handle);
    Kokkos::Tools::endFence(handle);
  }
#endif
}

/// \brief Fences one execution space instance with a label (labels arrived in
/// Kokkos 3.6), which a Kokkos Tools library sees with every Kokkos.
template <class ExecSpace>
void fence(const ExecSpace& exec, [[maybe_unused]] const char* label) {
#if KOKKOS_VERSION >= 30600
  exec.fence(label);
#else
  report_host_sync(label);
  exec.fence();
#endif
}

/// Whether every execution space of this Kokkos build finishes a kernel
/// before its launch returns (Serial and OpenMP do; a GPU's, HPX's and the
/// Threads backend's may not): then nothing launched from this thread is
/// still running when a global fence would wait for it.
inline constexpr bool launches_complete =
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP) || defined(KOKKOS_ENABLE_SYCL) || \
    defined(KOKKOS_ENABLE_OPENMPTARGET) || defined(KOKKOS_ENABLE_OPENACC) ||                    \
    defined(KOKKOS_ENABLE_HPX) || defined(KOKKOS_ENABLE_THREADS)
    false;
#else
    true;
#endif

/// \brief Waits for the work of every execution space instance (a global
/// `Kokkos::fence`), with a label as in fence(): for data that any instance
/// may have written. Where launches complete (a Serial or OpenMP build) and
/// no Kokkos Tools library listens, there is nothing to wait for and the
/// fence (about 20 ns of Kokkos' bookkeeping, a collective's
/// per-call cost at a few bytes) is skipped; a listening tool still sees
/// every fence, so its counts do not depend on this.
inline void fence_all([[maybe_unused]] const char* label) {
  if constexpr (launches_complete) {
    if (!Kokkos::Tools::profileLibraryLoaded()) return;
  }
#if KOKKOS_VERSION >= 30600
  Kokkos::fence(label);
#else
  report_host_sync(label, /*global=*/true);
  Kokkos::fence();
#endif
}

/// \brief An execution space instance of its own beside `exec` (a new CUDA or
/// HIP stream; on host backends what Kokkos' partition_space gives), for work
/// that should overlap work on `exec`. Kokkos 3.4 has no partition_space:
/// there it is `exec` itself.
template <class ExecSpace>
ExecSpace independent_instance(const ExecSpace& exec) {
#if KOKKOS_VERSION >= 40000
  return Kokkos::Experimental::partition_space(exec, 1).front();
#else
  return exec;
#endif
}

/// \brief Kokkos' device-callable math (sqrt, log, cos, ...): in namespace
/// Kokkos since 3.6, in Kokkos::Experimental before.
#if KOKKOS_VERSION >= 30600
namespace math = ::Kokkos;
#else
namespace math = ::Kokkos::Experimental;
#endif

/// \brief Whether this compilation multiplies and adds in one instruction
/// (x86-64 with FMA, Arm, every GPU): multiply_add then rounds once.
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__) || defined(__FP_FAST_FMA) || \
    defined(__FMA__) || defined(__ARM_FEATURE_FMA)
inline constexpr bool fused_multiply_add = true;
#else
inline constexpr bool fused_multiply_add = false;
#endif

/// \brief a b + c, rounded once where the processor has a fused
/// multiply-add (fused_multiply_add), else twice, and never left to the
/// compiler: it contracts `a * b + c` into one instruction in one kernel and
/// not in another (it depends on the code around it, the vectoriser and
/// -mtune), which changes the last bit. Two code paths that must agree bit
/// for bit make each product-sum through this. A 16-bit T: a * b + c.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T multiply_add(T a, T b, T c) {
  if constexpr (fused_multiply_add && (std::is_same_v<T, double> || std::is_same_v<T, float>)) {
#if KOKKOS_VERSION >= 40000
    return ::Kokkos::fma(a, b, c);
#elif defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
    return ::fma(a, b, c);
#else
    return std::fma(a, b, c);
#endif
  } else {
    return a * b + c;
  }
}

/// \brief Whether this Kokkos build has a real 16-bit floating-point type:
/// Kokkos::Experimental::half_t is IEEE binary16 under CUDA, HIP and SYCL,
/// and plain float on host-only builds (Kokkos 3.4 and 4.x alike).
#if defined(KOKKOS_HALF_T_IS_FLOAT) && !KOKKOS_HALF_T_IS_FLOAT
inline constexpr bool has_half_type = true;
#else
inline constexpr bool has_half_type = false;
#endif
using half = Kokkos::Experimental::half_t;

/// \brief Host memory that GPUs can reach by DMA: the staging target for
/// device buffers when MPI is not GPU-aware. Plain host memory elsewhere.
#if defined(KOKKOS_ENABLE_CUDA)
using PinnedHostSpace = Kokkos::CudaHostPinnedSpace;
#elif defined(KOKKOS_ENABLE_HIP) && KOKKOS_VERSION >= 40000
using PinnedHostSpace = Kokkos::HIPHostPinnedSpace;
#elif defined(KOKKOS_ENABLE_HIP)
using PinnedHostSpace = Kokkos::Experimental::HIPHostPinnedSpace;
#else
using PinnedHostSpace = Kokkos::HostSpace;
#endif

}  // namespace kpmap::detail
