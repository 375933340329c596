// SPDX-License-Identifier: BSD-3-Clause
// Block decomposition and halo exchange at any rank count. Owned cells hold a
// function of their global index; after an exchange every ghost cell must
// hold the same function of *its* global index where a neighbour owns it, and
// keep its sentinel everywhere else (beyond the depth, beyond the global
// boundary, and at edges and corners unless they were asked for).
// The same executable runs again with KPMAP_STAGING=always (see CMakeLists.txt).

#include "support/mpi_test.hpp"

#include <kpmap/grid/halo.hpp>
#include <kpmap/runtime/runtime.hpp>

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using kpmap::test::all_ranks;
using kpmap::test::world_size;

namespace {

constexpr double sentinel = -1.0;

double value_at(long gi, long gj, long gk, int field) {
  return 1e6 * gk + 1e3 * gj + gi + 0.25 * field;
}

// Owned cells get value_at(global index), ghosts the sentinel.
void fill(const kpmap::CartesianLayout& layout, const kpmap::Field<double>& f, int field) {
  auto h = Kokkos::create_mirror_view(f);
  const long g[3] = {layout.owned_begin(0), layout.owned_begin(1), layout.owned_begin(2)};
  for (std::size_t k = 0; k < f.extent(0); ++k) {
    for (std::size_t j = 0; j < f.extent(1); ++j) {
      for (std::size_t i = 0; i < f.extent(2); ++i) {
        const long loc[3] = {long(i), long(j), long(k)};
        bool owned = true;
        for (int d = 0; d < 3; ++d) {
          owned = owned && loc[d] >= g[d] && loc[d] < g[d] + long(layout.local_cells(d));
        }
        const long gi = long(layout.offset(0)) + long(i) - g[0];
        const long gj = long(layout.offset(1)) + long(j) - g[1];
        const long gk = long(layout.offset(2)) + long(k) - g[2];
        h(k, j, i) = owned ? value_at(gi, gj, gk, field) : sentinel;
      }
    }
  }
  Kokkos::deep_copy(f, h);
}

// Counts cells that differ from what an exchange of `depth` layers (with or
// without corners) must leave there.
std::size_t mismatches(const kpmap::CartesianLayout& layout, const kpmap::Field<double>& f,
                       int field, int depth, bool corners) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), f);
  const long g[3] = {layout.owned_begin(0), layout.owned_begin(1), layout.owned_begin(2)};
  std::size_t bad = 0;
  for (std::size_t k = 0; k < f.extent(0); ++k) {
    for (std::size_t j = 0; j < f.extent(1); ++j) {
      for (std::size_t i = 0; i < f.extent(2); ++i) {
        const long loc[3] = {long(i), long(j), long(k)};
        long glob[3];
        int outside = 0;  // dimensions in which the cell is a ghost
        bool filled = true;
        for (int d = 0; d < 3; ++d) {
          glob[d] = long(layout.offset(d)) + loc[d] - g[d];
          const long n = long(layout.local_cells(d));
          const long dist = loc[d] < g[d] ? g[d] - loc[d] : loc[d] - (g[d] + n - 1);
          if (loc[d] < g[d] || loc[d] >= g[d] + n) {
            ++outside;
            if (dist > depth) filled = false;
            if (glob[d] < 0 || glob[d] >= long(layout.global_cells(d))) filled = false;
          }
        }
        if (outside > 1 && !corners) filled = false;
        const double want =
            outside == 0 || filled ? value_at(glob[0], glob[1], glob[2], field) : sentinel;
        if (h(k, j, i) != want) {
          if (bad < 5) {
            UNSCOPED_INFO("rank " << layout.rank() << " field " << field << " local (" << i << ", "
                                  << j << ", " << k << ") holds " << h(k, j, i) << ", expected "
                                  << want);
          }
          ++bad;
        }
      }
    }
  }
  return bad;
}

}  // namespace

