// Collectives: exact expected values at any rank count. Elements are
// integer-valued doubles, so every sum is exact and results compare with ==.
// The same executable runs again with KPMAP_STAGING=always (see CMakeLists.txt).
// Reductions here; trees of Views and fusion in test_collectives_trees.cpp;
// gathers and permutes in test_collectives_gathers.cpp; non-blocking forms,
// large counts, staging and checked mode in test_collectives_paths.cpp: one
// executable, compiled side by side.

#include "support/collective_checks.hpp"
#include "support/mpi_test.hpp"

#include <kpmap/collectives/collectives.hpp>

#include <catch2/catch_template_test_macros.hpp>
#include <catch2/catch_test_macros.hpp>

#include <Kokkos_Core.hpp>

#include <vector>

// Exec, fill, matches, p, r, tri (support/collective_checks.hpp), world_rank, world_size.
using namespace kpmap::test;

namespace {

template <class V>
void check_reductions(const V& v) {
  const double me = r() + 1;
  fill(v, [&](std::size_t k) { return me * (k + 1.0); });
  kpmap::psum_inplace(v, "devices");
  CHECK(matches(v, [&](std::size_t k) { return tri() * (k + 1.0); }));

  fill(v, [&](std::size_t k) { return me * (k + 1.0); });
  kpmap::pmax_inplace(v, "devices");
  CHECK(matches(v, [&](std::size_t k) { return p() * (k + 1.0); }));

  fill(v, [&](std::size_t k) { return me * (k + 1.0); });
  kpmap::pmin_inplace(v, "devices");
  CHECK(matches(v, [&](std::size_t k) { return 1.0 * (k + 1.0); }));

  fill(v, [&](std::size_t k) { return me * (k + 1.0); });
  kpmap::pmean_inplace(v, "devices");
  CHECK(matches(v, [&](std::size_t k) { return tri() / p() * (k + 1.0); }));

  // Out of place leaves the input alone.
  fill(v, [&](std::size_t k) { return me * (k + 1.0); });
  auto s = kpmap::psum(v, "devices");
  CHECK(matches(s, [&](std::size_t k) { return tri() * (k + 1.0); }));
  CHECK(matches(v, [&](std::size_t k) { return me * (k + 1.0); }));
}

}  // namespace

TEST_CASE("scalar reductions", "[collectives]") {
  const double me = r() + 1;
  CHECK(kpmap::psum(me, "devices") == tri());
  CHECK(kpmap::pmax(me, "devices") == p());
  CHECK(kpmap::pmin(me, "devices") == 1.0);
  CHECK(kpmap::pmean(me, "devices") == tri() / p());
  CHECK(kpmap::psum(world_rank() + 1, "devices") == world_size() * (world_size() + 1) / 2);
  CHECK(kpmap::pbroadcast(me, "devices", world_size() - 1) == p());
  // Uneven shards: rank r holds r+1 samples whose mean is r+1; the global mean
  // is sum (r+1)^2 / sum (r+1).
  double sq = 0;
  for (int q = 1; q <= world_size(); ++q) sq += q * q;
  CHECK(kpmap::pmean(me, "devices", kpmap::Weight{me}) == sq / tri());
}

TEMPLATE_TEST_CASE("reductions on Views of rank 0 to 3 and 8", "[collectives]", Kokkos::LayoutRight,
                   Kokkos::LayoutLeft) {
  using L = TestType;
  check_reductions(Kokkos::View<double, L, Exec>("r0"));
  check_reductions(Kokkos::View<double*, L, Exec>("r1", 7));
  check_reductions(Kokkos::View<double**, L, Exec>("r2", 3, 5));
  check_reductions(Kokkos::View<double***, L, Exec>("r3", 2, 3, 4));
  check_reductions(Kokkos::View<double********, L, Exec>("r8", 2, 1, 2, 1, 2, 3, 1, 2));
  check_reductions(Kokkos::View<float**, L, Exec>("f2", 4, 3));
}

TEST_CASE("Kokkos::complex Views reduce, strided and scaled too", "[collectives]") {
  // std::complex is refused at compile time (tests/compile_fail); its
  // device-safe twin goes through the same pack, scale and MPI paths.
  using C = Kokkos::complex<double>;
  Kokkos::View<C**, Kokkos::LayoutRight, Exec> z("z", 3, 4);
  const double rr = r();
  // Column 1 only: a strided subview, packed before MPI and unpacked after.
  auto col = Kokkos::subview(z, Kokkos::ALL(), 1);
  Kokkos::parallel_for(
      Kokkos::RangePolicy<Exec>(0, col.extent(0)),
      KOKKOS_LAMBDA(int i) { col(i) = C(rr + 1, rr * (i + 1)); });
  kpmap::pmean_inplace(col, "devices");
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), z);
  // The sums are exact integers: sum (r + 1) = p (p + 1) / 2 and
  // sum r (i + 1) = (i + 1) p (p - 1) / 2; pmean scales them by 1 / p.
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(h(i, 1).real() == tri() * (1.0 / p()));
    CHECK(h(i, 1).imag() == double(i + 1) * p() * (p() - 1) / 2 * (1.0 / p()));
    CHECK(h(i, 0) == C(0, 0));
  }
}

TEST_CASE("reductions on non-contiguous subviews touch only the subview", "[collectives]") {
  Kokkos::View<double**, Kokkos::LayoutRight, Exec> a("a", 6, 5);
  Kokkos::deep_copy(a, -1.0);
  auto sub = Kokkos::subview(a, Kokkos::ALL, std::make_pair(1, 4));
  REQUIRE_FALSE(sub.span_is_contiguous());
  check_reductions(sub);
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a);
  for (int i = 0; i < 6; ++i) {
    CHECK(h(i, 0) == -1.0);
    CHECK(h(i, 4) == -1.0);
  }
  Kokkos::View<double***, Kokkos::LayoutLeft, Exec> b("b", 4, 3, 2);
  check_reductions(Kokkos::subview(b, std::make_pair(1, 3), Kokkos::ALL, 1));
}
