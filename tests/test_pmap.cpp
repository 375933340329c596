// SPDX-License-Identifier: BSD-3-Clause
// shard / replicate / gather and pmap, at any rank count, with uneven shards.

#include "support/mpi_test.hpp"

#include <kpmap/spmd/pmap.hpp>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_floating_point.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <Kokkos_Core.hpp>

#include <array>
#include <cmath>
#include <string>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::WithinRel;
using kpmap::test::world_rank;
using kpmap::test::world_size;

namespace {
using Host = Kokkos::HostSpace;

// The global array every test shards: g(i, j) = 10 i + j, 10 rows (which
// 3 and 4 ranks cannot split evenly).
Kokkos::View<double**, Host> global_array(std::size_t rows = 10, std::size_t cols = 3) {
  Kokkos::View<double**, Host> g("g", rows, cols);
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) g(i, j) = 10.0 * i + j;
  return g;
}

template <class V>
bool holds_rows(const V& local, std::size_t first) {
  auto h = Kokkos::create_mirror_view_and_copy(Host(), local);
  for (std::size_t i = 0; i < h.extent(0); ++i)
    for (std::size_t j = 0; j < h.extent(1); ++j)
      if (h(i, j) != 10.0 * (first + i) + j) return false;
  return true;
}
}  // namespace

TEST_CASE("BlockPartition splits any row count into blocks differing by one at most", "[pmap]") {
  for (std::size_t n : {0, 1, 5, 7, 10, 101}) {
    for (int p = 1; p <= 5; ++p) {
      const kpmap::BlockPartition part(n, p);
      std::size_t total = 0;
      std::size_t smallest = n, largest = 0;
      for (int r = 0; r < p; ++r) {
        CHECK(part.begin(r) == total);
        total += part.count(r);
        smallest = std::min(smallest, part.count(r));
        largest = std::max(largest, part.count(r));
      }
      CHECK(total == n);
      CHECK(largest - smallest <= 1);
    }
  }
}

TEST_CASE("shard, shard_from_root and shard_generate give each rank its rows", "[pmap]") {
  const kpmap::BlockPartition part(10, world_size());
  const std::size_t first = part.begin(world_rank());
  const auto g = global_array();

  auto a = kpmap::shard(g, "devices");
  CHECK(a.extent(0) == part.count(world_rank()));
  CHECK(holds_rows(a, first));

  // Only the root holds the array; the others pass an empty View.
  auto only_root = world_rank() == 0 ? g : Kokkos::View<double**, Host>("empty", 0, 0);
  auto b = kpmap::shard_from_root(only_root, "devices");
  CHECK(b.extent(0) == part.count(world_rank()));
  CHECK(b.extent(1) == 3);
  CHECK(holds_rows(b, first));

  auto c = kpmap::shard_generate<double, 2>(
      "c", {10, 3}, "devices",
      KOKKOS_LAMBDA(std::size_t i, std::size_t j) { return 10.0 * i + j; });
  CHECK(holds_rows(c, first));
}

TEST_CASE("gather reassembles uneven blocks; replicate copies rank 0", "[pmap]") {
  const auto g = global_array(7, 2);
  auto local = kpmap::shard(g, "devices");
  auto all = kpmap::gather(local, "devices");
  REQUIRE(all.extent(0) == 7);
  CHECK(holds_rows(all, 0));

  auto at_root = kpmap::gather(local, "devices", 0);
  CHECK(at_root.extent(0) == (world_rank() == 0 ? 7u : 0u));
  if (world_rank() == 0) CHECK(holds_rows(at_root, 0));

  Kokkos::View<double*, Host> w("w", 4);
  Kokkos::deep_copy(w, 1.0 + world_rank());
  kpmap::replicate(w, "devices");
  for (int i = 0; i < 4; ++i) CHECK(w(i) == 1.0);
}

