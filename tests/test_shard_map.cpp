// SPDX-License-Identifier: BSD-3-Clause
// shard_map with partition specs over a 2-D mesh, against JAX's definitions
// written out here: P(a, b) gives the rank at mesh coordinates (d, m) the
// rows BlockPartition(n0, size of a) gives index d and the columns
// BlockPartition(n1, size of b) gives index m; a set of axes indexes its
// blocks linearly in the order named. Any rank count: "model" is 2 where the
// count is even, else 1.

#include "support/mpi_test.hpp"

#include <kpmap/collectives/checked.hpp>
#include <kpmap/spmd/shard_map.hpp>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using kpmap::none;
using kpmap::P;
using kpmap::test::world_rank;
using kpmap::test::world_size;

namespace {

using Host = Kokkos::HostSpace;
using Matrix = Kokkos::View<double**, Host>;

constexpr std::size_t N0 = 7, N1 = 5;

double a_value(std::size_t i, std::size_t j) { return 10.0 * i + j; }

Matrix make_a() {
  Matrix a("a", N0, N1);
  for (std::size_t i = 0; i < N0; ++i)
    for (std::size_t j = 0; j < N1; ++j) a(i, j) = a_value(i, j);
  return a;
}

int model_size() { return world_size() % 2 == 0 ? 2 : 1; }

// The 2-D mesh of data x model the tests split over, and this rank's
// coordinates on it.
struct Grid {
  int M = model_size();
  int D = world_size() / M;
  kpmap::Mesh mesh{std::vector<std::pair<std::string, int>>{{"data", D}, {"model", M}}};
  int d = mesh.axis_index("data");
  int m = mesh.axis_index("model");
};

// The block a function sees, as a new View (its identity for the checks).
struct Copy {
  template <class B>
  Matrix operator()(const B& b) const {
    Matrix out("out", b.extent(0), b.extent(1));
    for (std::size_t i = 0; i < b.extent(0); ++i)
      for (std::size_t j = 0; j < b.extent(1); ++j) out(i, j) = b(i, j);
    return out;
  }
};

// Checks that `block` is a's block rows [r0, r1) x columns [c0, c1).
bool is_block(const Matrix& block, std::size_t r0, std::size_t r1, std::size_t c0, std::size_t c1) {
  if (block.extent(0) != r1 - r0 || block.extent(1) != c1 - c0) return false;
  for (std::size_t i = 0; i < block.extent(0); ++i)
    for (std::size_t j = 0; j < block.extent(1); ++j)
      if (block(i, j) != a_value(r0 + i, c0 + j)) return false;
  return true;
}

bool is_whole_a(const Matrix& whole) { return is_block(whole, 0, N0, 0, N1); }

}  // namespace

TEST_CASE("shard_map splits dimensions over mesh axes as partition specs say", "[shard_map]") {
  const Grid g;
  const int M = g.M, D = g.D, d = g.d, m = g.m;
  const kpmap::Mesh& mesh = g.mesh;
  const auto a = make_a();
  const kpmap::BlockPartition rows_by_data(N0, D), cols_by_model(N1, M);

  SECTION("P('data', None): rows over data, whole columns, replicated over model") {
    auto f = kpmap::shard_map(mesh, {P("data", none)}, {P("data", none)}, Copy{});
    auto block = f(a);
    CHECK(is_block(block, rows_by_data.begin(d), rows_by_data.end(d), 0, N1));
    CHECK(is_whole_a(kpmap::gather(mesh, P("data", none), block)));
  }
  SECTION("P('data', 'model'): rows over data, columns over model") {
    auto f = kpmap::shard_map(mesh, {P("data", "model")}, {P("data", "model")}, Copy{});
    auto block = f(a);
    CHECK(is_block(block, rows_by_data.begin(d), rows_by_data.end(d), cols_by_model.begin(m),
                   cols_by_model.end(m)));
    CHECK(is_whole_a(kpmap::gather(mesh, P("data", "model"), block)));
  }
  SECTION("P(None, 'data'): columns over data") {
    const kpmap::BlockPartition cols_by_data(N1, D);
    auto block = kpmap::shard_map(mesh, {P(none, "data")}, {P(none, "data")}, Copy{})(a);
    CHECK(is_block(block, 0, N0, cols_by_data.begin(d), cols_by_data.end(d)));
    CHECK(is_whole_a(kpmap::gather(mesh, P(none, "data"), block)));
  }
  SECTION("P(('data', 'model'),): rows over both axes, block index d M + m") {
    const kpmap::BlockPartition rows(N0, D * M);
    const int k = d * M + m;
    auto block = kpmap::shard_map(mesh, {P({"data", "model"})}, {P({"data", "model"})}, Copy{})(a);
    CHECK(is_block(block, rows.begin(k), rows.end(k), 0, N1));
    CHECK(is_whole_a(kpmap::gather(mesh, P({"data", "model"}), block)));
  }
  SECTION("P(('model', 'data'),): block index m D + d") {
    const kpmap::BlockPartition rows(N0, D * M);
    const int k = m * D + d;
    auto block = kpmap::shard_map(mesh, {P({"model", "data"})}, {P({"model", "data"})}, Copy{})(a);
    CHECK(is_block(block, rows.begin(k), rows.end(k), 0, N1));
    CHECK(is_whole_a(kpmap::gather(mesh, P({"model", "data"}), block)));
  }
  SECTION("P(): the whole array on every rank") {
    auto block = kpmap::shard_map(mesh, {P()}, {P()}, Copy{})(a);
    CHECK(is_whole_a(block));
  }
}

