// SPDX-License-Identifier: BSD-3-Clause
// Catch2 main for MPI tests: MPI and Kokkos come up once for the whole run,
// rank 0 prints, and a failure on any rank fails the test (its output is shown).

#include <kpmap/runtime/runtime.hpp>

#include <catch2/catch_session.hpp>

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  kpmap::Runtime runtime(argc, argv);
  const int rank = runtime.rank();
  const int size = runtime.size();

  // Ranks other than 0 keep their report to themselves unless they fail.
  std::ostringstream captured;
  std::streambuf* saved = nullptr;
  if (rank != 0) saved = std::cout.rdbuf(captured.rdbuf());

  Catch::Session session;
  int failed = session.applyCommandLine(argc, argv);
  if (failed == 0) failed = session.run();
  if (saved != nullptr) std::cout.rdbuf(saved);

  std::vector<int> all_failed(size);
  MPI_Gather(&failed, 1, MPI_INT, all_failed.data(), 1, MPI_INT, 0, runtime.world());
  for (int r = 1; r < size; ++r) {
    int flag = 0;
    if (rank == 0) flag = all_failed[r];
    MPI_Bcast(&flag, 1, MPI_INT, 0, runtime.world());
    if (flag == 0) continue;
    if (rank == r) {
      const std::string text = captured.str();
      MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, 0, 0, runtime.world());
    } else if (rank == 0) {
      MPI_Status status;
      MPI_Probe(r, 0, runtime.world(), &status);
      int count = 0;
      MPI_Get_count(&status, MPI_CHAR, &count);
      std::string text(static_cast<std::size_t>(count), '\0');
      MPI_Recv(text.data(), count, MPI_CHAR, r, 0, runtime.world(), MPI_STATUS_IGNORE);
      std::cout << "\n======== rank " << r << " of " << size << " failed (Catch2 exit code "
                << all_failed[r] << "); its report: ========\n"
                << text << std::flush;
    }
  }
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, runtime.world());
  if (rank == 0 && any_failed != 0 && failed == 0) {
    std::cout << "FAILED on another rank (see above)\n";
  }
  return any_failed != 0 ? 1 : 0;
}
