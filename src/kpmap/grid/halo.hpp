#pragma once
/// \file
/// \brief Cartesian block decomposition of a global 2-D or 3-D cell grid, and
/// persistent halo-exchange plans over it.
///
/// A CartesianLayout splits a grid of cells over the ranks of a communicator
/// in blocks (a process grid chosen with MPI_Dims_create, any rank count,
/// primes too) and gives every block a ring of ghost cells. A HaloExchange is
/// a plan for one set of fields: it packs the cells next to each neighbour
/// into persistent buffers with Kokkos kernels, sends all fields to a
/// neighbour in one message with non-blocking MPI, and unpacks what arrives
/// into the ghost cells. start() and finish() split the exchange so that work
/// on the interior overlaps the messages.
///
/// Index conventions: dimensions are numbered d = 0 (x), 1 (y), 2 (z). A
/// field is a `Kokkos::View<T***, LayoutRight>` indexed `(k, j, i)` = (z, y,
/// x), x fastest; a 2-D layout has one plane (extent 1 in z, no ghosts in z).
/// Local indices include the ghosts: the cells this rank owns are
/// `[ghost, ghost + local_cells(d))` in every dimension that exists.

#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/base/detail/mpi_datatype.hpp>
#include <kpmap/base/error.hpp>
#include <kpmap/base/policy.hpp>
#include <kpmap/collectives/collectives.hpp>
#include <kpmap/tools/profiling.hpp>
#include <kpmap/transport/buffer.hpp>

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
/// pages below the field at `data` (see halo.cpp).
void space_after_field(const void* data, std::size_t bytes) noexcept;
}  // namespace detail

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
  /// \throws kpmap::InputError (on every rank) when the grid has the wrong
  /// number of dimensions, an empty dimension, a process grid that does not
  /// fit the rank count, or more blocks than cells along a dimension.
  CartesianLayout(const std::vector<std::size_t>& cells, int ghost, std::vector<int> ranks = {},
                  MPI_Comm comm = MPI_COMM_NULL);

  int ndim() const noexcept { return ndim_; }
  /// \brief Ghost width in dimension d (0 for the z dimension of a 2-D layout).
  int ghost(int d) const noexcept { return d < ndim_ ? ghost_ : 0; }
  int ghost() const noexcept { return ghost_; }
  std::size_t global_cells(int d) const noexcept { return global_[d]; }
  /// \brief Product of the global extents.
  std::size_t global_count() const noexcept { return global_[0] * global_[1] * global_[2]; }
  /// \brief Blocks along dimension d (the process grid).
  int ranks(int d) const noexcept { return dims_[d]; }
  /// \brief First global cell index of this rank's block along dimension d.
  std::size_t offset(int d) const noexcept { return offset_[d]; }
  /// \brief Cells this rank owns along dimension d.
  std::size_t local_cells(int d) const noexcept { return local_[d]; }
  std::size_t local_count() const noexcept { return local_[0] * local_[1] * local_[2]; }
  /// \brief Allocation extent along d: owned cells plus ghosts on both sides.
  std::size_t extent(int d) const noexcept { return local_[d] + 2 * ghost(d); }
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
  std::shared_ptr<Comm> comm_;
  int rank_ = 0;
  int size_ = 1;
};

/// \brief What a HaloExchange moves.
struct HaloOptions {
  /// Ghost layers to fill, 1 .. the layout's ghost width.
  int depth = 1;
  /// Fill edge and corner ghosts too (diagonal neighbours get their own
  /// messages), as 9- and 27-point stencils need; faces only otherwise.
  bool corners = false;
};

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

/// \brief A persistent halo-exchange plan for a fixed set of fields on a CartesianLayout.
///
/// Construction sizes the buffers once (device buffers, plus pinned host
/// mirrors when MPI cannot take device pointers); each exchange then packs,
/// sends, receives and unpacks without allocating. Every neighbour receives
/// one message holding all fields. Ghosts on the global boundary are left
/// untouched: physical boundary conditions belong to the caller.
///
/// start() and finish() are collective over the layout's communicator in the
/// sense that every rank must call them in the same order for the same plans
/// (each rank talks only to its neighbours). Between start() and finish()
/// the caller may read the fields anywhere and write owned cells that are
/// not in any neighbour's send box (the interior shrunk by `depth`), but must
/// not write ghosts.
template <class T = double, class ExecSpace = Kokkos::DefaultExecutionSpace>
class HaloExchange {
 public:
  using memory_space = typename ExecSpace::memory_space;
  using field_type = Field<T, memory_space>;

