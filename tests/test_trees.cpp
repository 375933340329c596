// SPDX-License-Identifier: BSD-3-Clause
// Trees of Views as jax.tree_util and Orbax use pytrees: tree_map over
// tuples, vectors, arrays and structs (checked against the same arithmetic
// leaf by leaf), the leaf count and leaves, std::array as a tree in a psum,
// and checkpoint::save / restore of a tree, replicated or with rows split
// over an axis, restored at the same rank count and read back whole (the
// global arrays, derived on the host, at any count).

#include "support/mpi_test.hpp"

#include <kpmap/collectives/collectives.hpp>
#include <kpmap/spmd/ops.hpp>
#include <kpmap/spmd/tree_checkpoint.hpp>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <Kokkos_Core.hpp>

#include <array>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using kpmap::test::world_rank;
using kpmap::test::world_size;

namespace {

using Host = Kokkos::HostSpace;
using Vec = Kokkos::View<double*, Host>;
using Mat = Kokkos::View<double**, Host>;

struct Params {
  Mat w{"w", 2, 3};
  Vec b{"b", 3};
  using memory_space = Host;
  template <class F>
  void for_each_view(F&& f) const {
    f(w);
    f(b);
  }
};

Vec iota(std::size_t n, double start) {
  Vec v("v", n);
  for (std::size_t i = 0; i < n; ++i) v(i) = start + i;
  return v;
}

std::string dir() {
  const std::string d = "trees_test_np" + std::to_string(world_size());
  if (world_rank() == 0) std::filesystem::create_directories(d);
  MPI_Barrier(MPI_COMM_WORLD);
  return d;
}

}  // namespace

TEST_CASE("tree_map maps tuples, vectors, arrays and structs leaf by leaf", "[trees]") {
  // One tree: each leaf doubled.
  auto twice = [](const auto& v) { return kpmap::scale(2.0, v); };
  const auto t = kpmap::tree_map(twice, std::make_tuple(iota(3, 1), iota(2, 10)));
  CHECK(std::get<0>(t)(2) == 6.0);
  CHECK(std::get<1>(t)(1) == 22.0);
  // Two trees: p - 0.5 g, as an SGD step on a struct.
  Params p, g;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      p.w(i, j) = 10 * i + j;
      g.w(i, j) = 2.0;
    }
  for (int j = 0; j < 3; ++j) {
    p.b(j) = j;
    g.b(j) = 4.0;
  }
  const Params next = kpmap::tree_map(
      [](const auto& x, const auto& dx) { return kpmap::subtract(x, kpmap::scale(0.5, dx)); }, p,
      g);
  CHECK(next.w(1, 2) == 12.0 - 1.0);
  CHECK(next.b(2) == 2.0 - 2.0);
  CHECK(p.w(1, 2) == 12.0);  // the arguments are left as they were
  // Vectors and arrays of subtrees; a leaf's type may change in a tuple.
  const std::vector<Vec> layers{iota(2, 0), iota(4, 1)};
  const auto sums = kpmap::tree_map([](const auto& v) { return kpmap::sum(v); },
                                    std::make_tuple(layers[0], layers[1]));
  CHECK(std::get<1>(sums) == 1 + 2 + 3 + 4);
  const auto halved = kpmap::tree_map([](const auto& v) { return kpmap::scale(0.5, v); }, layers);
  REQUIRE(halved.size() == 2);
  CHECK(halved[1](3) == 2.0);
  const std::array<Vec, 2> pair{iota(1, 5), iota(1, 7)};
  const auto added =
      kpmap::tree_map([](const auto& a, const auto& b) { return kpmap::add(a, b); }, pair, pair);
  CHECK(added[1](0) == 14.0);
  CHECK_THROWS_WITH(kpmap::tree_map([](const auto& a, const auto& b) { return kpmap::add(a, b); },
                                    layers, std::vector<Vec>{iota(2, 0)}),
                    ContainsSubstring("kpmap::tree_map: the trees differ in structure"));
  // The leaves, counted and listed in order.
  CHECK(kpmap::tree_leaf_count(p) == 2);
  CHECK(kpmap::tree_leaf_count(std::make_tuple(p, layers, pair)) == 6);
  const auto leaves = kpmap::tree_leaves<Vec>(std::make_tuple(layers, pair));
  REQUIRE(leaves.size() == 4);
  CHECK(leaves[3](0) == 7.0);
}

