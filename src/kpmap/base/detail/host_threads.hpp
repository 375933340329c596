// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief How many host threads each rank runs on a threaded host backend
/// (OpenMP), so that the ranks of a node never run more threads than the
/// node gives them cores.
///
/// Internal: kpmap::Runtime decides before Kokkos is initialised and reports
/// the choice (kpmap-info, the apps' banners).

#include <mpi.h>

#include <optional>
#include <string>

namespace kpmap::detail {

/// \brief The thread count one rank runs, and why.
struct HostThreads {
  int threads = 1;
  bool chosen_by_user = false;  ///< --kokkos-num-threads, OMP_NUM_THREADS, ...
  bool oversubscribed = false;  ///< the node's ranks run more threads than their cores
  std::string reason;           ///< for banners: "2 threads: 2 cores shared by 1 rank"
};

/// \brief Pure decision. `user` is the count the user asked for (if any),
/// `user_source` where it came from; `cores` the cores this rank may use;
/// `sharing` the ranks of this node (this one included) that may use any of
/// the same cores. Without a user choice every sharing rank gets an equal
/// share of the cores (at least one thread).
HostThreads decide_host_threads(std::optional<int> user, const std::string& user_source, int cores,
                                int sharing);

/// \brief The count the user asked for through Kokkos' arguments
/// (`--kokkos-num-threads=N`, `--kokkos-threads=N`) or the environment
/// (`KOKKOS_NUM_THREADS`, `OMP_NUM_THREADS`, first entry), with where it came
/// from; nullopt when the user said nothing.
std::optional<int> user_host_threads(int argc, char** argv, std::string& source);

/// \brief The cores this process may run on: its CPU affinity mask, capped
/// by the cgroup's CPU quota where one is set.
int usable_cores();

/// \brief Counts the ranks of `node_comm` whose CPU affinity overlaps this
/// rank's (this rank included). Collective over `node_comm`.
int ranks_sharing_cores(MPI_Comm node_comm);

}  // namespace kpmap::detail
