// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Numbers and words on the host that every rank of a communicator
/// must hold alike: the one place below the collectives where they are
/// reduced or broadcast (a sum of counts, the lowest failing rank, a flag all
/// ranks must set), where one rank's error reaches all (`agree`), and where
/// the ranks find whether they differ (`disagreement`).
///
/// Internal. Above the collectives, host numbers over a mesh axis are summed
/// with kpmap::psum(values, count, axis) (checked mode and the trace see
/// them); code that holds only a communicator, below the mesh or outside it
/// (start-up, a checkpoint's file handles), uses these. Every MPI error
/// becomes kpmap::Error naming the call. No MPI reduction or broadcast is
/// written outside transport/ (lint.layers).

#include <kpmap/base/detail/mpi_datatype.hpp>
#include <kpmap/base/error.hpp>
#include <kpmap/transport/mpi_ops.hpp>

#include <mpi.h>

#include <cstddef>
#include <string>
#include <vector>

namespace kpmap::transport {

/// \brief Collective over `comm`, blocking: the `count` numbers at `values`
/// (host memory) become their reduction by `op` (MPI_SUM, MPI_MAX, MPI_MIN,
/// MPI_LAND, ...) over the ranks, in place.
template <class T>
void host_allreduce(T* values, std::size_t count, MPI_Op op, MPI_Comm comm) {
  allreduce(MPI_IN_PLACE, values, count, detail::mpi_datatype<T>(), op, comm, nullptr);
}

/// \brief Collective over `comm`, blocking: `root`'s `count` numbers at
/// `values` (host memory) on every rank.
template <class T>
void host_bcast(T* values, std::size_t count, int root, MPI_Comm comm) {
  bcast(values, count, detail::mpi_datatype<T>(), root, comm, nullptr);
}

/// \brief Collective over `comm`, blocking: the sum of `value` over the ranks
/// of `comm` below this one (0 on rank 0): this rank's place among those that
/// count one (the nodes numbered by their first rank).
int sum_below(int value, MPI_Comm comm);

/// \brief Collective over `comm`: every rank passes its error ("" when fine);
/// when any rank failed, every rank throws the lowest failing rank's message
/// (as kpmap::Error with `code` and `scope`), so all ranks leave together and
/// the message is printed once (`scope`: ErrorScope::all_ranks, or
/// all_ranks_abort where a file cannot be closed after the failure).
void agree(MPI_Comm comm, const std::string& error, int code,
           ErrorScope scope = ErrorScope::all_ranks);

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

}  // namespace kpmap::transport
