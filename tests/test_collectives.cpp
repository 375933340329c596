// SPDX-License-Identifier: BSD-3-Clause
// Collectives: exact expected values at any rank count. Elements are
// integer-valued doubles, so every sum is exact and results compare with ==.
// The same executable runs again with KPMAP_STAGING=always (see CMakeLists.txt).
// Reductions here (of LayoutLeft Views in test_collectives_left.cpp); trees of
// Views in place and fusion in test_collectives_trees.cpp, out of place in
// test_collectives_trees_out.cpp; gathers and permutes in test_collectives_gathers.cpp;
// non-blocking forms, large counts, staging and checked mode in test_collectives_paths.cpp: one
// executable, compiled side by side.

#include "support/collective_checks.hpp"
#include "support/mpi_test.hpp"

#include <kpmap/collectives/collectives.hpp>

#include <catch2/catch_test_macros.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <complex>
#include <limits>
#include <tuple>
#include <vector>

// Exec, fill, matches, p, r, tri (support/collective_checks.hpp), world_rank, world_size.
using namespace kpmap::test;

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

namespace {

// Element k of rank q's View in the NaN tests: q + 1, except element `at`
// on rank `holder`, which is NaN.
template <class T>
T nan_or_rank(int q, int holder, std::size_t k, std::size_t at) {
  return q == holder && k == at ? std::numeric_limits<T>::quiet_NaN() : static_cast<T>(q + 1);
}

// The NaN held by one rank reaches every rank through pmax and pmin, in
// each form; every other element keeps its exact max (p) or min (1).
template <class T>
void check_nan_reaches_every_rank(int holder) {
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const T me = world_rank() == holder ? nan : static_cast<T>(world_rank() + 1);
  CHECK(std::isnan(kpmap::pmax(me, "devices")));
  CHECK(std::isnan(kpmap::pmin(me, "devices")));
  // Infinities are numbers: only the NaN wins over them.
  const T inf = std::numeric_limits<T>::infinity();
  CHECK(kpmap::pmax(world_rank() == holder ? -inf : static_cast<T>(world_rank() + 1), "devices") ==
        (world_size() == 1
             ? -inf
             : static_cast<T>(holder == world_size() - 1 ? world_size() - 1 : world_size())));
  CHECK(kpmap::pmin(world_rank() == holder ? inf : static_cast<T>(world_rank() + 1), "devices") ==
        (world_size() == 1 ? inf : static_cast<T>(holder == 0 ? 2 : 1)));

  const std::size_t at = 3;
  const auto value = [&](std::size_t k) { return nan_or_rank<T>(world_rank(), holder, k, at); };
  const auto max_or_nan = [&](std::size_t k) { return k == at ? double(nan) : double(p()); };
  const auto min_or_nan = [&](std::size_t k) { return k == at ? double(nan) : 1.0; };
  const auto same = [](const auto& v, const auto& want) {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
    bool ok = true;
    for (std::size_t k = 0; k < h.size(); ++k) {
      const double got = h(k);
      ok = ok && (std::isnan(want(k)) ? std::isnan(got) : got == want(k));
    }
    return ok;
  };
  Kokkos::View<T*, Exec> v("v", 7);
  fill(v, value);
  kpmap::pmax_inplace(v, "devices");
  CHECK(same(v, max_or_nan));
  fill(v, value);
  kpmap::pmin_inplace(v, "devices");
  CHECK(same(v, min_or_nan));
  fill(v, value);
  CHECK(same(kpmap::pmax(v, "devices"), max_or_nan));
  kpmap::ipmin(Exec(), v, "devices").wait();
  CHECK(same(v, min_or_nan));
  // A strided column (packed before MPI) and a tree of two (fused).
  Kokkos::View<T**, Kokkos::LayoutRight, Exec> m("m", 7, 2);
  auto column = Kokkos::subview(m, Kokkos::ALL, 1);
  fill(column, value);
  kpmap::pmax_inplace(column, "devices");
  CHECK(same(column, max_or_nan));
  Kokkos::View<T*, Exec> w("w", 7);
  fill(v, value);
  fill(w, value);
  kpmap::pmin_inplace(std::tie(v, w), "devices");
  CHECK(same(v, min_or_nan));
  CHECK(same(w, min_or_nan));
}

}  // namespace

TEST_CASE("pmax and pmin give NaN on every rank where any rank holds one", "[collectives]") {
  // MPI_MAX keeps whichever number comes first where one is NaN; JAX and
  // NumPy propagate it. Each rank in turn holds the NaN.
  for (int holder = 0; holder < world_size(); ++holder) {
    CAPTURE(holder);
    check_nan_reaches_every_rank<double>(holder);
    check_nan_reaches_every_rank<float>(holder);
  }
}

TEST_CASE("complex numbers sum and average; bools take any (pmax) and all (pmin)",
          "[collectives]") {
  const int q = world_rank();
  const int n = world_size();
  // Rank q holds q + 1 - q i: the sums are exact integers.
  const std::complex<double> z(q + 1, -q);
  CHECK(kpmap::psum(z, "devices") == std::complex<double>(tri(), -n * (n - 1) / 2.0));
  CHECK(kpmap::pmean(z, "devices") == std::complex<double>(tri(), -n * (n - 1) / 2.0) / double(n));
  const Kokkos::complex<float> w(float(q + 1), float(-q));
  CHECK(kpmap::psum(w, "devices") == Kokkos::complex<float>(float(tri()), -n * (n - 1) / 2.0f));
  CHECK(kpmap::pmean(w, "devices") ==
        Kokkos::complex<float>(float(tri()), -n * (n - 1) / 2.0f) / float(n));

  // One rank true (the last): any is true, all only at one rank.
  const bool last = q == n - 1;
  CHECK(kpmap::pmax(last, "devices"));
  CHECK(kpmap::pmin(last, "devices") == (n == 1));
  CHECK_FALSE(kpmap::pmax(false, "devices"));
  CHECK(kpmap::pmin(true, "devices"));
  // Element k of rank q's View is true where k % n == q: every element is
  // true on exactly one rank. Element 7 is true everywhere, element 6 nowhere.
  Kokkos::View<bool*, Exec> flags("flags", 8);
  const auto set = [&](const Kokkos::View<bool*, Exec>& v) {
    auto h = Kokkos::create_mirror_view(v);
    for (std::size_t k = 0; k < 8; ++k) h(k) = k == 7 || (k != 6 && int(k) % n == q);
    Kokkos::deep_copy(v, h);
  };
  set(flags);
  const auto any =
      Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), kpmap::pmax(flags, "devices"));
  kpmap::pmin_inplace(flags, "devices");
  const auto all = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), flags);
  for (std::size_t k = 0; k < 8; ++k) {
    CAPTURE(k);
    CHECK(any(k) == (k != 6));
    CHECK(all(k) == (k == 7 || (k != 6 && n == 1)));
  }
  // In a tree beside doubles, fused by element type.
  Kokkos::View<double*, Exec> x("x", 3);
  Kokkos::deep_copy(x, double(q + 1));
  set(flags);
  kpmap::pmax_inplace(std::tie(x, flags), "devices");
  CHECK(matches(x, [](std::size_t) { return p(); }));
  const auto fused = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), flags);
  for (std::size_t k = 0; k < 8; ++k) CHECK(fused(k) == (k != 6));
}

TEST_CASE("reductions on LayoutRight Views of rank 0 to 3 and 8", "[collectives]") {
  check_reductions_of_ranks<Kokkos::LayoutRight>();
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
