// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Leaf MPI helpers every layer may use: MPI error codes as
/// exceptions, one rank's string sent to all (the way one rank's error
/// message reaches every rank), and an error agreed by all ranks.

#include <kpmap/base/error.hpp>

#include <mpi.h>

#include <string>
#include <utility>
#include <vector>

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

/// \brief "0-1, 4, 6-9": ranks in increasing order, runs joined.
std::string rank_list(const std::vector<int>& ranks);

/// \brief A named value that every rank of a job must hold alike: a setting,
/// the build's identity, the file a run continues from.
struct Identity {
  std::string name;   ///< what it is ("KPMAP_WATCHDOG", "kpmap commit")
  std::string value;  ///< as the message shows it ("'30'", "unset")
};

/// \brief Collective over `comm`: "" where every rank passed the same
/// `items` (names and values, in the same order), else the same text on every
/// rank naming each item that differs (the first few), its values and the
/// ranks and hosts that hold each: "KPMAP_WATCHDOG is '30' on ranks 0-1 (host
/// nodeA) but unset on ranks 2-3 (host nodeB)". One allreduce of a digest
/// where they agree; the items themselves travel only where they do not.
std::string disagreement(MPI_Comm comm, const std::vector<Identity>& items);

/// \brief Collective over `comm`: whether this rank is the first of `comm`
/// (lowest rank) among those passing the same `index` (its coordinate on
/// some axis): the one that writes what the ranks of that index all hold.
bool first_at_index(int index, MPI_Comm comm);

}  // namespace kpmap::detail
