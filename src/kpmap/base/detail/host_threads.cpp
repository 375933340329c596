// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/base/detail/host_threads.hpp>

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string_view>
#include <vector>

namespace kpmap::detail {

namespace {

std::string plural(int n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// A positive integer at the start of `text` ("4", "4,2" for nested OpenMP).
std::optional<int> leading_count(std::string_view text) {
  int n = 0;
  std::size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9' && n < 1000000) {
    n = n * 10 + (text[i] - '0');
    ++i;
  }
  if (i == 0 || n < 1) return std::nullopt;
  return n;
}

// CPU quota of a cgroup v2 ("max 100000" or "200000 100000"), in cores; 0 when none.
int cgroup_cpu_quota() {
  std::ifstream in("/sys/fs/cgroup/cpu.max");
  std::string quota;
  double period = 0;
  if (!(in >> quota >> period) || quota == "max" || period <= 0) return 0;
  const double q = std::atof(quota.c_str());
  return q > 0 ? static_cast<int>(std::ceil(q / period)) : 0;
}

}  // namespace

HostThreads decide_host_threads(std::optional<int> user, const std::string& user_source, int cores,
                                int sharing) {
  cores = std::max(cores, 1);
  sharing = std::max(sharing, 1);
  HostThreads h;
  const std::string share = plural(cores, "core") + " shared by " + plural(sharing, "rank");
  if (user) {
    h.threads = *user;
    h.chosen_by_user = true;
    h.reason = plural(h.threads, "thread") + " (" + user_source + "); " + share;
  } else {
    h.threads = std::max(1, cores / sharing);
    h.reason = plural(h.threads, "thread") + ": " + share;
  }
  h.oversubscribed = static_cast<long>(h.threads) * sharing > cores;
  return h;
}

std::optional<int> user_host_threads(int argc, char** argv, std::string& source) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    for (std::string_view flag : {"--kokkos-num-threads", "--kokkos-threads"}) {
      if (arg.substr(0, flag.size()) != flag) continue;
      source = std::string(arg);
      // "--flag=N" or "--flag N"
      if (arg.size() > flag.size() && arg[flag.size()] == '=') {
        return leading_count(arg.substr(flag.size() + 1));
      }
      if (arg.size() == flag.size() && i + 1 < argc) return leading_count(argv[i + 1]);
      return std::nullopt;  // Kokkos itself reports the malformed flag
    }
  }
  for (const char* var : {"KOKKOS_NUM_THREADS", "OMP_NUM_THREADS"}) {
    if (const char* v = std::getenv(var); v != nullptr && *v != '\0') {
      if (auto n = leading_count(v)) {
        source = std::string(var) + "=" + v;
        return n;
      }
    }
  }
  return std::nullopt;
}

int usable_cores() {
  int cores = 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cores = CPU_COUNT(&set);
  if (cores < 1) cores = 1;
  const int quota = cgroup_cpu_quota();
  return quota > 0 ? std::min(cores, quota) : cores;
}

int ranks_sharing_cores(MPI_Comm node_comm) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof(mine), &mine) != 0) CPU_ZERO(&mine);
  int n = 1;
  MPI_Comm_size(node_comm, &n);
  std::vector<cpu_set_t> all(static_cast<std::size_t>(n));
  MPI_Allgather(&mine, sizeof(cpu_set_t), MPI_BYTE, all.data(), sizeof(cpu_set_t), MPI_BYTE,
                node_comm);
  int sharing = 0;
  for (auto& other : all) {
    cpu_set_t both;
    CPU_AND(&both, &mine, &other);
    // An unreadable mask (empty) counts as sharing everything.
    if (CPU_COUNT(&both) > 0 || CPU_COUNT(&other) == 0 || CPU_COUNT(&mine) == 0) ++sharing;
  }
  return std::max(sharing, 1);
}

}  // namespace kpmap::detail
