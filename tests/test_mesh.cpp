// Meshes of named axes and collectives along one axis of an N-D mesh.

#include "support/mpi_test.hpp"

#include <kpmap/collectives.hpp>
#include <kpmap/mesh.hpp>

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

  // Plain names resolve in the mesh in use.
  kpmap::UseMesh use(mesh);
  CHECK(kpmap::axis_size("model") == 2);
  CHECK_THROWS_WITH(kpmap::axis_size("devices"), ContainsSubstring("'data', 'model'"));
}

TEST_CASE("mesh shapes that do not fit are refused", "[mesh]") {
  const int P = world_size();
  CHECK_THROWS_WITH(kpmap::Mesh({{"data", P + 1}}), ContainsSubstring("do not fit"));
  CHECK_THROWS_WITH(kpmap::Mesh({{"a", 0}, {"a", 0}}), ContainsSubstring("appears twice"));
  kpmap::Mesh line({{"x", 0}});
  CHECK(line.axis_size("x") == P);
}
