// SPDX-License-Identifier: BSD-3-Clause
// Collectives that move data (all_gather, all_to_all, psum_scatter, ppermute,
// pbroadcast): exact expected values at any rank count. Elements are
// integer-valued doubles, so every sum is exact and results compare with ==.
// The same executable runs again with KPMAP_STAGING=always (see CMakeLists.txt).

#include "support/collective_checks.hpp"
#include "support/mpi_test.hpp"

#include <kpmap/collectives/collectives.hpp>
#include <kpmap/spmd/pmap.hpp>
#include <kpmap/transport/buffer.hpp>
#include <kpmap/transport/mpi_ops.hpp>

#include <catch2/catch_template_test_macros.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdlib>
#include <tuple>
#include <vector>

using Catch::Matchers::ContainsSubstring;
// Exec, fill, matches, p, r, tri (support/collective_checks.hpp), world_rank, world_size.
using namespace kpmap::test;

TEST_CASE("all_gather, stacked and tiled", "[collectives]") {
  const int P = world_size();
  const int me = world_rank();
  Kokkos::View<double**, Exec> x("x", 2, 3);
  fill(x, [&](std::size_t k) { return 100.0 * me + k; });
  SECTION("stacked") {
    auto g = kpmap::all_gather(x, "devices");
    static_assert(decltype(g)::rank == 3);
    REQUIRE(g.extent(0) == std::size_t(P));
    CHECK(matches(g, [&](std::size_t k) { return 100.0 * (k / 6) + k % 6; }));
  }
  SECTION("stacked along a chosen axis, as JAX's all_gather(x, ax, axis=d)") {
    // A new dimension of size P at 1: g(i, r, j) = rank r's x(i, j).
    auto g1 = kpmap::all_gather(x, "devices", 1);
    REQUIRE(g1.extent(0) == 2);
    REQUIRE(g1.extent(1) == std::size_t(P));
    REQUIRE(g1.extent(2) == 3);
    CHECK(matches(g1, [&](std::size_t k) {
      const std::size_t i = k / (3 * P), r = (k / 3) % P, j = k % 3;
      return 100.0 * r + 3 * i + j;
    }));
    // At 2 (the end): g(i, j, r).
    auto g2 = kpmap::all_gather(x, "devices", 2);
    REQUIRE(g2.extent(2) == std::size_t(P));
    CHECK(matches(g2, [&](std::size_t k) {
      const std::size_t i = k / (3 * P), j = (k / P) % 3, r = k % P;
      return 100.0 * r + 3 * i + j;
    }));
    CHECK_THROWS_WITH(kpmap::all_gather(x, "devices", 3),
                      ContainsSubstring("dimension 3 cannot stack the blocks of a View of rank 2 "
                                        "(a new dimension 0 to 2 of the rank-3 result)"));
  }
  SECTION("tiled along 0") {
    auto g = kpmap::all_gather(x, "devices", kpmap::Tiled{0});
    REQUIRE(g.extent(0) == std::size_t(2 * P));
    CHECK(matches(g, [&](std::size_t k) { return 100.0 * (k / 6) + k % 6; }));
  }
  SECTION("tiled along 1, from a LayoutLeft View") {
    Kokkos::View<double**, Kokkos::LayoutLeft, Exec> xl("xl", 2, 3);
    Kokkos::deep_copy(xl, x);
    auto g = kpmap::all_gather(xl, "devices", kpmap::Tiled{1});
    REQUIRE(g.extent(1) == std::size_t(3 * P));
    // g(i, j) = rank (j / 3)'s x(i, j % 3)
    CHECK(matches(g, [&](std::size_t k) {
      const std::size_t i = k / (3 * P), j = k % (3 * P);
      return 100.0 * (j / 3) + i * 3 + j % 3;
    }));
  }
  SECTION("a rank-0 View gathers into a vector") {
    Kokkos::View<double, Exec> s("s");
    Kokkos::deep_copy(s, me + 0.5);
    auto g = kpmap::all_gather(s, "devices");
    CHECK(matches(g, [&](std::size_t k) { return k + 0.5; }));
  }
}

