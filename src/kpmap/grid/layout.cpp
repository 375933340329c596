// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/grid/layout.hpp>

#include <kpmap/runtime/runtime.hpp>
#include <kpmap/transport/mpi_ops.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <limits>
#include <numeric>

namespace kpmap {

namespace detail {

void space_after_field(const void* data, std::size_t bytes) noexcept {
  // The C library maps a large block on pages of its own, each new mapping
  // just below the last, so the fields of one layout (all of one size) lie a
  // fixed number of pages apart. When that number is a multiple of 8 (a
  // 250 x 500 block with one ghost layer: 248 pages), a stencil that reads one
  // field and writes another ran at half speed on AMD Zen (docs/performance.md).
  // One or two pages mapped just below the field, inaccessible and never
  // backed by memory, make the next field's distance odd. Nothing is done
  // where those pages are taken (a field from the heap, or placed elsewhere)
  // or on systems without MAP_FIXED_NOREPLACE.
#if defined(__linux__) && defined(MAP_FIXED_NOREPLACE)
  const long page_size = sysconf(_SC_PAGESIZE);
  if (bytes < (std::size_t{256} << 10) || page_size <= 0) return;
  const auto page = static_cast<std::uintptr_t>(page_size);
  const std::uintptr_t start = reinterpret_cast<std::uintptr_t>(data) / page * page;
  const std::uintptr_t pages = (bytes + 512 + page - 1) / page;  // the mapping, headers included
  const std::uintptr_t gap = pages % 2 == 0 ? 1 : 2;
  void* spacer = mmap(reinterpret_cast<void*>(start - gap * page), gap * page, PROT_NONE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  (void)spacer;  // kept for the process's life (address space only), or MAP_FAILED
#else
  (void)data;
  (void)bytes;
#endif
}

}  // namespace detail

namespace {

std::string join(const std::array<std::size_t, 3>& v, int n) {
  std::string s;
  for (int d = 0; d < n; ++d) s += (d ? " x " : "") + std::to_string(v[d]);
  return s;
}

InputError layout_error(const std::string& what) {
  // Every rank computes the same decomposition from the same arguments, so
  // every rank raises the same error.
  return InputError("kpmap::CartesianLayout: " + what, ErrorScope::all_ranks);
}

}  // namespace

CartesianLayout::Comm::~Comm() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm);
}

