// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Memory a rank may use, and a collective check of an estimate
/// against it, so a run too big for its devices is refused up front with the
/// numbers instead of dying in an allocation or at the hands of the OOM killer.

#include <mpi.h>

#include <string>

namespace kpmap {

/// \brief The memory one rank may use in the default execution space's
/// memory space, and where that figure comes from.
struct MemoryBudget {
  double bytes = 0;    ///< 0 when unknown (then nothing is refused)
  std::string source;  ///< e.g. "MemAvailable 12.1 GiB shared by 4 ranks on this node"
};

/// \brief This rank's budget. Collective over `comm` (ranks on one node, or
/// on one GPU, share what it has). In order:
/// - `KPMAP_MEMORY_LIMIT` (bytes per rank, with an optional K, M, G or T
///   suffix, powers of 1024), where it is set;
/// - on a GPU, the device's free memory (cudaMemGetInfo / hipMemGetInfo)
///   divided by the ranks of this node on the same device;
/// - on the host, MemAvailable (/proc/meminfo), capped by the cgroup's
///   memory limit where there is one, divided by the ranks of this node.
/// \throws kpmap::InputError (all ranks) for a bad KPMAP_MEMORY_LIMIT.
MemoryBudget memory_budget(MPI_Comm comm);

/// \brief Collective: refuses a run whose estimate `bytes` (this rank's)
/// exceeds the budget on any rank. \throws kpmap::InputError (all ranks)
/// naming `what`, the estimate of the rank furthest over (`breakdown` says
/// of what), its budget and the budget's source.
void require_memory(double bytes, const std::string& what, const std::string& breakdown,
                    MPI_Comm comm);

/// \brief "512 B", "3.2 KiB", "1.5 GiB", ...
std::string format_bytes(double bytes);

/// \brief Parses "4096", "512K", "1.5G", "2T" (powers of 1024) into bytes.
/// \throws kpmap::InputError naming `what` on anything else.
double parse_bytes(const std::string& text, const std::string& what);

}  // namespace kpmap
