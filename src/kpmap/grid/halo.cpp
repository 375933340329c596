// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/grid/halo.hpp>

#include <kpmap/runtime/runtime.hpp>
#include <kpmap/transport/mpi_ops.hpp>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <limits>
#include <numeric>

namespace kpmap {

namespace detail {

std::vector<HaloNeighbor> plan_neighbors(const CartesianLayout& layout, const HaloOptions& options,
                                         std::size_t nfields, int tag_base) {
  const int depth = options.depth;
  if (depth < 1 || depth > layout.ghost()) {
    throw InputError("kpmap::HaloExchange: depth " + std::to_string(depth) +
                         " is outside [1, ghost width " + std::to_string(layout.ghost()) + "]",
                     ErrorScope::all_ranks);
  }
  // Every rank computes the same layout, so every rank raises the same error.
  if (const int d = layout.too_thin_for(depth); d >= 0) {
    throw InputError("kpmap::HaloExchange: blocks along dimension " + std::to_string(d) +
                         " are as thin as " + std::to_string(layout.thinnest_block(d)) +
                         " cells, less than the halo depth " + std::to_string(depth) +
                         "; use fewer ranks or a larger grid",
                     ErrorScope::all_ranks);
  }
  const auto code = [](const std::array<int, 3>& o) {
    return (o[0] + 1) + 3 * (o[1] + 1) + 9 * (o[2] + 1);
  };
  std::vector<HaloNeighbor> out;
  std::size_t at = 0;
  const int zmax = layout.ndim() == 3 ? 1 : 0;
  for (int oz = -zmax; oz <= zmax; ++oz) {
    for (int oy = -1; oy <= 1; ++oy) {
      for (int ox = -1; ox <= 1; ++ox) {
        const std::array<int, 3> o{ox, oy, oz};
        const int nonzero = (ox != 0) + (oy != 0) + (oz != 0);
        if (nonzero == 0 || (!options.corners && nonzero > 1)) continue;
        const int rank = layout.neighbor(o);
        if (rank == MPI_PROC_NULL) continue;
        HaloNeighbor n;
        n.offset = o;
        n.rank = rank;
        for (int d = 0; d < 3; ++d) {
          const long g = layout.owned_begin(d);
          const long len = static_cast<long>(layout.local_cells(d));
          if (o[d] == 0) {
            n.send.lo[d] = n.recv.lo[d] = g;
            n.send.hi[d] = n.recv.hi[d] = g + len;
          } else if (o[d] < 0) {
            n.send.lo[d] = g;
            n.send.hi[d] = g + depth;
            n.recv.lo[d] = g - depth;
            n.recv.hi[d] = g;
          } else {
            n.send.lo[d] = g + len - depth;
            n.send.hi[d] = g + len;
            n.recv.lo[d] = g + len;
            n.recv.hi[d] = g + len + depth;
          }
        }
        n.cells = n.send.size();
        n.buffer_at = at;
        at += n.cells * nfields;
        // A message is tagged with its direction as the sender sees it.
        n.send_tag = tag_base + code(o);
        n.recv_tag = tag_base + code({-ox, -oy, -oz});
        out.push_back(n);
      }
    }
  }
  return out;
}

void post_halo_messages(const std::vector<HaloNeighbor>& neighbors, std::size_t nfields,
                        MPI_Datatype type, void* recv, void* send, std::size_t elem_size,
                        MPI_Comm comm, std::vector<MPI_Request>& requests) {
  // Receives first, so that no message waits in an unexpected-message queue.
  for (const auto& n : neighbors) {
    const std::size_t count = n.cells * nfields;
    if (count > static_cast<std::size_t>(INT_MAX)) {
      throw Error("kpmap::HaloExchange: a halo message of " + std::to_string(count) +
                  " elements exceeds MPI's int count");
    }
    requests.emplace_back();
    transport::check_mpi(
        MPI_Irecv(static_cast<char*>(recv) + n.buffer_at * elem_size, static_cast<int>(count), type,
                  n.rank, n.recv_tag, comm, &requests.back()),
        "MPI_Irecv (halo)");
  }
  for (const auto& n : neighbors) {
    requests.emplace_back();
    transport::check_mpi(MPI_Isend(static_cast<char*>(send) + n.buffer_at * elem_size,
                                   static_cast<int>(n.cells * nfields), type, n.rank, n.send_tag,
                                   comm, &requests.back()),
                         "MPI_Isend (halo)");
  }
}

}  // namespace detail

// The plan of kpmap-heat and its solvers (halo.hpp declares it extern).
template class HaloExchange<double, Kokkos::DefaultExecutionSpace>;

}  // namespace kpmap
