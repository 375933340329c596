// SPDX-License-Identifier: BSD-3-Clause
// Collectives on trees of Views: a tree reduces in one call, in place, and 100
// small Views fuse into one message (out of place:
// test_collectives_trees_out.cpp). Exact expected values at any rank count, as
// in test_collectives.cpp (part of the same executable).

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
// A user type exposing its Views through one visitor, like a model's gradients.
struct Grads {
  using memory_space = Exec::memory_space;  // collectives run on its execution space
  Kokkos::View<double**, Exec> w;
  Kokkos::View<double*, Exec> b;
  template <class F>
  void for_each_view(F&& f) {
    f(w);
    f(b);
  }
};
}  // namespace

TEST_CASE("trees of Views reduce in one call", "[collectives][tree]") {
  const double me = r() + 1;
  Kokkos::View<double*, Exec> a("a", 10);
  Kokkos::View<double**, Kokkos::LayoutLeft, Exec> b("b", 3, 4);
  Kokkos::View<double**, Exec> big("big", 5, 6);
  auto c = Kokkos::subview(big, std::make_pair(1, 4), std::make_pair(2, 5));
  auto init = [&] {
    fill(a, [&](std::size_t k) { return me * (k + 1.0); });
    fill(b, [&](std::size_t k) { return me * (k + 2.0); });
    fill(c, [&](std::size_t k) { return me * (k + 3.0); });
  };
  SECTION("a tuple, fused") {
    init();
    auto tree = std::tie(a, b, c);
    kpmap::psum_inplace(tree, "devices");
    CHECK(matches(a, [&](std::size_t k) { return tri() * (k + 1.0); }));
    CHECK(matches(b, [&](std::size_t k) { return tri() * (k + 2.0); }));
    CHECK(matches(c, [&](std::size_t k) { return tri() * (k + 3.0); }));
  }
  SECTION("a tuple, every leaf above the fusion threshold or split in messages") {
    const auto saved = kpmap::fusion_threshold();
    for (std::size_t threshold : {std::size_t(8), std::size_t(40)}) {
      kpmap::set_fusion_threshold(threshold);
      init();
      kpmap::pmean_inplace(std::tie(a, b, c), "devices");
      CHECK(matches(a, [&](std::size_t k) { return tri() / p() * (k + 1.0); }));
      CHECK(matches(b, [&](std::size_t k) { return tri() / p() * (k + 2.0); }));
      CHECK(matches(c, [&](std::size_t k) { return tri() / p() * (k + 3.0); }));
    }
    kpmap::set_fusion_threshold(saved);
  }
  SECTION("a user struct with a visitor, weighted mean over uneven shards") {
    Grads g{Kokkos::View<double**, Exec>("w", 2, 3), Kokkos::View<double*, Exec>("b", 4)};
    fill(g.w, [&](std::size_t k) { return me * (k + 1.0); });
    fill(g.b, [&](std::size_t k) { return me - k; });
    // Rank r's values are means over r+1 samples.
    kpmap::pmean_inplace(g, "devices", kpmap::Weight{me});
    double sq = 0;
    for (int q = 1; q <= world_size(); ++q) sq += q * q;
    CHECK(matches(
        g.w, [&](std::size_t k) { return sq / tri() * (k + 1.0); }, 1e-15));
    CHECK(matches(
        g.b, [&](std::size_t k) { return sq / tri() - k; }, 1e-15));
  }
  SECTION("mixed element types reduce in one call, one message stream per type") {
    // A JAX pytree of float64, float32 and int32 leaves: each sums as its own
    // type (the values are exact in every one of them).
    Kokkos::View<float*, Exec> f("f", 3);
    Kokkos::View<int*, Exec> n("n", 5);
    for (const std::size_t threshold : {kpmap::fusion_threshold(), std::size_t(8)}) {
      const auto saved = kpmap::fusion_threshold();
      kpmap::set_fusion_threshold(threshold);  // 8: every leaf on its own too
      init();
      fill(f, [&](std::size_t k) { return me * (k + 0.5); });
      fill(n, [&](std::size_t k) { return me * (k + 1.0); });
      kpmap::psum_inplace(std::tie(a, f, b, n, c), "devices");
      CHECK(matches(a, [&](std::size_t k) { return tri() * (k + 1.0); }));
      CHECK(matches(f, [&](std::size_t k) { return tri() * (k + 0.5); }));
      CHECK(matches(b, [&](std::size_t k) { return tri() * (k + 2.0); }));
      CHECK(matches(n, [&](std::size_t k) { return tri() * (k + 1.0); }));
      CHECK(matches(c, [&](std::size_t k) { return tri() * (k + 3.0); }));
      kpmap::set_fusion_threshold(saved);
    }
    // Non-blocking, from a temporary tie; a pmax over the same mixed tree.
    init();
    fill(f, [&](std::size_t k) { return me * (k + 0.5); });
    kpmap::ipsum(std::tie(f, a), "devices").wait();
    CHECK(matches(f, [&](std::size_t k) { return tri() * (k + 0.5); }));
    CHECK(matches(a, [&](std::size_t k) { return tri() * (k + 1.0); }));
    fill(n, [&](std::size_t k) { return me * k; });
    fill(f, [&](std::size_t k) { return -me * k; });
    kpmap::pmax_inplace(std::tie(n, f), "devices");
    CHECK(matches(n, [&](std::size_t k) { return 1.0 * p() * k; }));
    CHECK(matches(f, [&](std::size_t k) { return -1.0 * k; }));
  }
  SECTION("leaves in two memory spaces are refused with the leaf named") {
    Kokkos::View<double*, Kokkos::HostSpace> host("host", 3);
    Kokkos::View<double*, Kokkos::HostSpace> host2("host2", 3);
    if constexpr (!std::is_same_v<Exec::memory_space, Kokkos::HostSpace>) {
      CHECK_THROWS_WITH(kpmap::psum_inplace(std::tie(a, host), "devices"),
                        ContainsSubstring("leaf 1 is in"));
    }
    kpmap::psum_inplace(std::tie(host, host2), "devices");  // one space: fine
  }
}

TEST_CASE("fusion of 100 small Views", "[collectives][tree]") {
  const double me = r() + 1;
  std::vector<Kokkos::View<double*, Exec>> views;
  for (int i = 0; i < 100; ++i) {
    views.emplace_back("v" + std::to_string(i), 16 + i % 7);
    fill(views.back(), [&](std::size_t k) { return me * (k + i); });
  }
  kpmap::psum_inplace(views, "devices");
  for (int i = 0; i < 100; ++i) {
    CHECK(matches(views[i], [&](std::size_t k) { return tri() * (k + i); }));
  }
}
