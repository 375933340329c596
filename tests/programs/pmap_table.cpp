// SPDX-License-Identifier: BSD-3-Clause
// The JAX-to-kpmap table of docs/pmap.md, line by line: each block between
// "// [row] <the line's JAX cell>" and "// [end]" holds the line's kpmap
// column as code (tests/scripts/check_pmap_table.py checks that every code
// span of the column appears in it), runs it, and checks the result against
// JAX's definition written out by hand. Lines about a whole program (a CNN,
// a layer or solver of one's own, a halo exchange) are checked against the
// example they link, which install.examples builds and runs. ctest runs
// this program at 1 to 4 ranks.
//
//   mpiexec -n 3 pmap_table

#include "pmap_table.hpp"
#include "correlate1d.hpp"

#include <kpmap/kpmap.hpp>

#include <Kokkos_Core.hpp>

#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

namespace pmap_table {

void spmd_lines(const Ranks& ranks) {
  [[maybe_unused]] const int n = ranks.n;
  [[maybe_unused]] const int me = ranks.me;
  [[maybe_unused]] const double tri = ranks.tri;
  [[maybe_unused]] const int model = ranks.model;

  line([&] {
    // [row] `jax.devices()`, `jax.device_count()`
    const int count = kpmap::axis_size("devices");
    const std::string kind = Kokkos::DefaultExecutionSpace::name();
    // [end]
    expect(count == n && !kind.empty(), "device_count");
  });
  line([&] {
    // [row] `jax.pmap(f, axis_name="devices")`
    const Vector x = iota(10);
    const Twice f;
    const auto in_axes = kpmap::in_axes(kpmap::sharded);
    const auto out_axes = kpmap::out_axes(kpmap::sharded);
    const auto block = kpmap::pmap("devices", f, in_axes, out_axes)(x);
    // [end]
    const kpmap::BlockPartition rows(10, n);
    auto h = host(block);
    expect(h.extent(0) == rows.count(me) && h(0) == 2.0 * (rows.begin(me) + 1), "pmap");
  });
  line([&] {
    // [row] `in_axes=(0, None)`
    const auto specs = kpmap::in_axes(kpmap::sharded, kpmap::replicated);
    const auto block =
        std::get<0>(kpmap::pmap("devices", Shift{}, specs,
                                kpmap::out_axes(kpmap::sharded, kpmap::replicated))(iota(10), 0.5));
    // [end]
    const kpmap::BlockPartition rows(10, n);
    expect(host(block)(0) == rows.begin(me) + 1.5, "in_axes=(0, None)");
  });
  line([&] {
    // [row] `out_axes=0` / `None`
    const auto one = kpmap::out_axes(kpmap::sharded);
    const auto twice =
        kpmap::pmap("devices", Twice{}, kpmap::in_axes(kpmap::sharded), one)(iota(4));
    const auto kept = kpmap::out_axes(kpmap::sharded, kpmap::replicated);
    const auto whole = kpmap::out_axes(kpmap::gathered, kpmap::replicated);
    const auto in = kpmap::in_axes(kpmap::sharded, kpmap::replicated);
    const auto [block, s] = kpmap::pmap("devices", Shift{}, in, kept)(iota(10), 0.5);
    const auto [all, s2] = kpmap::pmap("devices", Shift{}, in, whole)(iota(10), 0.5);
    // [end]
    const kpmap::BlockPartition rows(10, n);
    auto ha = host(all);
    expect(block.extent(0) == rows.count(me) && ha.extent(0) == 10 && ha(9) == 10.5 && s == 0.5 &&
               s2 == 0.5 && twice.extent(0) == kpmap::BlockPartition(4, n).count(me),
           "out_axes");
  });
  line([&] {
    // [row] `lax.psum/pmean/pmax/pmin(x, "devices")`
    Vector x("x", 3);
    Kokkos::deep_copy(x, me + 1.0);
    const auto total = kpmap::psum(x, "devices");
    const auto mean = kpmap::pmean(x, "devices");
    const auto top = kpmap::pmax(x, "devices");
    const auto low = kpmap::pmin(x, "devices");
    kpmap::psum_inplace(x, "devices");
    // [end]
    expect(host(total)(2) == tri && host(mean)(0) == tri / n && host(top)(1) == n &&
               host(low)(0) == 1.0 && host(x)(0) == tri,
           "psum, pmean, pmax, pmin");
  });
  if (n % 2 == 0) {
    // [row] `Mesh(devices, ("data", "model"))`
    const kpmap::Mesh mesh = kpmap::Mesh({{"data", 0}, {"model", 2}});
    // [end]
    expect(mesh.shape() == std::vector<int>{n / 2, 2}, "Mesh");
  }
  {
    // clang-format off
    // [row] `jax.shard_map(f, mesh=mesh, in_specs=(P("data", "model"), P("model")), out_specs=P("data"))`
    // clang-format on
    using kpmap::P;
    const kpmap::Mesh mesh({{"data", 0}, {"model", model}});
    const Matrix a("a", 5, 4);
    const Vector x("x", 4);
    Kokkos::deep_copy(a, 1.0);
    Kokkos::deep_copy(x, 2.0);
    const MatVec f;
    const auto y = kpmap::shard_map(mesh, {P("data", "model"), P("model")}, {P("data")}, f)(a, x);
    // [end]
    const kpmap::BlockPartition rows(5, n / model);
    const auto whole = host(kpmap::gather(mesh, P("data"), y));
    expect(y.extent(0) == rows.count(mesh.axis_index("data")) && whole.extent(0) == 5 &&
               whole(4) == 8.0,
           "shard_map: A x");
  }
  line([&] {
    // [row] `jax.device_put(x, NamedSharding(mesh, P(None, "model")))`, a pytree prefix spec
    using kpmap::P;
    const kpmap::Mesh mesh({{"data", 0}, {"model", model}});
    Matrix x("x", 3, 5);
    Kokkos::deep_copy(x, 1.0);
    auto block = kpmap::shard(x, mesh, P(kpmap::none, "model"));  // this rank's columns
    auto whole = kpmap::gather(mesh, P(kpmap::none, "model"), block);
    auto count = [](const auto& pair) {
      return std::get<0>(pair).extent(0) + std::get<1>(pair).extent(0);
    };
    const auto rows = kpmap::shard_map(mesh, {P("data")}, {P()}, count)(std::make_tuple(x, x));
    // [end]
    const kpmap::BlockPartition cols(5, model), by_data(3, n / model);
    expect(block.extent(1) == cols.count(mesh.axis_index("model")) && whole.extent(1) == 5 &&
               host(whole)(2, 4) == 1.0 && rows == 2 * by_data.count(mesh.axis_index("data")),
           "shard over any dimension, gather back; one spec for a tuple's leaves");
  });
  line([&] {
    // [row] `P("data", None)`, `P(("data", "model"),)`, `P()`
    const auto rows = kpmap::P("data", kpmap::none);
    const auto both = kpmap::P({"data", "model"});
    const auto whole = kpmap::P();
    // [end]
    expect(rows.str() == "P('data', None)" && both.str() == "P(('data', 'model'),)" &&
               whole.str() == "P()",
           "P");
  });
  line([&] {
    // [row] `lax.psum(x, ("data", "model"))`, `axis_index(("model", "data"))`
    const kpmap::Mesh mesh({{"data", 0}, {"model", model}});
    const kpmap::UseMesh use(mesh);
    const double x = me + 1.0;
    const double total = kpmap::psum(x, {"data", "model"});
    const int index = kpmap::axis_index({"model", "data"});
    // [end]
    const int d = me / model, m = me % model;
    expect(total == tri && index == m * (n / model) + d, "several axes");
  });
  line([&] {
    // [row] `jax.vmap(f, in_axes=(0, None))(x, w)`
    const Matrix x("x", 4, 6);
    const Vector w("w", 3);
    Kokkos::deep_copy(x, 1.0);
    Kokkos::deep_copy(w, 0.5);
    const Correlate1D f;
    const auto y = kpmap::vmap(f, kpmap::in_axes(kpmap::batched, kpmap::broadcast),
                               kpmap::returns<double*>())(x, w);
    // [end]
    expect(y.extent(0) == 4 && y.extent(1) == 4 && host(y)(3, 3) == 1.5, "vmap, returned");
  });
  line([&] {
    // [row] `jax.vmap(f, in_axes=(0, None), out_axes=0)`, output written in place
    const Matrix x("x", 4, 6), y("y", 4, 4);
    const Vector w("w", 3);
    Kokkos::deep_copy(x, 1.0);
    Kokkos::deep_copy(w, 0.5);
    const Correlate1D f;
    kpmap::vmap(f, kpmap::in_axes(kpmap::batched, kpmap::broadcast),
                kpmap::out_axes(kpmap::batched))(x, w, y);
    // [end]
    expect(host(y)(3, 3) == 1.5, "vmap, in place");
  });
  line([&] {
    // [row] `in_axes=1` (a batch along axis 1)
    const Matrix xt("xt", 6, 4), yt("yt", 4, 4);  // 4 examples along axis 1
    const Vector w("w", 3);
    Kokkos::deep_copy(xt, 1.0);
    Kokkos::deep_copy(w, 0.5);
    kpmap::vmap(Correlate1D{}, kpmap::in_axes(kpmap::batched_at<1>, kpmap::broadcast),
                kpmap::out_axes(kpmap::batched_at<1>))(xt, w, yt);
    // [end]
    expect(host(yt)(3, 2) == 1.5, "batched_at<1>");
  });
  line([&] {
    // [row] `jax.pmap(jax.vmap(f, in_axes=(0, None)), in_axes=(0, None))`
    const Matrix x("x", 10, 6);
    const Vector w("w", 3);
    Kokkos::deep_copy(x, 1.0);
    Kokkos::deep_copy(w, 0.5);
    const Correlate1D f;
    const auto y = kpmap::pmap(
        "devices",
        kpmap::vmap(f, kpmap::in_axes(kpmap::batched, kpmap::broadcast), kpmap::returns<double*>()),
        kpmap::in_axes(kpmap::sharded, kpmap::replicated), kpmap::out_axes(kpmap::sharded))(x, w);
    // [end]
    const kpmap::BlockPartition rows(10, n);
    expect(y.extent(0) == rows.count(me) && (y.extent(0) == 0 || host(y)(0, 3) == 1.5),
           "pmap of vmap");
  });
  line([&] {
    // [row] `jax.vmap(jax.vmap(f))`
    const Kokkos::View<double***> x("x", 3, 4, 6);
    const Kokkos::View<double***> y("y", 3, 4, 4);
    const Vector w("w", 3);
    Kokkos::deep_copy(x, 1.0);
    Kokkos::deep_copy(w, 0.5);
    const Correlate1D f;
    const auto in = kpmap::in_axes(kpmap::batched, kpmap::broadcast);
    const auto out = kpmap::out_axes(kpmap::batched);
    kpmap::vmap(kpmap::vmap(f, in, out), in, out)(x, w, y);
    // [end]
    expect(host(y)(2, 3, 3) == 1.5, "vmap of vmap");
  });
  line([&] {
    // [row] async dispatch overlapping a `pmean`
    Vector x("x", 4);
    Kokkos::deep_copy(x, me + 1.0);
    kpmap::Request r = kpmap::ipmean(x, "devices");
    Vector other = iota(4);  // kernels overlap the reduction
    r.wait();
    // [end]
    expect(host(x)(3) == tri / n && host(other)(3) == 4.0, "ipmean");
  });
  line([&] {
    // [row] `lax.all_gather(x, ax, axis=d)`, `tiled=True`
    const char* ax = "devices";
    const int d = 1;
    Matrix x("x", 2, 3);
    Kokkos::deep_copy(x, 1.0 * me);
    const auto stacked = kpmap::all_gather(x, ax, d);              // (2, n, 3)
    const auto tiled = kpmap::all_gather(x, ax, kpmap::Tiled{d});  // (2, 3 n)
    // [end]
    auto hs = host(stacked);
    auto ht = host(tiled);
    expect(hs.extent(1) == std::size_t(n) && hs(1, n - 1, 2) == n - 1.0 &&
               ht.extent(1) == 3 * std::size_t(n) && ht(1, 3 * n - 1) == n - 1.0,
           "all_gather");
  });
  line([&] {
    // [row] `lax.all_to_all(x, ax, split, concat)`, `tiled=True`
    const char* ax = "devices";
    const int split = 0, concat = 1;
    Matrix x("x", n, 3);  // x_q(i, j) = 100 q + 10 i + j
    Kokkos::parallel_for(
        "table::a2a", kpmap::row_major_range<2>({0, 0}, {n, 3}),
        KOKKOS_LAMBDA(std::size_t i, std::size_t j) { x(i, j) = 100.0 * me + 10.0 * i + j; });
    const auto y = kpmap::all_to_all(x, ax, split, concat);                // (3, n)
    const auto t = kpmap::all_to_all(x, ax, split, concat, kpmap::tiled);  // (1, 3 n)
    // [end]
    // JAX: y(i, j) on rank r is x_j(r, i); tiled, t(0, 3 q + j) is x_q(r, j).
    auto hy = host(y);
    auto ht = host(t);
    expect(hy.extent(0) == 3 && hy.extent(1) == std::size_t(n) &&
               hy(2, n - 1) == 100.0 * (n - 1) + 10.0 * me + 2 && ht.extent(0) == 1 &&
               ht(0, 3 * (n - 1) + 1) == 100.0 * (n - 1) + 10.0 * me + 1,
           "all_to_all");
  });
  line([&] {
    // [row] `lax.pbroadcast(x, ax, source)`
    const char* ax = "devices";
    const int source = n - 1;
    Vector x("x", 2);
    Kokkos::deep_copy(x, 1.0 * me);
    const auto y = kpmap::pbroadcast(x, ax, source);
    const double mine = host(x)(0);
    kpmap::pbroadcast_inplace(x, ax, source);
    // [end]
    expect(host(y)(1) == n - 1.0 && mine == me && host(x)(0) == n - 1.0, "pbroadcast");
  });
  line([&] {
    // [row] `lax.psum_scatter(x, ax, scatter_dimension=d)`
    const char* ax = "devices";
    const int d = 0;
    Matrix x("x", n, 2);  // x(i, j) = i + j on every rank
    Kokkos::parallel_for(
        "table::scatter", kpmap::row_major_range<2>({0, 0}, {n, 2}),
        KOKKOS_LAMBDA(std::size_t i, std::size_t j) { x(i, j) = double(i + j); });
    const auto y = kpmap::psum_scatter(x, ax, d);                // row `me` of n x, shape (2)
    const auto t = kpmap::psum_scatter(x, ax, kpmap::Tiled{d});  // the same as a (1, 2) block
    // [end]
    expect(host(y)(1) == n * (me + 1.0) && host(t)(0, 0) == n * 1.0 * me, "psum_scatter");
  });
  line([&] {
    // [row] `lax.ppermute(x, ax, perm)`
    const char* ax = "devices";
    const int src = 0, dst = n - 1;
    Vector x("x", 2);
    Kokkos::deep_copy(x, me + 1.0);
    const auto y = kpmap::ppermute(x, ax, {{src, dst}});
    // [end]
    expect(host(y)(0) == (me == n - 1 ? 1.0 : 0.0), "ppermute: zeros where no pair sends");
  });
  line([&] {
    // [row] `lax.axis_index(ax)`, `psum(1, ax)`
    const char* ax = "devices";
    const int index = kpmap::axis_index(ax);
    const int size = kpmap::axis_size(ax);
    // [end]
    expect(index == me && size == kpmap::psum(1, ax), "axis_index, axis_size");
  });
  line([&] {
    // [row] `a @ x`, `a @ b`, `jnp.dot(x, y)` (in a pmap or shard_map body)
    Kokkos::View<double**> a("a", 2, 3), b("b", 3, 2);
    Kokkos::deep_copy(a, 2.0);
    Kokkos::deep_copy(b, 0.5);
    const Vector x = iota(3), y = iota(3);
    auto ax = kpmap::matmul(a, x);
    auto ab = kpmap::matmul(a, b);
    const double xy = kpmap::dot(x, y);
    // [end]
    expect(host(ax)(1) == 12.0 && ab.extent(0) == 2 && ab.extent(1) == 2 && xy == 14.0,
           "matmul and dot: 2 (1 + 2 + 3), 3 x 2 x 0.5, 1 + 4 + 9");
    auto hab = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ab);
    expect(hab(1, 1) == 3.0, "matmul of two matrices");
  });
}

}  // namespace pmap_table

namespace {

int table(kpmap::Runtime&) {
  using namespace pmap_table;
  const int n = kpmap::axis_size("devices");
  const Ranks ranks{n, kpmap::axis_index("devices"), n * (n + 1) / 2.0, n % 2 == 0 ? 2 : 1};
  spmd_lines(ranks);
  array_lines(ranks);
  if (!failures.empty()) {
    std::string all;
    for (const std::string& f : failures) all += "\n  " + f;
    throw kpmap::Error("pmap table: " + std::to_string(failures.size()) +
                           " line(s) did not give JAX's answer:" + all,
                       1, kpmap::ErrorScope::all_ranks);
  }
  if (ranks.me == 0)
    std::printf("pmap table: every line's kpmap column ran and gave JAX's answer\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return kpmap::run(argc, argv, table); }
