// Collectives that move data (all_gather, all_to_all, psum_scatter, ppermute,
// pbroadcast): exact expected values at any rank count. Elements are
// integer-valued doubles, so every sum is exact and results compare with ==.
// The same executable runs again with KPMAP_STAGING=always (see CMakeLists.txt).

#include "support/collective_checks.hpp"
#include "support/mpi_test.hpp"

#include <kpmap/collectives.hpp>
#include <kpmap/pmap.hpp>
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

TEST_CASE("all_to_all", "[collectives]") {
  const std::size_t P = world_size();
  const std::size_t me = world_rank();
  // x(i, j) on rank q = 1000 q + 10 i + j, shape (2P, 3).
  Kokkos::View<double**, Exec> x("x", 2 * P, 3);
  fill(x, [&](std::size_t k) { return 1000.0 * me + 10.0 * (k / 3) + k % 3; });
  auto value = [](std::size_t q, std::size_t i, std::size_t j) {
    return 1000.0 * q + 10.0 * i + j;
  };
  SECTION("split 0, concat 0") {
    auto y = kpmap::all_to_all(x, "devices", 0, 0);
    REQUIRE(y.extent(0) == 2 * P);
    // Block q of y comes from rank q: its rows 2*me, 2*me+1.
    CHECK(matches(y, [&](std::size_t k) {
      const std::size_t i = k / 3, j = k % 3;
      return value(i / 2, 2 * me + i % 2, j);
    }));
  }
  SECTION("split 0, concat 1") {
    auto y = kpmap::all_to_all(x, "devices", 0, 1);
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
      CHECK_THROWS_WITH(kpmap::all_to_all(odd, "devices", 0, 0),
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
  SECTION("pbroadcast from the last rank") {
    kpmap::pbroadcast(x, "devices", P - 1);
    CHECK(matches(x, [&](std::size_t k) { return 10.0 * (P - 1) + k; }));
  }
}
