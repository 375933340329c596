// Collectives: exact expected values at any rank count. Elements are
// integer-valued doubles, so every sum is exact and results compare with ==.
// The same executable runs again with KPMAP_STAGING=always (see CMakeLists.txt).

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
using kpmap::test::world_rank;
using kpmap::test::world_size;

namespace {

using Exec = Kokkos::DefaultExecutionSpace;

// Fills v with value(rank, row-major flat index k) on the device.
template <class V, class F>
void fill(const V& v, F value) {
  auto h = Kokkos::create_mirror_view(v);
  const auto e = kpmap::detail::extents_of(v);
  for (std::size_t k = 0; k < v.size(); ++k) {
    std::size_t idx[8];
    kpmap::detail::unflatten(k, e, kpmap::detail::rank_v<V>, idx);
    kpmap::detail::at(h, idx) = value(k);
  }
  Kokkos::deep_copy(v, h);
}

// True when v(row-major index k) == expected(k) for every k (on this rank),
// exactly, or within relative tolerance `rtol` where rounding is expected.
template <class V, class F>
bool matches(const V& v, F expected, double rtol = 0) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  const auto e = kpmap::detail::extents_of(v);
  for (std::size_t k = 0; k < v.size(); ++k) {
    std::size_t idx[8];
    kpmap::detail::unflatten(k, e, kpmap::detail::rank_v<V>, idx);
    const double got = kpmap::detail::at(h, idx);
    const double want = expected(k);
    if (rtol == 0 ? got != want : std::abs(got - want) > rtol * std::abs(want)) {
      UNSCOPED_INFO("element " << k << " is " << kpmap::detail::at(h, idx) << ", expected "
                               << expected(k));
      return false;
    }
  }
  return true;
}

