// SPDX-License-Identifier: BSD-3-Clause
// Collectives on trees of Views out of place: each returns a new tree, as
// the in-place forms (test_collectives_trees.cpp) leave theirs, and the
// argument stays as it was. Exact expected values at any rank count, as in
// test_collectives.cpp (part of the same executable).

#include "support/collective_checks.hpp"
#include "support/mpi_test.hpp"

#include <kpmap/collectives/collectives.hpp>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <Kokkos_Core.hpp>

#include <tuple>
#include <vector>

using Catch::Matchers::ContainsSubstring;
// Exec, fill, matches, p, r, tri (support/collective_checks.hpp), world_rank, world_size.
using namespace kpmap::test;

namespace {
// A user type without `using memory_space`: its Views live in the default
// execution space's memory, and its visitor is const (as a model's
// parameters often are).
struct Params {
  Kokkos::View<double**, Exec> w;
  Kokkos::View<double*, Exec> b;
  template <class F>
  void for_each_view(F&& f) const {
    f(w);
    f(b);
  }
};
// A visitor that hands out copies of its Views, which an out-of-place
// collective cannot replace.
struct HandsOutCopies {
  Kokkos::View<double*, Exec> w;
  template <class F>
  void for_each_view(F&& f) const {
    Kokkos::View<double*, Exec> copy = w;
    f(copy);
  }
};
}  // namespace

TEST_CASE("trees out of place: new trees as the in-place forms leave, the argument unchanged",
          "[collectives][tree]") {
  const double me = r() + 1;
  Kokkos::View<double*, Exec> a("a", 10);
  Kokkos::View<float*, Exec> f("f", 3);
  Kokkos::View<int*, Exec> n("n", 5);
  auto init = [&] {
    fill(a, [&](std::size_t k) { return me * (k + 1.0); });
    fill(f, [&](std::size_t k) { return me * (k + 0.5); });
    fill(n, [&](std::size_t k) { return me * (k + 1.0); });
  };
  const auto unchanged = [&] {
    CHECK(matches(a, [&](std::size_t k) { return me * (k + 1.0); }));
    CHECK(matches(f, [&](std::size_t k) { return me * (k + 0.5); }));
  };
  SECTION("a tuple of three element types: psum, pmax, pmin, pmean") {
    init();
    const auto [sa, sf, sn] = kpmap::psum(std::make_tuple(a, f, n), "devices");
    unchanged();
    CHECK(matches(n, [&](std::size_t k) { return me * (k + 1.0); }));
    CHECK(sa.data() != a.data());
    // The in-place form on the argument itself, element for element the same.
    kpmap::psum_inplace(std::tie(a, f, n), "devices");
    CHECK(matches(sa, [&](std::size_t k) { return tri() * (k + 1.0); }));
    CHECK(matches(sf, [&](std::size_t k) { return tri() * (k + 0.5); }));
    CHECK(matches(sn, [&](std::size_t k) { return tri() * (k + 1.0); }));
    auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a);
    auto hsa = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), sa);
    for (std::size_t k = 0; k < 10; ++k) CHECK(hsa(k) == ha(k));
    init();
    const auto [xa, xn] = kpmap::pmax(std::make_tuple(a, n), "devices");
    const auto [ia, in] = kpmap::pmin(std::make_tuple(a, n), "devices");
    const auto [ma, mf] = kpmap::pmean(std::make_tuple(a, f), "devices");
    unchanged();
    CHECK(matches(xa, [&](std::size_t k) { return p() * (k + 1.0); }));
    CHECK(matches(xn, [&](std::size_t k) { return p() * (k + 1.0); }));
    CHECK(matches(ia, [&](std::size_t k) { return 1.0 * (k + 1.0); }));
    CHECK(matches(in, [&](std::size_t k) { return 1.0 * (k + 1.0); }));
    CHECK(matches(
        ma, [&](std::size_t k) { return tri() / p() * (k + 1.0); }, 1e-15));
    CHECK(matches(
        mf, [&](std::size_t k) { return tri() / p() * (k + 0.5); }, 1e-6));
  }
  SECTION("a vector of Views") {
    std::vector<Kokkos::View<double*, Exec>> v;
    for (std::size_t len : {1, 7, 300}) {
      v.emplace_back("v", len);
      fill(v.back(), [&](std::size_t k) { return me * (k + len); });
    }
    const auto s = kpmap::psum(v, "devices");
    REQUIRE(s.size() == 3);
    for (std::size_t i = 0; i < 3; ++i) {
      const double len = double(v[i].extent(0));
      CHECK(s[i].extent(0) == v[i].extent(0));
      CHECK(matches(s[i], [&](std::size_t k) { return tri() * (k + len); }));
      CHECK(matches(v[i], [&](std::size_t k) { return me * (k + len); }));
    }
  }
  SECTION("a struct that declares no memory space, and a weighted mean") {
    Params g{Kokkos::View<double**, Exec>("w", 2, 3), Kokkos::View<double*, Exec>("b", 4)};
    fill(g.w, [&](std::size_t k) { return me * (k + 1.0); });
    fill(g.b, [&](std::size_t k) { return me - k; });
    const Params s = kpmap::psum(g, "devices");
    CHECK(s.w.data() != g.w.data());
    CHECK(s.w.extent(1) == 3);
    CHECK(matches(s.w, [&](std::size_t k) { return tri() * (k + 1.0); }));
    CHECK(matches(s.b, [&](std::size_t k) { return tri() - p() * k; }));
    CHECK(matches(g.w, [&](std::size_t k) { return me * (k + 1.0); }));
    // Rank r's values are means over r + 1 samples.
    const Params m = kpmap::pmean(g, "devices", kpmap::Weight{me});
    double sq = 0;
    for (int q = 1; q <= world_size(); ++q) sq += q * q;
    CHECK(matches(
        m.w, [&](std::size_t k) { return sq / tri() * (k + 1.0); }, 1e-15));
    // In place, with no memory space declared either.
    kpmap::psum_inplace(g, "devices");
    CHECK(matches(g.b, [&](std::size_t k) { return tri() - p() * k; }));
  }
  SECTION("a visitor that hands out copies is refused, naming the fix") {
    HandsOutCopies c{Kokkos::View<double*, Exec>("w", 3)};
    CHECK_THROWS_WITH(kpmap::psum(c, "devices"), ContainsSubstring("hands out copies"));
  }
}