TEST_CASE("the blocks cover the global grid exactly once", "[halo]") {
  const auto cells = GENERATE(std::vector<std::size_t>{11, 7}, std::vector<std::size_t>{9, 6, 5},
                              std::vector<std::size_t>{3, 40});
  kpmap::CartesianLayout layout(cells, 1);
  const int nd = layout.ndim();
  int product = 1;
  for (int d = 0; d < nd; ++d) product *= layout.ranks(d);
  CHECK(product == world_size());
  // The dimension with the most cells gets the most blocks.
  int most_cells = 0;
  for (int d = 1; d < nd; ++d) {
    if (cells[d] > cells[most_cells]) most_cells = d;
  }
  for (int d = 0; d < nd; ++d) CHECK(layout.ranks(most_cells) >= layout.ranks(d));

  // Gather every block and count how often each global cell is owned.
  const std::size_t total = layout.global_count();
  std::vector<int> owned(total, 0);
  for (std::size_t k = 0; k < layout.local_cells(2); ++k) {
    for (std::size_t j = 0; j < layout.local_cells(1); ++j) {
      for (std::size_t i = 0; i < layout.local_cells(0); ++i) {
        const std::size_t gi = layout.offset(0) + i;
        const std::size_t gj = layout.offset(1) + j;
        const std::size_t gk = layout.offset(2) + k;
        owned[(gk * layout.global_cells(1) + gj) * layout.global_cells(0) + gi] += 1;
      }
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, owned.data(), int(total), MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  CHECK(std::all_of(owned.begin(), owned.end(), [](int c) { return c == 1; }));
  // Blocks differ by at most one cell along each dimension.
  for (int d = 0; d < nd; ++d) {
    const std::size_t lo = cells[d] / layout.ranks(d);
    CHECK((layout.local_cells(d) == lo || layout.local_cells(d) == lo + 1));
    CHECK(layout.physical_boundary(d, 0) == (layout.offset(d) == 0));
    CHECK(layout.physical_boundary(d, 1) == (layout.offset(d) + layout.local_cells(d) == cells[d]));
  }
}

TEST_CASE("a fixed process grid is honoured, and one that does not fit is refused", "[halo]") {
  if (world_size() % 2 == 0) {
    kpmap::CartesianLayout layout({8, 8}, 1, {1, 0});
    CHECK(layout.ranks(0) == 1);
    CHECK(layout.ranks(1) == world_size());
  }
  try {
    kpmap::CartesianLayout bad({8, 8}, 1, {world_size() + 1, 1});
    FAIL_CHECK("accepted a process grid that does not fit");
  } catch (const kpmap::InputError& e) {
    CHECK(e.all_ranks());
    CHECK_THAT(std::string(e.what()), ContainsSubstring("does not fit"));
  }
  // Entries whose product overflows an int (2^32 wrapped to 0, then size % 0).
  CHECK_THROWS_WITH(kpmap::CartesianLayout({8, 8}, 1, {65536, 65536}),
                    ContainsSubstring("a process grid of 4294967296 blocks does not fit"));
  CHECK_THROWS_WITH(
      kpmap::CartesianLayout({8, 8, 8}, 1, {2147483647, 2147483647, 3}),
      ContainsSubstring("a process grid of 2147483647 x 2147483647 x 3 blocks does not fit"));
  CHECK_THROWS_WITH(kpmap::CartesianLayout({8}, 1), ContainsSubstring("2 or 3 dimensions"));
  CHECK_THROWS_WITH(kpmap::CartesianLayout({8, 8}, 0), ContainsSubstring("ghost width"));
  if (world_size() > 1) {
    CHECK_THROWS_WITH(kpmap::CartesianLayout({1, 1}, 1), ContainsSubstring("only 1 cells"));
  }
}

TEST_CASE("halo exchange fills faces, edges and corners from the neighbours", "[halo]") {
  // Blocks of 160 cells and more along x at 1-4 ranks are wide enough for
  // aligned rows (their padding is then never written: mismatches() wants
  // the sentinel there).
  const auto cells =
      GENERATE(std::vector<std::size_t>{11, 9}, std::vector<std::size_t>{9, 8, 7},
               std::vector<std::size_t>{480, 9}, std::vector<std::size_t>{480, 8, 7});
  const auto rows = GENERATE(kpmap::Rows::packed, kpmap::Rows::aligned);
  const int depth = GENERATE(1, 2);
  const bool corners = GENERATE(false, true);
  CAPTURE(cells, rows == kpmap::Rows::aligned, depth, corners);
  kpmap::CartesianLayout layout(cells, 2, {}, MPI_COMM_NULL, rows);
  auto a = layout.allocate<double>("test::a");
  auto b = layout.allocate<double>("test::b");
  if (rows == kpmap::Rows::aligned && cells[0] == 480) {
    // Every row's first owned cell on a 64-byte boundary, whole rows of 64 bytes.
    CHECK(layout.extent(0) % 8 == 0);
    CHECK(layout.owned_begin(0) == 8);
    std::size_t misaligned = 0;
    const kpmap::Box own = layout.interior();
    for (long k = own.lo[2]; k < own.hi[2]; ++k) {
      for (long j = own.lo[1]; j < own.hi[1]; ++j) {
        misaligned += reinterpret_cast<std::uintptr_t>(&a(k, j, own.lo[0])) % 64 != 0;
      }
    }
    CHECK(misaligned == 0);
  } else {
    CHECK(layout.owned_begin(0) == 2);
    CHECK(layout.extent(0) == layout.local_cells(0) + 4);
  }
  fill(layout, a, 0);
  fill(layout, b, 1);
  kpmap::HaloExchange<double> halo(layout, {a, b}, {depth, corners});
  halo.exchange();
  // Twice with the same plan: the buffers are reused.
  fill(layout, a, 0);
  fill(layout, b, 1);
  halo.start();
  halo.finish();
  Kokkos::fence();
  const std::size_t bad =
      mismatches(layout, a, 0, depth, corners) + mismatches(layout, b, 1, depth, corners);
  CHECK(all_ranks(bad == 0));
  // One message per neighbour holds both fields.
  std::size_t expected_neighbors = 0;
  for (int oz = -1; oz <= 1; ++oz) {
    for (int oy = -1; oy <= 1; ++oy) {
      for (int ox = -1; ox <= 1; ++ox) {
        const int nz = (ox != 0) + (oy != 0) + (oz != 0);
        if (nz == 0 || (!corners && nz > 1)) continue;
        if (layout.neighbor({ox, oy, oz}) != MPI_PROC_NULL) ++expected_neighbors;
      }
    }
  }
  CHECK(halo.neighbor_count() == expected_neighbors);
}

TEST_CASE("interior work overlaps the exchange between start and finish", "[halo]") {
  kpmap::CartesianLayout layout({13, 10}, 1);
  auto u = layout.allocate<double>("test::u");
  auto out = layout.allocate<double>("test::out");
  fill(layout, u, 0);
  kpmap::HaloExchange<double> halo(layout, {u});
  halo.start();
  // start() only packs and posts: no ghost is written before finish() (every
  // ghost still holds its sentinel, as after an exchange of depth 0).
  CHECK(all_ranks(mismatches(layout, u, 0, 0, false) == 0));
  // Reads of owned cells are allowed while messages are in flight. The order
  // of the Kokkos Tools callbacks (tests/CMakeLists.txt, test_halo.overlap)
  // shows this kernel running after start's region has closed and before
  // finish's opens, with every unpack inside finish.
  const auto box = layout.interior();
  Kokkos::parallel_for(
      "test::interior_copy",
      Kokkos::MDRangePolicy<Kokkos::Rank<3>>({box.lo[2], box.lo[1], box.lo[0]},
                                             {box.hi[2], box.hi[1], box.hi[0]}),
      KOKKOS_LAMBDA(long k, long j, long i) { out(k, j, i) = 2 * u(k, j, i); });
  halo.finish();
  Kokkos::fence();
  CHECK(all_ranks(mismatches(layout, u, 0, 1, false) == 0));
}

TEST_CASE("a halo deeper than the ghosts or than the thinnest block is refused", "[halo]") {
  kpmap::CartesianLayout layout({16, 16}, 2);
  auto u = layout.allocate<double>("test::u");
  try {
    kpmap::HaloExchange<double> halo(layout, {u}, {3, false});
    FAIL_CHECK("accepted depth 3 with ghost width 2");
  } catch (const kpmap::InputError& e) {
    CHECK(e.all_ranks());
    CHECK_THAT(std::string(e.what()), ContainsSubstring("depth 3 is outside [1, ghost width 2]"));
  }
  if (world_size() >= 3) {
    // world_size blocks along x of a 4-cell-wide grid: some blocks have one cell.
    kpmap::CartesianLayout thin({4, 64}, 2, {world_size(), 1});
    if (4 / world_size() < 2) {
      auto v = thin.allocate<double>("test::v");
      CHECK_THROWS_WITH(kpmap::HaloExchange<double>(thin, {v}, {2, false}),
                        ContainsSubstring("less than the halo depth 2"));
    }
  }
}