TEST_CASE("pmean over uneven shards is the mean over all samples", "[pmap]") {
  // 10 samples x_i = i^2; the mean of all is 28.5. With 3 or 4 ranks the
  // shards are uneven, and the plain mean of shard means is not the answer.
  Kokkos::View<double*, Host> x("x", 10);
  for (int i = 0; i < 10; ++i) x(i) = i * i;
  auto local = kpmap::shard<Host>(x, "devices");
  double sum = 0;
  for (std::size_t i = 0; i < local.extent(0); ++i) sum += local(i);
  const double n = static_cast<double>(local.extent(0));
  const double local_mean = sum / n;
  CHECK_THAT(kpmap::pmean(local_mean, "devices", kpmap::Weight{n}), WithinRel(28.5, 1e-15));
  if (world_size() == 3) {
    // Shards {0..3}, {4..6}, {7..9}: means 3.5, 77/3, 194/3.
    CHECK_THAT(kpmap::pmean(local_mean, "devices"),
               WithinRel((3.5 + 77.0 / 3 + 194.0 / 3) / 3, 1e-15));
  }
}

TEST_CASE("pmap runs a function on local blocks with in_axes and out_axes", "[pmap]") {
  // Mean squared error of a linear model and its gradient, data sharded,
  // weights replicated; compared with the same sums done serially.
  constexpr std::size_t N = 11, F = 3;
  Kokkos::View<double**, Host> X("X", N, F);
  Kokkos::View<double*, Host> y("y", N);
  for (std::size_t i = 0; i < N; ++i) {
    for (std::size_t j = 0; j < F; ++j) X(i, j) = std::sin(1.0 + i * F + j);
    y(i) = std::cos(1.0 * i);
  }
  Kokkos::View<double*, Host> w("w", F);
  for (std::size_t j = 0; j < F; ++j) w(j) = 0.5 - 0.25 * j;

  auto step = kpmap::pmap(
      "devices",
      [](auto Xl, auto yl, auto wv, double scale) {
        const std::size_t n = Xl.extent(0);
        Kokkos::View<double*, Host> grad("grad", wv.extent(0));
        double loss = 0;
        for (std::size_t i = 0; i < n; ++i) {
          double r = -yl(i);
          for (std::size_t j = 0; j < wv.extent(0); ++j) r += Xl(i, j) * wv(j);
          loss += r * r / n;
          for (std::size_t j = 0; j < wv.extent(0); ++j) grad(j) += 2 * r * Xl(i, j) / n;
        }
        const kpmap::Weight weight{static_cast<double>(n)};
        kpmap::pmean_inplace(grad, "devices", weight);
        // Each rank also returns its residual-scaled rows: a sharded result.
        Kokkos::View<double**, Host> scaled("scaled", n, Xl.extent(1));
        for (std::size_t i = 0; i < n; ++i)
          for (std::size_t j = 0; j < Xl.extent(1); ++j) scaled(i, j) = scale * Xl(i, j);
        return std::make_tuple(kpmap::pmean(loss, "devices", weight), grad, scaled);
      },
      kpmap::in_axes(kpmap::sharded, kpmap::sharded, kpmap::replicated, kpmap::replicated),
      kpmap::out_axes(kpmap::replicated, kpmap::replicated, kpmap::gathered));

  auto [loss, grad, scaled] = step(X, y, w, 2.0);

  double loss_ref = 0;
  std::array<double, F> grad_ref{};
  for (std::size_t i = 0; i < N; ++i) {
    double r = -y(i);
    for (std::size_t j = 0; j < F; ++j) r += X(i, j) * w(j);
    loss_ref += r * r / N;
    for (std::size_t j = 0; j < F; ++j) grad_ref[j] += 2 * r * X(i, j) / N;
  }
  CHECK_THAT(loss, WithinRel(loss_ref, 1e-13));
  auto gh = Kokkos::create_mirror_view_and_copy(Host(), grad);
  for (std::size_t j = 0; j < F; ++j) CHECK_THAT(gh(j), WithinRel(grad_ref[j], 1e-13));
  auto sh = Kokkos::create_mirror_view_and_copy(Host(), scaled);
  REQUIRE(sh.extent(0) == N);
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t j = 0; j < F; ++j) CHECK(sh(i, j) == 2.0 * X(i, j));
}

