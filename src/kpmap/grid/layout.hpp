// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Cartesian block decomposition of a global 2-D or 3-D cell grid.
///
/// A CartesianLayout splits a grid of cells over the ranks of a communicator
/// in blocks (a process grid chosen with MPI_Dims_create, any rank count,
/// primes too) and gives every block a ring of ghost cells, which a
/// HaloExchange (halo.hpp) fills from the neighbours.
///
/// Index conventions: dimensions are numbered d = 0 (x), 1 (y), 2 (z). A
/// field is a `Kokkos::View<T***, LayoutRight>` indexed `(k, j, i)` = (z, y,
/// x), x fastest; a 2-D layout has one plane (extent 1 in z, no ghosts in z).
/// Local indices include the ghosts: the cells this rank owns are
/// `[owned_begin(d), owned_begin(d) + local_cells(d))` in every dimension
/// that exists (interior()), with the ghosts just outside. owned_begin(d) is
/// the ghost width, except along x in a layout with Rows::aligned, where
/// padding cells before the ghosts put every row's first owned cell on a
/// 64-byte boundary (and the row length on a multiple of 64 bytes).

#include <kpmap/base/error.hpp>

#include <mpi.h>
#include <Kokkos_Core.hpp>

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace kpmap {

/// \brief A box of local cell indices, half-open `[lo[d], hi[d])`, in (x, y, z) order.
struct Box {
  std::array<long, 3> lo{0, 0, 0};
  std::array<long, 3> hi{0, 0, 0};
  /// \brief Number of cells (0 when the box is empty in any dimension).
  std::size_t size() const noexcept {
    std::size_t n = 1;
    for (int d = 0; d < 3; ++d) n *= hi[d] > lo[d] ? static_cast<std::size_t>(hi[d] - lo[d]) : 0;
    return n;
  }
  bool empty() const noexcept { return size() == 0; }
};

/// \brief A field on a CartesianLayout: local cells and ghosts, indexed (k, j, i) = (z, y, x).
template <class T, class MemorySpace = Kokkos::DefaultExecutionSpace::memory_space>
using Field = Kokkos::View<T***, Kokkos::LayoutRight, MemorySpace>;

namespace detail {
/// \brief Keeps the next large host allocation from landing a multiple of 8
/// pages below the field at `data` (see layout.cpp).
void space_after_field(const void* data, std::size_t bytes) noexcept;
}  // namespace detail

/// \brief How a field's rows (along x) lie in memory.
///
/// `packed`: a row is its ghosts and owned cells, nothing else. `aligned`:
/// cells of padding before the low ghosts and after the high ones put the
/// first owned cell of every row on a 64-byte boundary, 8 doubles: a
/// vectorised loop over a row's owned cells then loads whole cache lines
/// (a 64-byte load that straddles two lines costs two), which made a CG
/// iteration about a quarter faster where its arrays stay in cache
/// (docs/performance.md). The padding is never read or exchanged. Only
/// where it lengthens a row by at most an eighth (about 110 cells and more
/// with one ghost layer); a narrower block's rows stay packed.
enum class Rows { packed, aligned };

/// \brief A global grid of cells split in blocks over the ranks of a communicator.
///
/// Cheap to copy: copies share the Cartesian communicator, which the last copy frees.
class CartesianLayout {
 public:
  /// \brief Splits `cells` (2 or 3 extents, x first) over the ranks of `comm`.
  ///
  /// `ranks` optionally fixes the process grid (x first); a 0 entry, or an
  /// empty vector, lets MPI_Dims_create choose. The chosen factors go to the
  /// dimensions with the most cells, so blocks stay close to cubes. Cells
  /// that do not divide evenly go one each to the first blocks. `ghost` is
  /// the ghost width (>= 1). Collective over `comm` (default: the Runtime's
  /// private communicator); the layout keeps a Cartesian duplicate of it.
  /// `rows` places a field's rows in memory (Rows).
  /// \throws kpmap::InputError (on every rank) when the grid has the wrong
  /// number of dimensions, an empty dimension, a process grid that does not
  /// fit the rank count, or more blocks than cells along a dimension.
  CartesianLayout(const std::vector<std::size_t>& cells, int ghost, std::vector<int> ranks = {},
                  MPI_Comm comm = MPI_COMM_NULL, Rows rows = Rows::packed);

  int ndim() const noexcept { return ndim_; }
  /// \brief Ghost width in dimension d (0 for the z dimension of a 2-D layout).
  int ghost(int d) const noexcept { return d < ndim_ ? ghost_ : 0; }
  int ghost() const noexcept { return ghost_; }
  std::size_t global_cells(int d) const noexcept { return global_[d]; }
  /// \brief Product of the global extents.
  std::size_t global_count() const noexcept { return global_[0] * global_[1] * global_[2]; }
  /// \brief Blocks along dimension d (the process grid).
  int ranks(int d) const noexcept { return dims_[d]; }
  /// \brief The thinnest block along dimension d (every rank computes the same).
  std::size_t thinnest_block(int d) const noexcept {
    return global_[d] / static_cast<std::size_t>(dims_[d]);
  }
  /// \brief The first dimension along which a halo `depth` cells deep would
  /// reach past the neighbouring block (split over ranks into blocks thinner
  /// than that), or -1 when it fits along every dimension.
  int too_thin_for(int depth) const noexcept {
    for (int d = 0; d < ndim_; ++d) {
      if (dims_[d] > 1 && thinnest_block(d) < static_cast<std::size_t>(depth)) return d;
    }
    return -1;
  }
  /// \brief First global cell index of this rank's block along dimension d.
  std::size_t offset(int d) const noexcept { return offset_[d]; }
  /// \brief Cells this rank owns along dimension d.
  std::size_t local_cells(int d) const noexcept { return local_[d]; }
  std::size_t local_count() const noexcept { return local_[0] * local_[1] * local_[2]; }
  /// \brief Local index of the first owned cell along d: the ghost width,
  /// plus the padding that aligns a row along x with Rows::aligned.
  long owned_begin(int d) const noexcept { return pad_[d] + ghost(d); }
  /// \brief Allocation extent along d: owned cells plus ghosts on both sides
  /// (and, along x with Rows::aligned, the padding).
  std::size_t extent(int d) const noexcept { return extent_[d]; }
  Rows rows() const noexcept { return rows_; }
  /// \brief True when the low (side 0) or high (side 1) face of this block
  /// along d lies on the boundary of the global grid.
  bool physical_boundary(int d, int side) const noexcept {
    return d < ndim_ && (side == 0 ? coords_[d] == 0 : coords_[d] == dims_[d] - 1);
  }
  /// \brief The rank of the block at `offset` (each entry -1, 0 or 1) from
  /// this one, or MPI_PROC_NULL beyond the global boundary.
  int neighbor(const std::array<int, 3>& offset) const noexcept;
  /// \brief The owned cells in local indices.
  Box interior() const noexcept;
  /// \brief The Cartesian communicator of the layout (rank order = `comm`'s).
  MPI_Comm comm() const noexcept { return comm_->comm; }
  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  /// \brief E.g. "2 x 3 blocks of about 50 x 34 cells (ghost width 1)".
  std::string describe() const;

  /// \brief A zero-initialised field with this rank's extents (ghosts included).
  template <class T, class MemorySpace = Kokkos::DefaultExecutionSpace::memory_space>
  Field<T, MemorySpace> allocate(const std::string& label) const {
    Field<T, MemorySpace> f(label, extent(2), extent(1), extent(0));
    if constexpr (std::is_same_v<MemorySpace, Kokkos::HostSpace>) {
      detail::space_after_field(f.data(), f.span() * sizeof(T));
    }
    return f;
  }

  /// \brief A unique tag block for the next plan on this layout. Plans must
  /// be created in the same order on every rank (they are collective).
  int next_tag_base() const noexcept;

 private:
  struct Comm {
    MPI_Comm comm = MPI_COMM_NULL;
    int plans = 0;
    ~Comm();
  };
  int ndim_ = 2;
  int ghost_ = 1;
  std::array<std::size_t, 3> global_{1, 1, 1};
  std::array<int, 3> dims_{1, 1, 1};
  std::array<int, 3> coords_{0, 0, 0};
  std::array<std::size_t, 3> offset_{0, 0, 0};
  std::array<std::size_t, 3> local_{1, 1, 1};
  std::array<long, 3> pad_{0, 0, 0};  // cells before the low ghosts
  std::array<std::size_t, 3> extent_{1, 1, 1};
  Rows rows_ = Rows::packed;
  std::shared_ptr<Comm> comm_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace kpmap