TEST_CASE("one spec is a prefix for every leaf of a tuple argument and every result",
          "[shard_map]") {
  const Grid g;
  const int D = g.D, d = g.d;
  const kpmap::Mesh& mesh = g.mesh;
  const kpmap::BlockPartition rows_by_data(N0, D);
  const auto a = make_a();
  Matrix twice("twice", N0, N1);
  for (std::size_t i = 0; i < N0; ++i)
    for (std::size_t j = 0; j < N1; ++j) twice(i, j) = 2 * a_value(i, j);
  // JAX: shard_map(f, in_specs=P("data", None), out_specs=P("data", None))
  // with a pytree argument and a pytree result.
  auto f = [](const auto& pair) {
    return std::make_tuple(Copy{}(std::get<0>(pair)), Copy{}(std::get<1>(pair)));
  };
  auto [x, y] =
      kpmap::shard_map(mesh, {P("data", none)}, {P("data", none)}, f)(std::make_tuple(a, twice));
  CHECK(is_block(x, rows_by_data.begin(d), rows_by_data.end(d), 0, N1));
  REQUIRE(y.extent(0) == rows_by_data.count(d));
  for (std::size_t i = 0; i < y.extent(0); ++i)
    CHECK(y(i, 3) == 2 * a_value(rows_by_data.begin(d) + i, 3));
  // A vector of arrays under one spec: each leaf its block.
  auto counts = kpmap::shard_map(mesh, {P("data", none)}, {P()}, [](const auto& leaves) {
    std::size_t n = 0;
    for (const auto& leaf : leaves) n += leaf.extent(0);
    return static_cast<double>(n);
  })(std::vector<Matrix>{a, twice, a});
  CHECK(counts == 3.0 * rows_by_data.count(d));
}

TEST_CASE("shard splits an array over any dimensions as a spec says; gather undoes it",
          "[shard_map]") {
  const Grid g;
  const int M = g.M, D = g.D, d = g.d, m = g.m;
  const kpmap::Mesh& mesh = g.mesh;
  const auto a = make_a();
  const kpmap::BlockPartition rows_by_data(N0, D), cols_by_model(N1, M), cols_by_data(N1, D);
  const auto cols = kpmap::shard<Host>(a, mesh, P(none, "model"));
  CHECK(is_block(cols, 0, N0, cols_by_model.begin(m), cols_by_model.end(m)));
  CHECK(is_whole_a(kpmap::gather(mesh, P(none, "model"), cols)));
  const auto both = kpmap::shard<Host>(a, mesh, P("data", "model"));
  CHECK(is_block(both, rows_by_data.begin(d), rows_by_data.end(d), cols_by_model.begin(m),
                 cols_by_model.end(m)));
  CHECK(is_whole_a(kpmap::gather(mesh, P("data", "model"), both)));
  const auto by_data = kpmap::shard<Host>(a, mesh, P(none, "data"));
  CHECK(is_block(by_data, 0, N0, cols_by_data.begin(d), cols_by_data.end(d)));
  CHECK_THROWS_WITH(kpmap::shard<Host>(a, mesh, P("rows")),
                    ContainsSubstring("kpmap::shard: the array: its spec P('rows') names axis "
                                      "'rows', which the mesh does not have"));
}

