#pragma once
/// \file
/// \brief Leaf MPI helpers every layer may use: MPI error codes as
/// exceptions, one rank's string sent to all (the way one rank's error
/// message reaches every rank), and an error agreed by all ranks.

#include <kpmap/base/error.hpp>

#include <mpi.h>

#include <string>

namespace kpmap::detail {

/// \brief Throws kpmap::Error naming `what` when `rc` is not MPI_SUCCESS.
void check_mpi(int rc, const char* what);

/// \brief Collective over `comm`, blocking: every rank's `text` becomes `root`'s.
void bcast_string(std::string& text, int root, MPI_Comm comm);

/// \brief Collective over `comm`: every rank passes its error ("" when fine);
/// when any rank failed, every rank throws the lowest failing rank's message
/// (as kpmap::Error with `code` and `scope`), so all ranks leave together and
/// the message is printed once (`scope`: ErrorScope::all_ranks, or
/// all_ranks_abort where a file cannot be closed after the failure).
void agree(MPI_Comm comm, const std::string& error, int code,
           ErrorScope scope = ErrorScope::all_ranks);

/// \brief Collective over `comm`: whether this rank is the first of `comm`
/// (lowest rank) among those passing the same `index` (its coordinate on
/// some axis): the one that writes what the ranks of that index all hold.
bool first_at_index(int index, MPI_Comm comm);

}  // namespace kpmap::detail