  /// Collective (see the class comment). The fields must have the layout's
  /// extents and stay allocated for the life of the plan.
  /// \throws kpmap::InputError for a bad depth, too many fields, or blocks
  /// thinner than the depth.
  HaloExchange(const CartesianLayout& layout, const std::vector<field_type>& fields,
               HaloOptions options = {})
      : layout_(layout), options_(options), nfields_(fields.size()) {
    if (fields.empty() || fields.size() > static_cast<std::size_t>(detail::max_halo_fields)) {
      throw InputError("kpmap::HaloExchange: a plan moves 1 to " +
                       std::to_string(detail::max_halo_fields) + " fields, got " +
                       std::to_string(fields.size()));
    }
    for (std::size_t f = 0; f < fields.size(); ++f) {
      for (int d = 0; d < 3; ++d) {
        if (fields[f].extent(2 - d) != layout.extent(d)) {
          throw Error("kpmap::HaloExchange: field '" + fields[f].label() +
                      "' does not have the layout's extents");
        }
      }
      // The copy kernels address each field's cells by one offset (HaloCell).
      if (!fields[f].span_is_contiguous()) {
        throw Error("kpmap::HaloExchange: field '" + fields[f].label() +
                    "' is not contiguous (padded rows or a strided subview)");
      }
      fields_[f] = fields[f];
    }
    neighbors_ = detail::plan_neighbors(layout, options, nfields_, layout.next_tag_base());
    std::size_t total = 0;
    for (const auto& n : neighbors_) total += n.cells * nfields_;
    send_ = Kokkos::View<T*, memory_space>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::HaloExchange::send"), total);
    recv_ = Kokkos::View<T*, memory_space>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::HaloExchange::recv"), total);
    // The transport's decision, as for every collective: device memory goes
    // to MPI as is when MPI is GPU-aware, else through pinned leases of the
    // one staging pool, held for the life of the plan.
    send_mpi_ = transport::make_buffer<T, memory_space>(send_.data(), total);
    recv_mpi_ = transport::make_buffer<T, memory_space>(recv_.data(), total);
    send_cells_ = detail::halo_cells<memory_space>(neighbors_, true, layout_,
                                                   "kpmap::HaloExchange::send_cells");
    recv_cells_ = detail::halo_cells<memory_space>(neighbors_, false, layout_,
                                                   "kpmap::HaloExchange::recv_cells");
  }

  HaloExchange(const HaloExchange&) = delete;
  HaloExchange& operator=(const HaloExchange&) = delete;

  /// \brief Waits for an exchange still in flight: MPI must never be left
  /// writing into freed buffers.
  ~HaloExchange() {
    if (!requests_.empty()) {
      MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
    }
  }

  /// \brief Packs the send boxes on `exec` and posts every message.
  void start(const ExecSpace& exec = ExecSpace()) {
    const ProfilingRegion region("kpmap::HaloExchange::start", trace::Track::communication);
    if (!requests_.empty()) throw Error("kpmap::HaloExchange::start: an exchange is in flight");
    copy<true>(exec, send_, send_cells_, "kpmap::HaloExchange::pack");
    transport::to_mpi(exec, send_mpi_);
    // MPI reads the send buffers from its own threads or DMA engines and knows
    // nothing of Kokkos' asynchronous kernels and copies: they must be done.
    detail::fence(exec, "kpmap::HaloExchange: packed buffers ready for MPI");
    detail::post_halo_messages(neighbors_, nfields_, detail::mpi_datatype<T>(), recv_mpi_.mpi,
                               send_mpi_.mpi, sizeof(T), layout_.comm(), requests_);
  }

  /// \brief Waits for the messages and unpacks them into the ghosts on `exec`.
  /// Work enqueued on `exec` afterwards sees the ghosts.
  void finish(const ExecSpace& exec = ExecSpace()) {
    const ProfilingRegion region("kpmap::HaloExchange::finish", trace::Track::communication);
    if (requests_.empty() && !neighbors_.empty()) {
      throw Error("kpmap::HaloExchange::finish: no exchange was started");
    }
    if (!requests_.empty()) {
      const int rc =
          MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
      requests_.clear();
      if (rc != MPI_SUCCESS) throw Error("kpmap::HaloExchange: MPI_Waitall failed");
    }
    transport::from_mpi(exec, recv_mpi_);
    copy<false>(exec, recv_, recv_cells_, "kpmap::HaloExchange::unpack");
  }

  /// \brief start() then finish().
  void exchange(const ExecSpace& exec = ExecSpace()) {
    const ProfilingRegion region("kpmap::HaloExchange::exchange", trace::Track::communication);
    start(exec);
    finish(exec);
  }

  const CartesianLayout& layout() const noexcept { return layout_; }
  const HaloOptions& options() const noexcept { return options_; }
  /// \brief Number of neighbours this rank exchanges with.
  std::size_t neighbor_count() const noexcept { return neighbors_.size(); }
  /// \brief True when buffers go through pinned host memory.
  bool staged() const noexcept { return send_mpi_.staged(); }

 private:
  // One kernel for every neighbour: a thread per cell of the index list.
  template <bool Pack>
  void copy(const ExecSpace& exec, const Kokkos::View<T*, memory_space>& buffer,
            const Kokkos::View<detail::HaloCell*, memory_space>& cells, const char* label) {
    if (cells.extent(0) == 0) return;
    Kokkos::parallel_for(label, Kokkos::RangePolicy<ExecSpace>(exec, 0, cells.extent(0)),
                         detail::HaloCopy<T, memory_space, Pack>{fields_, buffer, cells,
                                                                 static_cast<int>(nfields_)});
  }

  CartesianLayout layout_;
  HaloOptions options_;
  std::size_t nfields_;
  Kokkos::Array<field_type, detail::max_halo_fields> fields_;
  std::vector<detail::HaloNeighbor> neighbors_;
  Kokkos::View<T*, memory_space> send_;
  Kokkos::View<T*, memory_space> recv_;
  // The cells each kernel walks (detail::halo_cells).
  Kokkos::View<detail::HaloCell*, memory_space> send_cells_;
  Kokkos::View<detail::HaloCell*, memory_space> recv_cells_;
  transport::MpiBuffer<T, memory_space> send_mpi_;  // how send_ reaches MPI
  transport::MpiBuffer<T, memory_space> recv_mpi_;
  std::vector<MPI_Request> requests_;
};

}  // namespace kpmap