TEST_CASE("a std::array of Views is a tree a psum reduces", "[trees]") {
  std::array<Vec, 2> a{iota(3, world_rank()), iota(2, 1)};
  kpmap::psum_inplace(a, "devices");
  const int n = world_size();
  // sum over r of (r + i) = n (n - 1) / 2 + n i
  CHECK(a[0](2) == n * (n - 1) / 2.0 + 2.0 * n);
  CHECK(a[1](1) == 2.0 * n);
}

TEST_CASE("save and restore a replicated tree, its structure checked", "[trees]") {
  const std::string file = dir() + "/params.h5";
  Params p;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) p.w(i, j) = 0.5 * i - j;
  for (int j = 0; j < 3; ++j) p.b(j) = 1.0 / (j + 1);
  Kokkos::View<double, Host> step("step");
  step() = 42;
  kpmap::checkpoint::save(file, std::make_tuple(p, step));
  std::tuple<Params, Kokkos::View<double, Host>> back{Params{Mat("w", 0, 0), Vec("b", 0)},
                                                      Kokkos::View<double, Host>("step")};
  kpmap::checkpoint::restore(file, back);
  const Params& q = std::get<0>(back);
  REQUIRE(q.w.extent(0) == 2);
  REQUIRE(q.w.extent(1) == 3);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) CHECK(q.w(i, j) == p.w(i, j));
  for (int j = 0; j < 3; ++j) CHECK(q.b(j) == p.b(j));
  CHECK(std::get<1>(back)() == 42.0);
  // Another structure: named, on every rank.
  Params only;
  try {
    kpmap::checkpoint::restore(file, only);
    FAIL_CHECK("a tree of 2 leaves took a file of 3");
  } catch (const kpmap::Error& e) {
    CHECK_THAT(std::string(e.what()),
               ContainsSubstring("the file holds a tree of 3 leaves, the tree given has 2"));
    CHECK(e.all_ranks());
  }
  std::tuple<Vec, Vec, Kokkos::View<double, Host>> ranks_differ;
  CHECK_THROWS_WITH(kpmap::checkpoint::restore(file, ranks_differ),
                    ContainsSubstring("leaf 0 ('leaf_0000') was saved with rank 2, the tree's "
                                      "View has rank 1"));
}

TEST_CASE("a tree with rows split over an axis restores as the whole arrays", "[trees]") {
  // Rank r holds rows [begin, end) of a 7 x 2 array and of a 5-vector,
  // BlockPartition's blocks (uneven at 2, 3 and 4 ranks); x(i, j) = 10 i + j.
  const std::string file = dir() + "/rows.h5";
  const kpmap::BlockPartition p7(7, world_size()), p5(5, world_size());
  const int r = world_rank();
  Mat x("x", p7.count(r), 2);
  for (std::size_t i = 0; i < x.extent(0); ++i)
    for (int j = 0; j < 2; ++j) x(i, j) = 10.0 * (p7.begin(r) + i) + j;
  Vec y = iota(p5.count(r), static_cast<double>(p5.begin(r)));
  kpmap::checkpoint::save(file, std::make_tuple(x, y), "devices");
  // Whole on every rank: the global arrays.
  std::tuple<Mat, Vec> whole;
  kpmap::checkpoint::restore(file, whole);
  REQUIRE(std::get<0>(whole).extent(0) == 7);
  REQUIRE(std::get<1>(whole).extent(0) == 5);
  for (int i = 0; i < 7; ++i)
    for (int j = 0; j < 2; ++j) CHECK(std::get<0>(whole)(i, j) == 10.0 * i + j);
  for (int i = 0; i < 5; ++i) CHECK(std::get<1>(whole)(i) == i);
  // Split again: each rank's own block.
  std::tuple<Mat, Vec> blocks;
  kpmap::checkpoint::restore(file, blocks, "devices");
  REQUIRE(std::get<0>(blocks).extent(0) == p7.count(r));
  for (std::size_t i = 0; i < p7.count(r); ++i) CHECK(std::get<0>(blocks)(i, 1) == x(i, 1));
  REQUIRE(std::get<1>(blocks).extent(0) == p5.count(r));
  for (std::size_t i = 0; i < p5.count(r); ++i) CHECK(std::get<1>(blocks)(i) == y(i));
}