TEST_CASE("all_to_all, untiled as JAX's default", "[collectives]") {
  const std::size_t P = world_size();
  const std::size_t r = world_rank();
  auto value = [](std::size_t q, std::size_t i, std::size_t j) {
    return 1000.0 * q + 10.0 * i + j;
  };
  // x_q(i, j) = 1000 q + 10 i + j of shape (P, 3) on rank q. JAX: the result
  // has shape np.insert(np.delete(x.shape, split), concat, P), and on rank r
  // its index j along concat holds x_j at index r along split.
  Kokkos::View<double**, Exec> x("x", P, 3);
  fill(x, [&](std::size_t k) { return value(r, k / 3, k % 3); });
  SECTION("split 0, concat 1: shape (3, P), y(i, j) = x_j(r, i)") {
    auto y = kpmap::all_to_all(x, "devices", 0, 1);
    REQUIRE(y.extent(0) == 3);
    REQUIRE(y.extent(1) == P);
    CHECK(matches(y, [&](std::size_t k) { return value(k % P, r, k / P); }));
  }
  SECTION("split 0, concat 0: shape (P, 3), y(j, i) = x_j(r, i)") {
    auto y = kpmap::all_to_all(x, "devices", 0, 0);
    REQUIRE(y.extent(0) == P);
    CHECK(matches(y, [&](std::size_t k) { return value(k / 3, r, k % 3); }));
  }
  SECTION("split 1, concat 0 of a (3, P) View: shape (P, 3), y(j, i) = x_j(i, r)") {
    Kokkos::View<double**, Exec> xt("xt", 3, P);
    fill(xt, [&](std::size_t k) { return value(r, k / P, k % P); });
    auto y = kpmap::all_to_all(xt, "devices", 1, 0);
    REQUIRE(y.extent(0) == P);
    REQUIRE(y.extent(1) == 3);
    CHECK(matches(y, [&](std::size_t k) { return value(k / 3, k % 3, r); }));
  }
  SECTION("a split extent other than the axis size is an error") {
    Kokkos::View<double**, Exec> wide("wide", P + 1, 3);
    CHECK_THROWS_WITH(kpmap::all_to_all(wide, "devices", 0, 1),
                      ContainsSubstring("has extent " + std::to_string(P + 1)) &&
                          ContainsSubstring("kpmap::tiled"));
  }
  SECTION("non-blocking") {
    auto y = kpmap::iall_to_all(x, "devices", 0, 1).wait();
    CHECK(matches(y, [&](std::size_t k) { return value(k % P, r, k / P); }));
  }
}

TEST_CASE("all_to_all, tiled", "[collectives]") {
  const std::size_t P = world_size();
  const std::size_t me = world_rank();
  // x(i, j) on rank q = 1000 q + 10 i + j, shape (2P, 3).
  Kokkos::View<double**, Exec> x("x", 2 * P, 3);
  fill(x, [&](std::size_t k) { return 1000.0 * me + 10.0 * (k / 3) + k % 3; });
  auto value = [](std::size_t q, std::size_t i, std::size_t j) {
    return 1000.0 * q + 10.0 * i + j;
  };
  SECTION("split 0, concat 0") {
    auto y = kpmap::all_to_all(x, "devices", 0, 0, kpmap::tiled);
    REQUIRE(y.extent(0) == 2 * P);
    // Block q of y comes from rank q: its rows 2*me, 2*me+1.
    CHECK(matches(y, [&](std::size_t k) {
      const std::size_t i = k / 3, j = k % 3;
      return value(i / 2, 2 * me + i % 2, j);
    }));
  }
  SECTION("split 0, concat 1") {
    auto y = kpmap::all_to_all(x, "devices", 0, 1, kpmap::tiled);
    REQUIRE(y.extent(0) == 2);
    REQUIRE(y.extent(1) == 3 * P);
    CHECK(matches(y, [&](std::size_t k) {
      const std::size_t i = k / (3 * P), j = k % (3 * P);
      return value(j / 3, 2 * me + i, j % 3);
    }));
  }
  SECTION("an extent the ranks cannot split is an error") {
    Kokkos::View<double**, Exec> odd("odd", 2 * P + 1, 3);
    if (P > 1)
      CHECK_THROWS_WITH(kpmap::all_to_all(odd, "devices", 0, 0, kpmap::tiled),
                        ContainsSubstring("cannot split evenly"));
  }
}