double p() { return world_size(); }
double r() { return world_rank(); }
// Sum over ranks of (rank + 1): p(p+1)/2.
double tri() { return p() * (p() + 1) / 2; }

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
  SECTION("mixed element types are refused with the leaf named") {
    Kokkos::View<float*, Exec> f("f", 3);
    CHECK_THROWS_WITH(kpmap::psum_inplace(std::tie(a, f), "devices"),
                      ContainsSubstring("leaf 1 holds float"));
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

TEST_CASE("non-blocking forms", "[collectives][nonblocking]") {
  const double me = r() + 1;
  const int P = world_size();
  Kokkos::View<double*, Exec> a("a", 1000);
  Kokkos::View<double*, Exec> a0("a0", 1000);
  Kokkos::View<double**, Exec> b("b", 3, 4);
  fill(a, [&](std::size_t k) { return me * k; });
  fill(a0, [&](std::size_t k) { return me * k; });
  fill(b, [&](std::size_t k) { return me + k; });
  auto ra = kpmap::ipsum(a, "devices");
  auto rb = kpmap::ipmean(std::tie(b), "devices");
  // Not `a`: MPI forbids reading a buffer a pending operation is reducing in
  // place (in checked mode the gather's signature check progresses the ipsum
  // first, and a gather of `a` saw the sums).
  auto rg = kpmap::iall_gather(a0, "devices");
  std::vector<kpmap::PermutePair> ring;
  for (int i = 0; i < P; ++i) ring.emplace_back(i, (i + 1) % P);
  auto rp = kpmap::ippermute(b, "devices", ring);
  while (!ra.test()) {
  }
  rb.wait();
  auto& g = rg.wait();
  auto& shifted = rp.wait();
  CHECK(ra.done());
  CHECK(matches(a, [&](std::size_t k) { return tri() * k; }));
  CHECK(matches(b, [&](std::size_t k) { return tri() / p() + k; }));
  CHECK(matches(g, [&](std::size_t k) { return (k / 1000 + 1.0) * (k % 1000); }));
  CHECK(matches(shifted, [&](std::size_t k) { return (world_rank() + P - 1) % P + 1.0 + k; }));
  Kokkos::View<double**, Exec> s("s", P, 2);
  fill(s, [&](std::size_t k) { return me * k; });
  auto rs = kpmap::ipsum_scatter(s, "devices");
  CHECK(matches(rs.wait(), [&](std::size_t j) { return tri() * (2 * world_rank() + j); }));
  Kokkos::View<int*, Exec> c("c", 3);
  fill(c, [&](std::size_t k) { return world_rank() * 10 + static_cast<int>(k); });
  kpmap::ipbroadcast(c, "devices", 0).wait();
  CHECK(matches(c, [&](std::size_t k) { return static_cast<int>(k); }));
}

TEST_CASE("counts above the MPI int limit take the large-count paths", "[collectives][large]") {
  // Lowering the per-call limit to 7 elements sends every buffer below through
  // the chunked and derived-datatype paths used above 2^31-1 elements.
  const std::size_t saved = kpmap::transport::max_count();
  kpmap::transport::set_max_count(7);
  const double me = r() + 1;
  const std::size_t P = world_size();
  Kokkos::View<double*, Exec> a("a", 100);
  fill(a, [&](std::size_t k) { return me * k; });
  kpmap::psum_inplace(a, "devices");
  CHECK(matches(a, [&](std::size_t k) { return tri() * k; }));
  Kokkos::View<double**, Exec> x("x", 2 * P, 9);
  fill(x, [&](std::size_t k) { return 1000.0 * world_rank() + k; });
  auto g = kpmap::all_gather(x, "devices");
  CHECK(matches(g, [&](std::size_t k) { return 1000.0 * (k / x.size()) + k % x.size(); }));
  auto t = kpmap::all_to_all(x, "devices", 0, 0);
  CHECK(matches(t, [&](std::size_t k) {
    const std::size_t i = k / 9, j = k % 9;
    return 1000.0 * (i / 2) + (2 * world_rank() + i % 2) * 9 + j;
  }));
  Kokkos::View<double**, Exec> s("s", P, 11);
  fill(s, [&](std::size_t k) { return me * k; });
  auto sc = kpmap::psum_scatter(s, "devices");
  CHECK(matches(sc, [&](std::size_t j) { return tri() * (world_rank() * 11 + j); }));
  std::vector<kpmap::PermutePair> ring;
  for (std::size_t i = 0; i < P; ++i) ring.emplace_back(i, (i + 1) % P);
  auto pp = kpmap::ppermute(a, "devices", ring);
  CHECK(matches(pp, [&](std::size_t k) { return tri() * k; }));
  // Uneven gathers and scatters (13 rows of 3) through the block-by-block path.
  Kokkos::View<double**, Kokkos::HostSpace> global("global", 13, 3);
  for (std::size_t k = 0; k < global.size(); ++k) global.data()[k] = 0.5 * k;
  auto row_major = [&](std::size_t k) { return 0.5 * k; };
  auto mine = kpmap::shard_from_root(
      world_rank() == 0 ? global : Kokkos::View<double**, Kokkos::HostSpace>("none", 0, 0),
      "devices");
  const kpmap::BlockPartition part(13, world_size());
  CHECK(matches(mine, [&](std::size_t k) { return 0.5 * (part.begin(world_rank()) * 3 + k); }));
  CHECK(matches(kpmap::gather(mine, "devices"), row_major));
  auto at_last = kpmap::gather(mine, "devices", world_size() - 1);
  CHECK(at_last.extent(0) == (world_rank() == world_size() - 1 ? 13u : 0u));
  if (world_rank() == world_size() - 1) CHECK(matches(at_last, row_major));
  kpmap::transport::set_max_count(saved);
}

TEST_CASE("the staging pool is reused, not regrown", "[collectives][staging]") {
  auto& pool = kpmap::transport::StagingPool::instance();
  // One rank reduces nothing, so only a multi-rank axis stages.
  const bool staged = kpmap::transport::must_stage<Exec::memory_space>() && world_size() > 1;
  Kokkos::View<double*, Exec> a("a", 4096);
  kpmap::psum_inplace(a, "devices");
  const auto after_first = pool.allocations();
  for (int i = 0; i < 20; ++i) kpmap::psum_inplace(a, "devices");
  CHECK(pool.allocations() == after_first);
  if (staged) {
    CHECK(after_first >= 1);
    // A buffer larger than every slab adds exactly one slab, rounded up to a
    // power of two, which later calls reuse.
    const auto capacity = pool.capacity_bytes();
    Kokkos::View<double*, Exec> big("big", capacity / sizeof(double) + 1);
    kpmap::psum_inplace(big, "devices");
    CHECK(pool.allocations() == after_first + 1);
    CHECK(pool.capacity_bytes() >= capacity + big.size() * sizeof(double));
    for (int i = 0; i < 5; ++i) kpmap::psum_inplace(big, "devices");
    kpmap::psum_inplace(a, "devices");
    CHECK(pool.allocations() == after_first + 1);
  } else if (!kpmap::transport::must_stage<Exec::memory_space>()) {
    CHECK(after_first == 0);  // nothing staged: buffers go straight to MPI
  }
}

TEST_CASE("fused reductions reuse pooled buffers step after step", "[collectives][fusion]") {
  if (world_size() < 2) SKIP("one rank reduces nothing");
  auto& pool = kpmap::transport::ScratchPool<Exec::memory_space>::instance();
  // Two small leaves fuse into one pooled buffer, as a layer's (w, b) does.
  Kokkos::View<double**, Exec> w("w", 16, 8), w2("w2", 16, 8);
  Kokkos::View<double*, Exec> b("b", 16), b2("b2", 4);
  auto step = [&] {
    Kokkos::deep_copy(w, 1.0);
    Kokkos::deep_copy(b, 2.0);
    Kokkos::deep_copy(w2, 3.0);
    Kokkos::deep_copy(b2, 4.0);
    std::vector<kpmap::Request> pending;
    pending.push_back(kpmap::ipsum(std::make_tuple(w, b), "devices"));
    pending.push_back(kpmap::ipsum(std::make_tuple(b2, w2), "devices"));
    for (auto& p : pending) p.wait();
  };
  step();
  const auto settled = pool.allocations();
  CHECK(settled >= 2);  // two reductions in flight hold two buffers
  for (int i = 0; i < 10; ++i) step();
  CHECK(pool.allocations() == settled);
  const double p = world_size();
  auto hw = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), w);
  auto hb2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b2);
  CHECK(hw(3, 5) == p);
  CHECK(hb2(3) == 4 * p);
}

