// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief What a HaloExchange plan is made of: its neighbours, the cells it
/// packs and unpacks, and the kernel that copies them (grid/halo.hpp uses them).

#include <kpmap/grid/layout.hpp>

#include <mpi.h>
#include <Kokkos_Core.hpp>

#include <array>
#include <cstddef>
#include <vector>

namespace kpmap {

struct HaloOptions;

namespace detail {

/// \brief One neighbour of a halo plan: where it is, and the boxes of cells
/// sent to it and received from it, in local indices.
struct HaloNeighbor {
  std::array<int, 3> offset{0, 0, 0};
  int rank = MPI_PROC_NULL;
  Box send;
  Box recv;
  std::size_t cells = 0;      ///< cells per field in each direction
  std::size_t buffer_at = 0;  ///< first element of this neighbour's segment
  int send_tag = 0;
  int recv_tag = 0;
};

/// \brief The neighbours of this rank for a plan with `options`, and the
/// buffer offsets for `nfields` fields. Collective-free (pure geometry).
/// \throws kpmap::InputError when depth is outside [1, ghost] or a block is
/// thinner than `depth` along a dimension that has a neighbour.
std::vector<HaloNeighbor> plan_neighbors(const CartesianLayout& layout, const HaloOptions& options,
                                         std::size_t nfields, int tag_base);

/// \brief Posts the receives, then the sends, of one exchange (buffers are
/// host-accessible to MPI, or device pointers for a GPU-aware MPI).
void post_halo_messages(const std::vector<HaloNeighbor>& neighbors, std::size_t nfields,
                        MPI_Datatype type, void* recv, void* send, std::size_t elem_size,
                        MPI_Comm comm, std::vector<MPI_Request>& requests);

/// At most this many fields move in one plan (each neighbour gets one message for all).
inline constexpr int max_halo_fields = 8;

/// Where one halo cell goes: its element in a (LayoutRight) field, its first
/// element in the exchange buffer, and the distance between its fields' copies
/// there (its neighbour's cell count: each message holds its fields one after
/// the other).
struct HaloCell {
  std::size_t field_at;
  std::size_t buffer_at;
  std::size_t stride;
};

/// Every cell of every neighbour's boxes, box by box, i fastest within each:
/// the index list one pack or unpack kernel walks.
template <class M>
Kokkos::View<HaloCell*, M> halo_cells(const std::vector<HaloNeighbor>& neighbors, bool send,
                                      const CartesianLayout& layout, const char* label) {
  std::size_t total = 0;
  for (const auto& n : neighbors) total += n.cells;
  Kokkos::View<HaloCell*, M> cells(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), total);
  auto host = Kokkos::create_mirror_view(cells);
  const auto ex = static_cast<long>(layout.extent(0));
  const auto ey = static_cast<long>(layout.extent(1));
  std::size_t c = 0;
  for (const auto& n : neighbors) {
    const Box& b = send ? n.send : n.recv;
    std::size_t at = n.buffer_at;
    for (long k = b.lo[2]; k < b.hi[2]; ++k) {
      for (long j = b.lo[1]; j < b.hi[1]; ++j) {
        for (long i = b.lo[0]; i < b.hi[0]; ++i) {
          host(c++) = HaloCell{static_cast<std::size_t>((k * ey + j) * ex + i), at++, n.cells};
        }
      }
    }
  }
  Kokkos::deep_copy(cells, host);
  return cells;
}

/// Packs (or unpacks) every neighbour's cells of every field: one thread per
/// cell of the index list, its fields in turn.
template <class T, class M, bool Pack>
struct HaloCopy {
  Kokkos::Array<Field<T, M>, max_halo_fields> fields;
  Kokkos::View<T*, M> buffer;
  Kokkos::View<const HaloCell*, M> cells;
  int nfields;

  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t c) const {
    const HaloCell e = cells(c);
    for (int f = 0; f < nfields; ++f) {
      if constexpr (Pack) {
        buffer(e.buffer_at + f * e.stride) = fields[f].data()[e.field_at];
      } else {
        fields[f].data()[e.field_at] = buffer(e.buffer_at + f * e.stride);
      }
    }
  }
};

}  // namespace detail

}  // namespace kpmap
