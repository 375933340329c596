// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/runtime/memory.hpp>

#include <kpmap/base/error.hpp>
#include <kpmap/runtime/runtime.hpp>
#include <kpmap/transport/mpi_ops.hpp>

#include <Kokkos_Core.hpp>
#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#elif defined(KOKKOS_ENABLE_HIP)
#include <hip/hip_runtime.h>
#endif

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <sys/resource.h>
#include <unistd.h>
#include <sstream>

namespace kpmap {

namespace {

constexpr bool device_is_host =
    Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                               Kokkos::DefaultExecutionSpace::memory_space>::accessible;

// The first number in `path` (bytes), or -1 when the file is missing or says "max".
double read_number(const char* path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return -1;
  char* end = nullptr;
  const double v = std::strtod(word.c_str(), &end);
  return end != word.c_str() ? v : -1;
}

// MemAvailable in bytes, or -1.
double mem_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kib * 1024.0;
  }
  return -1;
}

// What the cgroup lets this process still allocate, or -1 when unlimited.
double cgroup_room() {
  double limit = read_number("/sys/fs/cgroup/memory.max");  // cgroup v2
  double used = read_number("/sys/fs/cgroup/memory.current");
  if (limit < 0) {
    limit = read_number("/sys/fs/cgroup/memory/memory.limit_in_bytes");  // cgroup v1
    used = read_number("/sys/fs/cgroup/memory/memory.usage_in_bytes");
    if (limit >= 1e18) limit = -1;  // v1 writes "unlimited" as a huge number
  }
  if (limit < 0) return -1;
  return std::max(0.0, limit - std::max(0.0, used));
}