TEST_CASE("checked mode turns mistakes into errors on every rank", "[collectives][checked]") {
  if (world_size() < 2) SKIP("needs two ranks to disagree");
  kpmap::set_checked_mode(true);
  const int me = world_rank();
  SECTION("mismatched shapes") {
    Kokkos::View<double*, Exec> x("x", me == 1 ? 4 : 3);
    CHECK_THROWS_WITH(kpmap::psum_inplace(x, "devices"),
                      ContainsSubstring("axis 'devices'") && ContainsSubstring("axis rank 1") &&
                          ContainsSubstring("shape (4)") && ContainsSubstring("shape (3)"));
  }
  SECTION("different collectives on different ranks") {
    Kokkos::View<double*, Exec> x("x", 3);
    auto call = [&] {
      if (me == 0) {
        kpmap::psum_inplace(x, "devices");
      } else {
        kpmap::pmax_inplace(x, "devices");
      }
    };
    CHECK_THROWS_WITH(call(), ContainsSubstring("psum") && ContainsSubstring("pmax"));
  }
  SECTION("divergent replicas") {
    Kokkos::View<double*, Exec> w("w", 4);
    fill(w, [&](std::size_t k) { return k == 2 ? 1.0 + me : 1.0; });
    CHECK_THROWS_WITH(
        kpmap::detail::verify_replicated(kpmap::Mesh::world().axis("devices"), "parameter 'w'", w),
        ContainsSubstring("parameter 'w'") && ContainsSubstring("element 2") &&
            ContainsSubstring("is 1 on axis rank 0 but 2 on axis rank 1"));
  }
  kpmap::set_checked_mode(false);
}