TEST_CASE("psum_scatter", "[collectives]") {
  const std::size_t P = world_size();
  const double me = r() + 1;
  const std::size_t mine = world_rank();
  SECTION("untiled drops the scattered dimension") {
    Kokkos::View<double**, Exec> x("x", P, 3);
    fill(x, [&](std::size_t k) { return me * (10.0 * (k / 3) + k % 3); });
    auto y = kpmap::psum_scatter(x, "devices");
    static_assert(decltype(y)::rank == 1);
    CHECK(matches(y, [&](std::size_t j) { return tri() * (10.0 * mine + j); }));
  }
  SECTION("tiled along 1") {
    Kokkos::View<double**, Exec> x("x", 2, 2 * P);
    fill(x, [&](std::size_t k) { return me * k; });
    auto y = kpmap::psum_scatter(x, "devices", kpmap::Tiled{1});
    REQUIRE(y.extent(1) == 2);
    CHECK(matches(y, [&](std::size_t k) {
      const std::size_t i = k / 2, j = k % 2;
      return tri() * (i * 2 * P + 2 * mine + j);
    }));
  }
}

TEST_CASE("all_gather_inplace completes uneven blocks, empty ones too", "[collectives]") {
  // Rank j owns 2j + 1 elements, or none for j = 1: blocks that no rank
  // count divides, in place on one View.
  const std::size_t P = world_size();
  std::vector<std::size_t> counts(P);
  std::vector<std::size_t> first(P + 1, 0);
  for (std::size_t j = 0; j < P; ++j) {
    counts[j] = j == 1 ? 0 : 2 * j + 1;
    first[j + 1] = first[j] + counts[j];
  }
  const std::size_t me = world_rank();
  Kokkos::View<double*, Exec> x("x", first[P]);
  // Only the own block holds values; the rest is what the gather must write.
  fill(x, [&](std::size_t k) { return k >= first[me] && k < first[me + 1] ? 3.0 * k : -1.0; });
  kpmap::all_gather_inplace(Exec(), x, counts, "devices");
  CHECK(matches(x, [&](std::size_t k) { return 3.0 * k; }));
  std::vector<std::size_t> wrong(counts);
  wrong[0] += 1;
  CHECK_THROWS_WITH(kpmap::all_gather_inplace(x, wrong, "devices"),
                    ContainsSubstring("one block per rank"));
}

TEST_CASE("iall_gather_inplace completes blocks at any displacements while work goes on",
          "[collectives]") {
  // Rank j's block: j + 2 elements, after a gap of one that stays as it was.
  const std::size_t P = world_size();
  std::vector<int> counts(P), displs(P);
  int end = 0;
  for (std::size_t j = 0; j < P; ++j) {
    counts[j] = static_cast<int>(j + 2);
    displs[j] = end + 1;  // a gap of one before each block
    end = displs[j] + counts[j];
  }
  const auto me = static_cast<std::size_t>(world_rank());
  const auto owner = [&](std::size_t k) {
    for (std::size_t j = 0; j < P; ++j) {
      if (k >= std::size_t(displs[j]) && k < std::size_t(displs[j] + counts[j])) return int(j);
    }
    return -1;
  };
  Kokkos::View<double*, Exec> x("x", static_cast<std::size_t>(end));
  fill(x, [&](std::size_t k) { return owner(k) == int(me) ? 2.0 * k : -1.0; });
  kpmap::Request req = kpmap::iall_gather_inplace(Exec(), x, counts, displs, "devices");
  Kokkos::View<double*, Exec> other("other", 16);  // work in the meantime
  Kokkos::deep_copy(other, 1.0);
  req.wait();
  CHECK(matches(x, [&](std::size_t k) { return owner(k) >= 0 ? 2.0 * k : -1.0; }));
  std::vector<int> past(displs);
  past[0] = end;
  CHECK_THROWS_WITH(kpmap::iall_gather_inplace(Exec(), x, counts, past, "devices"),
                    ContainsSubstring("each within a contiguous View"));
}

