#pragma once
/// \file
/// \brief Two leaf MPI helpers every layer may use: MPI error codes as
/// exceptions, and one rank's string sent to all (the way one rank's error
/// message reaches every rank).

#include <mpi.h>

#include <string>

namespace kpmap::detail {

/// \brief Throws kpmap::Error naming `what` when `rc` is not MPI_SUCCESS.
void check_mpi(int rc, const char* what);

/// \brief Collective over `comm`, blocking: every rank's `text` becomes `root`'s.
void bcast_string(std::string& text, int root, MPI_Comm comm);

}  // namespace kpmap::detail