TEST_CASE("a result marked sharded stays each rank's block; gathered reassembles it", "[pmap]") {
  // 10 rows split over the ranks as BlockPartition says (4, 3, 3 at 3 ranks).
  constexpr std::size_t N = 10;
  Kokkos::View<double*, Host> x("x", N);
  for (std::size_t i = 0; i < N; ++i) x(i) = 1.0 * i;
  auto twice = [](auto xl) {
    Kokkos::View<double*, Host> out("out", xl.extent(0));
    for (std::size_t i = 0; i < xl.extent(0); ++i) out(i) = 2 * xl(i);
    return out;
  };
  const kpmap::BlockPartition part(N, "devices");
  const int me = world_rank();
  auto block = kpmap::pmap("devices", twice, kpmap::in_axes(kpmap::sharded),
                           kpmap::out_axes(kpmap::sharded))(x);
  REQUIRE(block.extent(0) == part.count(me));
  for (std::size_t i = 0; i < block.extent(0); ++i) CHECK(block(i) == 2.0 * (part.begin(me) + i));

  // The same result reassembled: explicitly by the marker, or later by gather.
  auto whole = kpmap::pmap("devices", twice, kpmap::in_axes(kpmap::sharded),
                           kpmap::out_axes(kpmap::gathered))(x);
  auto later = kpmap::gather(block, "devices");
  REQUIRE(whole.extent(0) == N);
  REQUIRE(later.extent(0) == N);
  for (std::size_t i = 0; i < N; ++i) {
    CHECK(whole(i) == 2.0 * i);
    CHECK(later(i) == 2.0 * i);
  }
}

namespace {
// A training step's parameters: a struct tree, replicated over the axis.
struct Params {
  Kokkos::View<double**, Host> w{"w", 2, 3};
  Kokkos::View<double*, Host> b{"b", 3};
  using memory_space = Host;
  template <class F>
  void for_each_view(F&& f) const {
    f(w);
    f(b);
  }
};
}  // namespace

TEST_CASE("checked mode compares every leaf of a replicated tree, naming the leaf",
          "[pmap][checked]") {
  Params p;
  Kokkos::deep_copy(p.w, 0.5);
  Kokkos::deep_copy(p.b, 0.25);
  auto norm = kpmap::pmap(
      "devices", [](const Params& q) { return q.b(0) + q.w(0, 0); },
      kpmap::in_axes(kpmap::replicated), kpmap::out_axes(kpmap::replicated));
  kpmap::set_checked_mode(true);
  CHECK(norm(p) == 0.75);  // identical everywhere: accepted
  if (world_size() >= 2) {
    // Drift on the last rank, in the second leaf's third element only.
    if (world_rank() == world_size() - 1) p.b(2) = 0.25 + 1.0 / 1024;
    CHECK_THROWS_WITH(norm(p), ContainsSubstring("pmap argument 0, leaf 1 ('b') should be "
                                                 "replicated") &&
                                   ContainsSubstring("element 2 is 0.25 on axis rank 0") &&
                                   ContainsSubstring("but 0.2509765625 on axis rank " +
                                                     std::to_string(world_size() - 1)));
    // A tree of another leaf count on one rank: named before any leaf is compared.
    std::vector<Kokkos::View<double*, Host>> grads(world_rank() == 0 ? 2 : 3,
                                                   Kokkos::View<double*, Host>("g", 4));
    auto first = kpmap::pmap(
        "devices", [](const auto& g) { return g.size(); }, kpmap::in_axes(kpmap::replicated),
        kpmap::out_axes(kpmap::sharded));
    CHECK_THROWS_WITH(first(grads), ContainsSubstring("pmap argument 0") &&
                                        ContainsSubstring("replicated tree of leaves"));
  }
  kpmap::set_checked_mode(false);
}

TEST_CASE("checked mode catches a result declared replicated that is not", "[pmap][checked]") {
  if (world_size() < 2) SKIP("needs two ranks to diverge");
  kpmap::set_checked_mode(true);
  Kokkos::View<double*, Host> x("x", 8);
  for (int i = 0; i < 8; ++i) x(i) = i;
  // Forgot the pmean: each rank's local sum differs.
  auto local_sum = kpmap::pmap(
      "devices",
      [](auto xl) {
        double s = 0;
        for (std::size_t i = 0; i < xl.extent(0); ++i) s += xl(i);
        return s;
      },
      kpmap::in_axes(kpmap::sharded), kpmap::out_axes(kpmap::replicated));
  CHECK_THROWS_WITH(local_sum(x), ContainsSubstring("pmap result 0 should be replicated") &&
                                      ContainsSubstring("axis rank 1"));
  kpmap::set_checked_mode(false);
}
