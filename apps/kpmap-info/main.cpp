// SPDX-License-Identifier: BSD-3-Clause
// kpmap-info: what kpmap, Kokkos and MPI see on this job, rank by rank.
//
//   mpiexec -n 4 kpmap-info
//
// Rank 0 prints the versions, the backends, the execution and memory spaces,
// the MPI library, the rank and node counts, each rank's host and device, and
// whether MPI gets device pointers directly (GPU-aware) and how that was decided,
// and the host BLAS: its kernel set, who chose it, and the CPU's vector features.

#include <kpmap/apps/options.hpp>

#include <kpmap/base/detail/backend.hpp>
#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/kpmap.hpp>

#include <Kokkos_Core.hpp>

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string enabled_backends() {
  std::string s;
  auto add = [&s](const char* name) { s += (s.empty() ? "" : " ") + std::string(name); };
#if defined(KOKKOS_ENABLE_SERIAL)
  add("Serial");
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
  add("OpenMP");
#endif
#if defined(KOKKOS_ENABLE_THREADS)
  add("Threads");
#endif
#if defined(KOKKOS_ENABLE_CUDA)
  add("Cuda");
#endif
#if defined(KOKKOS_ENABLE_HIP)
  add("HIP");
#endif
#if defined(KOKKOS_ENABLE_SYCL)
  add("SYCL");
#endif
  return s;
}

std::string mpi_library_version() {
  char buf[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(buf, &len);
  std::string s(buf, static_cast<std::size_t>(len));
  // Keep the first line: Open MPI appends build details.
  if (auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  while (!s.empty() && (s.back() == '\0' || s.back() == ' ' || s.back() == ',')) s.pop_back();
  return s;
}

std::string thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE:
      return "MPI_THREAD_MULTIPLE";
    default:
      return std::to_string(level);
  }
}

// Collective: every rank's line, in rank order, on rank 0 (empty elsewhere).
std::vector<std::string> gather_lines(const kpmap::Runtime& rt, const std::string& line) {
  int len = static_cast<int>(line.size());
  std::vector<int> lens(rt.size()), displs(rt.size());
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, rt.world());
  int total = 0;
  for (int r = 0; r < rt.size(); ++r) {
    displs[r] = total;
    total += lens[r];
  }
  std::string all(rt.rank() == 0 ? static_cast<std::size_t>(total) : 0, '\0');
  MPI_Gatherv(line.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, 0,
              rt.world());
  std::vector<std::string> out;
  if (rt.rank() == 0) {
    for (int r = 0; r < rt.size(); ++r) out.push_back(all.substr(displs[r], lens[r]));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  return kpmap::run(argc, argv, [&](kpmap::Runtime& rt) {
    if (auto code = kpmap::apps::parse_info_command_line(
            "kpmap-info: report what kpmap, Kokkos and MPI see on every rank of this job.\n"
            "Run it the way you run your application, e.g. `mpiexec -n 4 kpmap-info`.",
            std::string("kpmap ") + kpmap::version_string, argc, argv, rt)) {
      return *code;
    }

    char host[MPI_MAX_PROCESSOR_NAME];
    int host_len = 0;
    MPI_Get_processor_name(host, &host_len);
    std::ostringstream mine;
    mine << "  rank " << rt.rank() << ": host " << std::string(host, host_len) << ", node "
         << rt.node_index() << " local rank " << rt.node_rank() << "/" << rt.node_size()
         << ", device ";
    if (rt.device_id() < 0) {
      mine << "host (" << Kokkos::DefaultExecutionSpace::name() << ", concurrency "
           << Kokkos::DefaultExecutionSpace().concurrency() << ")";
    } else {
      mine << Kokkos::DefaultExecutionSpace::name() << " " << rt.device_id();
    }
    mine << " [" << rt.device_binding() << "], host threads: " << rt.host_threads().reason;
    const auto lines = gather_lines(rt, mine.str());

    if (rt.rank() == 0) {
      const auto& g = rt.gpu_awareness();
      std::cout << "kpmap " << kpmap::version_string << "\n"
                << "Kokkos " << kpmap::detail::kokkos_version_string()
                << ", backends: " << enabled_backends() << "\n"
                << "  default execution space: " << Kokkos::DefaultExecutionSpace::name() << "\n"
                << "  default memory space:    "
                << Kokkos::DefaultExecutionSpace::memory_space::name() << "\n"
                << "MPI: " << mpi_library_version() << "\n"
                << "  thread level: " << thread_level_name(rt.mpi_thread_level_provided()) << "\n"
                << "BLAS: " << kpmap::detail::describe(rt.blas_kernels()) << "\n"
                << "  CPU: " << rt.blas_kernels().cpu << "\n";
      if (!rt.blas_kernels().note.empty()) {
        std::cout << "  note: " << rt.blas_kernels().note << "\n";
      }
      std::cout << "ranks: " << rt.size() << " on " << rt.node_count() << " node(s)\n";
      for (const auto& l : lines) std::cout << l << "\n";
      std::cout << "GPU-aware MPI: " << (g.gpu_aware ? "yes" : "no") << " (" << g.reason << ")\n"
                << "transport: "
                << (g.staging_always ? "every buffer staged through pinned host memory"
                    : g.device_memory_is_host_accessible && kpmap::detail::device_paths
                        ? "every buffer staged through pinned host memory, as device memory "
                          "is without a GPU-aware MPI (KPMAP_DEVICE_PATHS)"
                    : g.device_memory_is_host_accessible ? "buffers go straight to MPI"
                    : g.gpu_aware                        ? "device buffers go straight to MPI"
                                  : "device buffers staged through pinned host memory")
                << "\n"
                << "branches: "
                << (kpmap::detail::device_paths
                        ? "the GPU's on this host backend (KPMAP_DEVICE_PATHS): MDRange loops, "
                          "staged MPI buffers, host copies for checkpoints"
                    : g.device_memory_is_host_accessible
                        ? "the host's: row loops, MPI buffers and checkpoints in place"
                        : "the GPU's")
                << "\n";
    }
    return 0;
  });
}
