// SPDX-License-Identifier: BSD-3-Clause
// Meshes of named axes and collectives along one axis of an N-D mesh.

#include "support/mpi_test.hpp"

#include <kpmap/collectives/collectives.hpp>
#include <kpmap/runtime/mesh.hpp>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

using Catch::Matchers::ContainsSubstring;
using kpmap::test::world_rank;
using kpmap::test::world_size;

TEST_CASE("the world mesh has one axis 'devices' over all ranks", "[mesh]") {
  const auto& world = kpmap::Mesh::world();
  CHECK(world.ndim() == 1);
  CHECK(kpmap::axis_size("devices") == world_size());
  CHECK(kpmap::axis_index("devices") == world_rank());
  CHECK_THROWS_WITH(world.axis("data"),
                    ContainsSubstring("unknown axis 'data'") && ContainsSubstring("'devices'"));
}

TEST_CASE("a 2-D mesh with a size left to MPI_Dims_create", "[mesh]") {
  const int P = world_size();
  if (P % 2 != 0) SKIP("needs an even rank count for a model axis of 2");
  kpmap::Mesh mesh({{"data", 0}, {"model", 2}});
  CHECK(mesh.shape() == std::vector<int>{P / 2, 2});
  CHECK(mesh.axis_names() == std::vector<std::string>{"data", "model"});
  // No reordering: the coordinates are those of row-major rank order.
  CHECK(mesh.axis_index("data") == world_rank() / 2);
  CHECK(mesh.axis_index("model") == world_rank() % 2);

  // A psum over "model" adds the two ranks of one data row; over "data" the column.
  const double v = world_rank() + 1;
  const int row = world_rank() / 2;
  const int col = world_rank() % 2;
  CHECK(kpmap::psum(v, mesh.axis("model")) == (2 * row + 1) + (2 * row + 2));
  double column = 0;
  for (int q = 0; q < P / 2; ++q) column += 2 * q + col + 1;
  CHECK(kpmap::psum(v, mesh.axis("data")) == column);

  // Plain names resolve in the mesh in use; "devices", which it does not
  // name, is every rank of it, as on the world mesh.
  kpmap::UseMesh use(mesh);
  CHECK(kpmap::axis_size("model") == 2);
  CHECK(kpmap::axis_size("devices") == P);
  CHECK(kpmap::axis_index("devices") == world_rank());
  CHECK_THROWS_WITH(kpmap::axis_size("pipe"), ContainsSubstring("'data', 'model'"));
}

// A mesh of any rank count: "data" takes what "model" (2 where it can) leaves.
static int model_size() { return world_size() % 2 == 0 ? 2 : 1; }

TEST_CASE("collectives over several axes at once, as JAX's psum(x, ('data', 'model'))", "[mesh]") {
  const int P = world_size();
  const int M = model_size();
  const int D = P / M;
  kpmap::Mesh mesh({{"data", 0}, {"model", M}});
  kpmap::UseMesh use(mesh);
  const int d = kpmap::axis_index("data");
  const int m = kpmap::axis_index("model");
  const int me = world_rank();
  REQUIRE(me == d * M + m);  // row-major, no reordering

  // Both axes together are every rank: the sum 1 + ... + P.
  CHECK(kpmap::psum(me + 1.0, {"data", "model"}) == P * (P + 1) / 2.0);
  CHECK(kpmap::axis_size({"data", "model"}) == P);
  CHECK(kpmap::pmax(me, {"model", "data"}) == P - 1);

  // JAX's index over a set of axes: linear in the order the set names them.
  CHECK(kpmap::axis_index({"data", "model"}) == d * M + m);
  CHECK(kpmap::axis_index({"model", "data"}) == m * D + d);

  // all_gather over ('model', 'data') stacks the blocks in that order: block
  // j = m' D + d' comes from the rank at (d', m'), world rank d' M + m'.
  Kokkos::View<int*> mine("mine", 1);
  Kokkos::deep_copy(mine, me);
  auto stacked = kpmap::all_gather(mine, {"model", "data"});
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), stacked);
  REQUIRE(h.extent(0) == static_cast<std::size_t>(P));
  for (int mm = 0; mm < M; ++mm) {
    for (int dd = 0; dd < D; ++dd) CHECK(h(mm * D + dd, 0) == dd * M + mm);
  }

  // A View's pmean over both axes divides by every rank.
  Kokkos::View<double*> g("g", 3);
  Kokkos::deep_copy(g, me + 1.0);
  kpmap::pmean_inplace(g, std::vector<std::string>{"data", "model"});
  auto hg = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), g);
  CHECK(hg(2) == (P + 1) / 2.0);

  CHECK_THROWS_WITH(kpmap::psum(1, {"data", "data"}), ContainsSubstring("appears twice"));
  CHECK_THROWS_WITH(kpmap::psum(1, {"data", "pipe"}), ContainsSubstring("unknown axis 'pipe'"));
}

TEST_CASE("two of three axes: the ranks that share the third coordinate", "[mesh]") {
  const int P = world_size();
  const int C = model_size();
  kpmap::Mesh mesh({{"a", 0}, {"b", 1}, {"c", C}});
  const int A = P / C;
  const int c = mesh.axis_index("c");
  const double v = world_rank() + 1.0;
  // Ranks (a, 0, c) for every a: world ranks a C + c.
  double expected = 0;
  for (int a = 0; a < A; ++a) expected += a * C + c + 1.0;
  CHECK(kpmap::psum(v, mesh.axes({"a", "b"})) == expected);
  CHECK(kpmap::psum(v, mesh.axes({"b", "a"})) == expected);
  CHECK(mesh.axes({"a", "b"}).size() == A);
  CHECK(kpmap::psum(v, mesh.axes({"a", "c"})) == P * (P + 1) / 2.0);
  CHECK(mesh.axes({"c", "b", "a"}).index() == c * A + mesh.axis_index("a"));
}

TEST_CASE("mesh shapes that do not fit are refused", "[mesh]") {
  const int P = world_size();
  CHECK_THROWS_WITH(kpmap::Mesh({{"data", P + 1}}), ContainsSubstring("do not fit"));
  CHECK_THROWS_WITH(kpmap::Mesh({{"a", 0}, {"a", 0}}), ContainsSubstring("appears twice"));
  kpmap::Mesh line({{"x", 0}});
  CHECK(line.axis_size("x") == P);
}