// What this process's address-space limit (RLIMIT_AS, `ulimit -v`) leaves
// it beyond its present size, or -1 when unlimited. Per process, not shared.
double address_space_room() {
  rlimit lim{};
  if (getrlimit(RLIMIT_AS, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return -1;
  std::ifstream in("/proc/self/statm");
  double pages = 0;
  if (!(in >> pages)) pages = 0;
  const double size = pages * static_cast<double>(sysconf(_SC_PAGESIZE));
  return std::max(0.0, static_cast<double>(lim.rlim_cur) - size);
}

// Ranks of `comm` on this node (and, with `color` >= 0, with the same color).
int ranks_sharing(MPI_Comm comm, int color) {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm same = MPI_COMM_NULL;
  MPI_Comm_split(node, color < 0 ? 0 : color, 0, &same);
  int n = 1;
  MPI_Comm_size(same, &n);
  MPI_Comm_free(&same);
  MPI_Comm_free(&node);
  return n;
}

std::string shared_by(int ranks, const char* where) {
  return ranks > 1 ? " shared by " + std::to_string(ranks) + " ranks " + where : "";
}

}  // namespace

std::string format_bytes(double bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (std::abs(bytes) >= 1024.0 && u < 6) {
    bytes /= 1024.0;
    ++u;
  }
  char text[48];
  std::snprintf(text, sizeof text, u == 0 ? "%.0f %s" : "%.3g %s", bytes, units[u]);
  return text;
}

double parse_bytes(const std::string& text, const std::string& what) {
  const char* s = text.c_str();
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  double scale = 1;
  std::string suffix(end == nullptr ? "" : end);
  if (!suffix.empty()) {
    static const std::string letters = "KMGT";
    const auto at = letters.find(static_cast<char>(std::toupper(suffix[0])));
    const bool tail_ok = suffix.size() == 1 || suffix.substr(1) == "B" ||
                         suffix.substr(1) == "iB" || suffix.substr(1) == "b";
    if (at == std::string::npos || !tail_ok) end = const_cast<char*>(s);  // refused below
    scale = std::pow(1024.0, static_cast<double>(at + 1));
  }
  if (end == s || !std::isfinite(v) || v <= 0) {
    throw InputError(what + "='" + text +
                         "': expected a positive size in bytes, with an optional K, M, G or T "
                         "suffix (powers of 1024), e.g. 512M",
                     ErrorScope::all_ranks);
  }
  return v * scale;
}

MemoryBudget memory_budget(MPI_Comm comm) {
  MemoryBudget b;
  if (const char* env = std::getenv("KPMAP_MEMORY_LIMIT"); env != nullptr && *env != '\0') {
    b.bytes = parse_bytes(env, "environment variable KPMAP_MEMORY_LIMIT");
    b.source = std::string("KPMAP_MEMORY_LIMIT=") + env + " per rank";
    return b;
  }
  if constexpr (!device_is_host) {
    const int device = Runtime::active() ? Runtime::current().device_id() : 0;
    const int sharing = ranks_sharing(comm, device);
    std::size_t free_bytes = 0, total_bytes = 0;
#if defined(KOKKOS_ENABLE_CUDA)
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) free_bytes = 0;
    const char* api = "cudaMemGetInfo";
#elif defined(KOKKOS_ENABLE_HIP)
    if (hipMemGetInfo(&free_bytes, &total_bytes) != hipSuccess) free_bytes = 0;
    const char* api = "hipMemGetInfo";
#else
    const char* api = nullptr;
#endif
    if (api == nullptr || free_bytes == 0) {
      b.source = "unknown for this device";
      return b;
    }
    b.bytes = static_cast<double>(free_bytes) / sharing;
    b.source = "GPU " + std::to_string(device) + ": " + format_bytes(double(free_bytes)) +
               " free of " + format_bytes(double(total_bytes)) + " (" + api + ")" +
               shared_by(sharing, "on it");
    return b;
  }
  const int sharing = ranks_sharing(comm, -1);
  const double available = mem_available();
  const double room = cgroup_room();
  const double own = address_space_room();
  if (available < 0 && room < 0 && own < 0) {
    b.source = "unknown (no /proc/meminfo)";
    return b;
  }
  // The tightest of: the node's MemAvailable and the cgroup's room, each
  // shared by the node's ranks; this process's own address-space limit.
  b.bytes = -1;
  const auto consider = [&b](double bytes, std::string source) {
    if (bytes >= 0 && (b.bytes < 0 || bytes < b.bytes)) {
      b.bytes = bytes;
      b.source = std::move(source);
    }
  };
  if (available >= 0) {
    consider(available / sharing,
             "MemAvailable " + format_bytes(available) + shared_by(sharing, "on this node"));
  }
  if (room >= 0) {
    consider(room / sharing, format_bytes(room) + " left under the cgroup's memory limit" +
                                 shared_by(sharing, "on this node"));
  }
  if (own >= 0) {
    consider(own, format_bytes(own) +
                      " left under this process's address-space limit (ulimit -v, RLIMIT_AS)");
  }
  return b;
}

void require_memory(double bytes, const std::string& what, const std::string& breakdown,
                    MPI_Comm comm) {
  const MemoryBudget budget = memory_budget(comm);
  const int over = budget.bytes > 0 && bytes > budget.bytes ? 1 : 0;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // The rank furthest over its budget speaks for all.
  struct {
    double ratio;
    int rank;
  } mine{over ? bytes / budget.bytes : 0.0, rank}, worst{0.0, 0};
  transport::allreduce(&mine, &worst, 1, MPI_DOUBLE_INT, MPI_MAXLOC, comm, nullptr);
  if (worst.ratio == 0.0) return;
  const int speaker = worst.rank;
  std::ostringstream msg;
  if (rank == speaker) {
    msg << what << " needs about " << format_bytes(bytes) << " on rank " << rank << " ("
        << breakdown << "), more than the " << format_bytes(budget.bytes) << " it may use ("
        << budget.source
        << "); use more ranks or a smaller problem (KPMAP_MEMORY_LIMIT sets the limit by hand)";
  }
  std::string text = msg.str();
  transport::bcast_string(text, speaker, comm);
  throw InputError(text, ErrorScope::all_ranks);
}

}  // namespace kpmap
