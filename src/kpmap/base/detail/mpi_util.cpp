#include <kpmap/base/detail/mpi_util.hpp>

#include <kpmap/base/error.hpp>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace kpmap::detail {

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw Error(std::string(what) + " failed: " + std::string(text, static_cast<std::size_t>(len)));
}

void bcast_string(std::string& text, int root, MPI_Comm comm) {
  int length = static_cast<int>(text.size());
  check_mpi(MPI_Bcast(&length, 1, MPI_INT, root, comm), "MPI_Bcast (string length)");
  text.resize(static_cast<std::size_t>(length));
  check_mpi(MPI_Bcast(text.data(), length, MPI_CHAR, root, comm), "MPI_Bcast (string)");
}

void agree(MPI_Comm comm, const std::string& error, int code, ErrorScope scope) {
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int mine = error.empty() ? size : rank;
  int first = size;
  check_mpi(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce (agree)");
  if (first == size) return;
  std::string message = error;
  bcast_string(message, first, comm);
  throw Error(message, code, scope);
}

bool first_at_index(int index, MPI_Comm comm) {
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::vector<int> all(static_cast<std::size_t>(size));
  check_mpi(MPI_Allgather(&index, 1, MPI_INT, all.data(), 1, MPI_INT, comm),
            "MPI_Allgather (first_at_index)");
  return std::find(all.begin(), all.begin() + rank, index) == all.begin() + rank;
}

}  // namespace kpmap::detail