TEST_CASE("shard_map matrix-vector product: psum over the axis that splits the sum",
          "[shard_map]") {
  // y = A x with A split P('data', 'model') and x split P('model'): each rank
  // multiplies its block, psum over 'model' completes its rows, and y's rows
  // are split over 'data' and replicated over 'model': out_specs P('data').
  const int M = model_size();
  kpmap::Mesh mesh({{"data", 0}, {"model", M}});
  const auto a = make_a();
  Kokkos::View<double*, Host> x("x", N1);
  for (std::size_t j = 0; j < N1; ++j) x(j) = 1.0 + j;
  auto matvec = kpmap::shard_map(mesh, {P("data", "model"), P("model")}, {P("data")},
                                 [](const auto& ab, const auto& xb) {
                                   Kokkos::View<double*, Host> y("y", ab.extent(0));
                                   for (std::size_t i = 0; i < ab.extent(0); ++i)
                                     for (std::size_t j = 0; j < ab.extent(1); ++j)
                                       y(i) += ab(i, j) * xb(j);
                                   kpmap::psum_inplace(y, "model");  // plain names: the mesh's axes
                                   return y;
                                 });
  kpmap::set_checked_mode(true);  // and the replication over 'model' is verified
  auto y_block = matvec(a, x);
  kpmap::set_checked_mode(false);
  auto y = kpmap::gather(mesh, P("data"), y_block);
  REQUIRE(y.extent(0) == N0);
  for (std::size_t i = 0; i < N0; ++i) {
    double expected = 0;  // sum_j (10 i + j)(1 + j), exact in doubles
    for (std::size_t j = 0; j < N1; ++j) expected += a_value(i, j) * (1.0 + j);
    CHECK(y(i) == expected);
  }
}

TEST_CASE("checked mode: a result whose spec leaves an axis unnamed must be replicated over it",
          "[shard_map][checked]") {
  if (world_size() < 2) SKIP("needs two ranks to differ");
  kpmap::Mesh mesh({{"data", 0}});
  const auto a = make_a();
  // Forgot the psum: each rank's partial sum differs, yet out_specs says P().
  auto f = kpmap::shard_map(mesh, {P("data")}, {P()}, [](const auto& ab) {
    Kokkos::View<double*, Host> s("s", 1);
    for (std::size_t i = 0; i < ab.extent(0); ++i) s(0) += ab(i, 0);
    return s;
  });
  kpmap::set_checked_mode(true);
  CHECK_THROWS_WITH(f(a), ContainsSubstring("shard_map result 0") && ContainsSubstring("P()"));
  kpmap::set_checked_mode(false);
}

TEST_CASE("shard_map refuses specs that do not fit, naming the spec", "[shard_map]") {
  kpmap::Mesh mesh({{"data", 0}});
  const auto a = make_a();
  CHECK_THROWS_WITH(
      kpmap::shard_map(mesh, {P("data", none, none)}, {P()}, Copy{})(a),
      ContainsSubstring("rank 2") && ContainsSubstring("P('data', None, None) names 3 dimensions"));
  CHECK_THROWS_WITH(kpmap::shard_map(mesh, {P("pipe")}, {P()}, Copy{})(a),
                    ContainsSubstring("kpmap::shard_map of ") && ContainsSubstring("Copy") &&
                        ContainsSubstring("argument 0: its spec P('pipe') names axis 'pipe', "
                                          "which the mesh does not have (its axes: 'data')"));
  CHECK_THROWS_WITH(kpmap::shard_map(mesh, {P("data", "data")}, {P()}, Copy{})(a),
                    ContainsSubstring("axis 'data' appears twice"));
  CHECK_THROWS_WITH(kpmap::shard_map(mesh, {P(), P()}, {P()}, Copy{})(a),
                    ContainsSubstring("kpmap::shard_map of ") && ContainsSubstring("Copy") &&
                        ContainsSubstring("2 in_specs for 1 arguments: the counts must match"));
  CHECK_THROWS_WITH(kpmap::shard_map(mesh, {P("data")}, {P(), P()}, Copy{})(a),
                    ContainsSubstring("Copy: 2 out_specs for 1 results: the counts must match"));
  auto scaled = [](const auto& ab, double s) { return ab.extent(0) * s; };
  CHECK_THROWS_WITH(kpmap::shard_map(mesh, {P("data"), P("data")}, {P()}, scaled)(a, 2.0),
                    ContainsSubstring("argument 1 is not a View"));
  CHECK(P({"data", "model"}).str() == "P(('data', 'model'),)");
}