CartesianLayout::CartesianLayout(const std::vector<std::size_t>& cells, int ghost,
                                 std::vector<int> ranks, MPI_Comm comm, Rows rows)
    : rows_(rows) {
  if (comm == MPI_COMM_NULL) comm = Runtime::current().comm();
  MPI_Comm_size(comm, &size_);
  if (cells.size() != 2 && cells.size() != 3) {
    throw layout_error("a grid has 2 or 3 dimensions, got " + std::to_string(cells.size()));
  }
  ndim_ = static_cast<int>(cells.size());
  for (int d = 0; d < ndim_; ++d) {
    if (cells[d] == 0) throw layout_error("dimension " + std::to_string(d) + " has no cells");
    global_[d] = cells[d];
  }
  if (ghost < 1)
    throw layout_error("the ghost width must be at least 1, got " + std::to_string(ghost));
  ghost_ = ghost;

  if (ranks.empty()) ranks.assign(ndim_, 0);
  if (static_cast<int>(ranks.size()) != ndim_) {
    throw layout_error("the process grid has " + std::to_string(ranks.size()) + " entries for a " +
                       std::to_string(ndim_) + "-D grid");
  }
  // The number of blocks the fixed entries make, in 64 bits: the entries'
  // product overflows an int long before it is refused (65536 x 65536).
  long long fixed = 1;
  bool any_free = false;
  std::string grid;
  for (int r : ranks) {
    if (r < 0) throw layout_error("a process grid entry is negative");
    if (r == 0) any_free = true;
    grid += (grid.empty() ? "" : " x ") + std::to_string(r);
    // -1: more blocks than a long long counts (three entries near 2^31).
    const long long f = r > 0 ? r : 1;
    if (fixed >= 0) fixed = fixed > std::numeric_limits<long long>::max() / f ? -1 : fixed * f;
  }
  if (fixed < 0 || fixed > size_ || size_ % fixed != 0 || (!any_free && fixed != size_)) {
    const std::string count = fixed < 0 ? grid : std::to_string(fixed);
    throw layout_error("a process grid of " + count + " blocks does not fit " +
                       std::to_string(size_) + " ranks");
  }
  std::vector<int> dims(ranks);
  if (std::all_of(ranks.begin(), ranks.end(), [](int r) { return r == 0; })) {
    // MPI_Dims_create's factors, largest first, go to the dimensions with the
    // most cells (ties: x before y before z), so blocks stay close to cubes.
    std::vector<int> factors(ndim_, 0);
    MPI_Dims_create(size_, ndim_, factors.data());
    std::sort(factors.begin(), factors.end(), std::greater<int>());
    std::vector<int> order(ndim_);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return global_[a] > global_[b]; });
    for (int i = 0; i < ndim_; ++i) dims[order[i]] = factors[i];
  } else if (any_free) {
    MPI_Dims_create(size_, ndim_, dims.data());
  }
  for (int d = 0; d < ndim_; ++d) {
    dims_[d] = dims[d];
    if (static_cast<std::size_t>(dims[d]) > global_[d]) {
      throw layout_error(std::to_string(dims[d]) + " blocks along dimension " + std::to_string(d) +
                         " but only " + std::to_string(global_[d]) + " cells; use fewer ranks " +
                         "or a larger grid");
    }
  }

  auto owner = std::make_shared<Comm>();
  int periods[3] = {0, 0, 0};
  // No reordering: rank r of the layout is rank r of `comm`.
  transport::check_mpi(MPI_Cart_create(comm, ndim_, dims_.data(), periods, 0, &owner->comm),
                       "MPI_Cart_create");
  comm_ = owner;
  MPI_Comm_rank(comm_->comm, &rank_);
  MPI_Cart_coords(comm_->comm, rank_, ndim_, coords_.data());
  for (int d = 0; d < ndim_; ++d) {
    const std::size_t p = static_cast<std::size_t>(dims_[d]);
    const std::size_t c = static_cast<std::size_t>(coords_[d]);
    local_[d] = global_[d] / p + (c < global_[d] % p ? 1 : 0);
    offset_[d] = c * (global_[d] / p) + std::min(c, global_[d] % p);
  }
  for (int d = 0; d < 3; ++d) extent_[d] = local_[d] + 2 * static_cast<std::size_t>(this->ghost(d));
  if (rows_ == Rows::aligned) {
    // 8 doubles, 64 bytes: the first owned cell of a row at a multiple of 8
    // cells from the row's start (a field's data is aligned to at least 64
    // bytes), and every row a multiple of 8 cells long; only where that
    // lengthens a row by at most an eighth (rows of about 110 cells and
    // more with one ghost layer): a narrower block stays packed.
    constexpr long line = 8;
    const long pad = (line - ghost % line) % line;
    const long packed = static_cast<long>(extent_[0]);
    const long aligned = (pad + packed + line - 1) / line * line;
    if (8 * (aligned - packed) <= packed) {
      pad_[0] = pad;
      extent_[0] = static_cast<std::size_t>(aligned);
    }
  }
}

int CartesianLayout::neighbor(const std::array<int, 3>& offset) const noexcept {
  int c[3] = {0, 0, 0};
  for (int d = 0; d < 3; ++d) {
    if (d >= ndim_) {
      if (offset[d] != 0) return MPI_PROC_NULL;
      continue;
    }
    c[d] = coords_[d] + offset[d];
    if (c[d] < 0 || c[d] >= dims_[d]) return MPI_PROC_NULL;
  }
  int r = MPI_PROC_NULL;
  MPI_Cart_rank(comm_->comm, c, &r);
  return r;
}

Box CartesianLayout::interior() const noexcept {
  Box b;
  for (int d = 0; d < 3; ++d) {
    b.lo[d] = owned_begin(d);
    b.hi[d] = owned_begin(d) + static_cast<long>(local_[d]);
  }
  return b;
}

std::string CartesianLayout::describe() const {
  std::array<std::size_t, 3> p{};
  std::array<std::size_t, 3> typical{};
  for (int d = 0; d < 3; ++d) {
    p[d] = static_cast<std::size_t>(dims_[d]);
    typical[d] = (global_[d] + p[d] - 1) / p[d];
  }
  return join(p, ndim_) + " blocks of at most " + join(typical, ndim_) + " cells over " +
         join(global_, ndim_) + " (ghost width " + std::to_string(ghost_) + ")";
}

int CartesianLayout::next_tag_base() const noexcept {
  // 32 tags per plan (one per neighbour direction), kept under MPI's
  // guaranteed tag limit of 32767.
  const int plan = comm_->plans++;
  return 64 + (plan % 1000) * 32;
}

}  // namespace kpmap
