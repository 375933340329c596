// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Helpers for kpmap's Catch2 tests, which run under mpiexec at 1, 2, 3 and 4 ranks.

#include <mpi.h>

#include <cstdlib>
#include <string>

namespace kpmap::test {

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

inline int world_size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

/// Collective: true when `ok` holds on every rank. Use it before REQUIRE so a
/// failure on one rank does not leave the others in a later collective.
inline bool all_ranks(bool ok) {
  int local = ok ? 1 : 0;
  int global = 0;
  MPI_Allreduce(&local, &global, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return global != 0;
}

#ifdef KPMAP_SOURCE_DIR
/// The source tree that tests reading kpmap's own sources look in: the one
/// this build was configured from, or $KPMAP_SOURCE_DIR where the test
/// programs run elsewhere (a GPU machine running scripts/gpu-bundle's archive
/// from its own copy of the tree).
inline std::string source_dir() {
  const char* moved = std::getenv("KPMAP_SOURCE_DIR");
  return moved != nullptr && *moved != '\0' ? std::string(moved) : std::string(KPMAP_SOURCE_DIR);
}
#endif

}  // namespace kpmap::test
