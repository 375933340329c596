// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief MPI calls on flat buffers with 64-bit counts, blocking or not.
///
/// Internal. Each function takes element counts as std::size_t: counts above
/// the MPI int limit are split into several calls (reductions, broadcasts) or
/// described by one large derived datatype (gathers, all-to-all, point to
/// point). When `pending` is null the call blocks; otherwise the requests it
/// starts are appended to `*pending` and the caller waits on them.
/// The buffers must stay valid and untouched until the requests complete.

#include <kpmap/base/detail/mpi_util.hpp>

#include <mpi.h>

#include <cstddef>
#include <string>
#include <vector>

namespace kpmap::transport {

using Pending = std::vector<MPI_Request>;

/// \brief Largest element count passed to one MPI call (INT_MAX unless lowered
/// for tests, which exercise the large-count paths with small buffers).
std::size_t max_count() noexcept;
void set_max_count(std::size_t n) noexcept;

/// Collective over `comm`. `send` may be MPI_IN_PLACE.
void allreduce(const void* send, void* recv, std::size_t count, MPI_Datatype type, MPI_Op op,
               MPI_Comm comm, Pending* pending);

/// Collective over `comm`.
void bcast(void* buf, std::size_t count, MPI_Datatype type, int root, MPI_Comm comm,
           Pending* pending);

/// Collective over `comm`: every rank contributes `count` elements; `recv` holds size*count.
void allgather(const void* send, void* recv, std::size_t count, MPI_Datatype type, MPI_Comm comm,
               Pending* pending);

/// Collective over `comm`, blocking: rank r contributes counts[r] elements
/// (uneven blocks); `recv` holds their concatenation in rank order. `send`
/// may be MPI_IN_PLACE (the rank's block is in `recv` already).
void allgatherv(const void* send, void* recv, const std::vector<std::size_t>& counts,
                MPI_Datatype type, MPI_Comm comm);

/// Collective over `comm`, non-blocking when `pending` is given: rank r's
/// block of counts[r] elements lies in `buf` at displs[r] and is there on
/// every rank once the requests complete (an all-gather in place). `counts`
/// and `displs` (one per rank) must stay valid until then.
void allgatherv_inplace(void* buf, const int* counts, const int* displs, MPI_Datatype type,
                        MPI_Comm comm, Pending* pending);

/// Collective over `comm`, blocking: as allgatherv, but only `root`'s recv is written.
void gatherv(const void* send, void* recv, const std::vector<std::size_t>& counts,
             MPI_Datatype type, int root, MPI_Comm comm);

/// Collective over `comm`, blocking: root's `send` holds counts[r] elements for
/// each rank r in order; rank r receives its block.
void scatterv(const void* send, void* recv, const std::vector<std::size_t>& counts,
              MPI_Datatype type, int root, MPI_Comm comm);

/// Collective over `comm`: block j of `send` (count elements) goes to rank j.
void alltoall(const void* send, void* recv, std::size_t count, MPI_Datatype type, MPI_Comm comm,
              Pending* pending);

/// Collective over `comm`: `send` holds size blocks of `count`; rank j receives
/// the reduction of everyone's block j.
void reduce_scatter_block(const void* send, void* recv, std::size_t count, MPI_Datatype type,
                          MPI_Op op, MPI_Comm comm, Pending* pending);

/// Collective over `comm`: `send` holds the blocks of every rank, block r of
/// `counts[r]` elements after those of the ranks before it (uneven, empty
/// ones too); rank r receives the reduction of everyone's block r in
/// `recv`. `counts` (one per rank) must stay valid until the requests
/// complete.
void reduce_scatter(const void* send, void* recv, const int* counts, MPI_Datatype type, MPI_Op op,
                    MPI_Comm comm, Pending* pending);

/// Point to point: send to `dest` and receive from `source` (either may be MPI_PROC_NULL).
void sendrecv(const void* send, void* recv, std::size_t count, MPI_Datatype type, int dest,
              int source, int tag, MPI_Comm comm, Pending* pending);

/// \brief Collective over `comm`, blocking: every rank's `text` becomes `root`'s
/// (one rank's message to all; transport/host.hpp's agree builds on it).
void bcast_string(std::string& text, int root, MPI_Comm comm);

// MPI errors as exceptions: the leaf helper of base/detail/mpi_util.hpp,
// which the layer below transport uses too.
using detail::check_mpi;

/// \brief Waits for all requests; MPI errors become kpmap::Error.
void wait_all(Pending& pending);
/// \brief True (and `pending` emptied) when all requests have completed.
bool test_all(Pending& pending);

}  // namespace kpmap::transport