TEST_CASE("ipsum_scatter_blocks sums uneven blocks to their owners", "[collectives]") {
  // Rank j owns 2j + 1 elements, or none for j = 1; rank r contributes
  // (r + 1) k to element k, so element k sums to tri() k on its owner.
  const std::size_t P = world_size();
  std::vector<int> counts(P);
  std::size_t total = 0, mine = 0;
  for (std::size_t j = 0; j < P; ++j) {
    counts[j] = j == 1 ? 0 : static_cast<int>(2 * j + 1);
    if (j == static_cast<std::size_t>(world_rank())) mine = total;
    total += static_cast<std::size_t>(counts[j]);
  }
  Kokkos::View<double*, Exec> x("x", total);
  fill(x, [&](std::size_t k) { return (r() + 1) * k; });
  Kokkos::View<double*, Exec> out("out", counts[world_rank()]);
  kpmap::Request req = kpmap::ipsum_scatter_blocks(Exec(), x, counts, out, "devices");
  req.wait();
  CHECK(matches(out, [&](std::size_t k) { return tri() * (mine + k); }));
  Kokkos::View<double*, Exec> wrong("wrong", out.extent(0) + 1);
  CHECK_THROWS_WITH(kpmap::ipsum_scatter_blocks(Exec(), x, counts, wrong, "devices"),
                    ContainsSubstring("one block per rank"));
}

TEST_CASE("ppermute and pbroadcast", "[collectives]") {
  const int P = world_size();
  const int me = world_rank();
  Kokkos::View<double*, Exec> x("x", 5);
  fill(x, [&](std::size_t k) { return 10.0 * me + k; });
  SECTION("a ring shift") {
    std::vector<kpmap::PermutePair> ring;
    for (int i = 0; i < P; ++i) ring.emplace_back(i, (i + 1) % P);
    auto y = kpmap::ppermute(x, "devices", ring);
    CHECK(matches(y, [&](std::size_t k) { return 10.0 * ((me + P - 1) % P) + k; }));
  }
  SECTION("a rank that no pair sends to receives zeros") {
    auto y = kpmap::ppermute(x, "devices", {{0, P - 1}});
    if (me == P - 1) {
      CHECK(matches(y, [&](std::size_t k) { return 0.0 + k; }));
    } else {
      CHECK(matches(y, [&](std::size_t) { return 0.0; }));
    }
  }
  SECTION("a pair outside the axis is refused") {
    CHECK_THROWS_WITH(kpmap::ppermute(x, "devices", {{0, P}}), ContainsSubstring("outside axis"));
  }
  SECTION("pbroadcast from the last rank, out of place and in place") {
    auto y = kpmap::pbroadcast(x, "devices", P - 1);
    CHECK(matches(y, [&](std::size_t k) { return 10.0 * (P - 1) + k; }));
    CHECK(matches(x, [&](std::size_t k) { return 10.0 * me + k; }));  // unchanged
    kpmap::pbroadcast_inplace(x, "devices", P - 1);
    CHECK(matches(x, [&](std::size_t k) { return 10.0 * (P - 1) + k; }));
  }
}
