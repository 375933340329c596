// SPDX-License-Identifier: BSD-3-Clause
// The program behind docs/pmap.md: each block between "// [name]" and
// "// [end]" appears verbatim in the document, and ctest runs this program at
// 1 to 4 ranks, so the tour always compiles and tells the truth.
//
//   mpiexec -n 3 pmap_tour

#include "correlate1d.hpp"

#include <kpmap/kpmap.hpp>

#include <Kokkos_Core.hpp>

#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <tuple>

namespace {

// [loss]
// The function pmap runs on every device: its rows of X and y, and w.
// Kernels over device Views compute the mean loss and gradient of its rows;
// pmean weighted by the row counts makes them the mean over all N rows.
struct LossAndGrad {
  Kokkos::View<double*> grad;  // allocated once, outside the training loop

  template <class XBlock, class YBlock, class W>
  std::tuple<double, Kokkos::View<double*>> operator()(const XBlock& X, const YBlock& y,
                                                       const W& w) const {
    const double rows = static_cast<double>(X.extent(0));
    double loss = 0.0;
    Kokkos::parallel_reduce(
        "tour::loss", X.extent(0),
        KOKKOS_LAMBDA(std::size_t i, double& acc) {
          const double r = X(i, 0) * w(0) + X(i, 1) * w(1) - y(i);
          acc += r * r / rows;
        },
        loss);
    for (std::size_t j = 0; j < w.extent(0); ++j) {  // one kernel per feature
      Kokkos::parallel_reduce(
          "tour::gradient", X.extent(0),
          KOKKOS_LAMBDA(std::size_t i, double& acc) {
            const double r = X(i, 0) * w(0) + X(i, 1) * w(1) - y(i);
            acc += 2 * r * X(i, j) / rows;
          },
          Kokkos::subview(grad, j));
    }
    // Uneven blocks: weight each device's mean by its row count, so the
    // result is the mean over all N rows (jax's pmean over equal shards).
    const kpmap::Weight rows_here{rows};
    kpmap::pmean_inplace(grad, "devices", rows_here);
    return {kpmap::pmean(loss, "devices", rows_here), grad};
  }
};
// [end]

// [row_sums]
// The function shard_map runs: a device's block of A in, the sums of its rows
// out: jnp.sum(a, axis=1), a team per row on the block's device.
struct RowSums {
  template <class ABlock>
  Kokkos::View<double*> operator()(const ABlock& a) const {
    return kpmap::sum(a, 1);
  }
};
// [end]

// [params]
// A struct is a tree when it shows its Views to a visitor. Views elsewhere
// than the default execution space's memory (host Views in a CUDA build)
// add a line: using memory_space = Kokkos::HostSpace;
struct Params {
  Kokkos::View<double**> w;
  Kokkos::View<double*> b;
  template <class F>
  void for_each_view(F&& f) const {
    f(w);
    f(b);
  }
};
// [end]

// Fails the tour (on every rank) when a documented claim does not hold.
void expect(bool ok, const char* what) {
  if (!kpmap::psum(ok ? 0 : 1, kpmap::Mesh::world().axis("devices"))) return;
  throw kpmap::Error(std::string("pmap tour: ") + what, 1, kpmap::ErrorScope::all_ranks);
}

int tour(kpmap::Runtime& rt) {
  // [axes]
  // Every rank runs this same program. The world is one axis, "devices".
  const int me = kpmap::axis_index("devices");  // jax.lax.axis_index("devices")
  const int n = kpmap::axis_size("devices");    // jax.lax.psum(1, "devices")
  // [end]

  // [psum]
  // Scalars and Views reduce over an axis, as jax.lax.psum / pmean / pmax do.
  const double total = kpmap::psum(me + 1.0, "devices");  // 1 + 2 + ... + n

  Kokkos::View<double*> g("g", 4);  // e.g. a local gradient
  Kokkos::deep_copy(g, me + 1.0);
  kpmap::pmean_inplace(g, "devices");      // g = mean over devices, on every device
  auto g_max = kpmap::pmax(g, "devices");  // out of place: a new View
  // [end]
  expect(total == n * (n + 1) / 2.0, "psum of 1..n");
  auto gh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), g);
  expect(gh(0) == (n + 1) / 2.0, "pmean of 1..n");
  (void)g_max;

  // [trees]
  Params grads{Kokkos::View<double**>("w", 2, 3), Kokkos::View<double*>("b", 3)};
  Kokkos::deep_copy(grads.w, me + 1.0);
  Kokkos::deep_copy(grads.b, me + 1.0);
  const Params total_grads = kpmap::psum(grads, "devices");  // a new Params
  kpmap::pmean_inplace(grads, "devices");                    // in place, fused
  Kokkos::View<int*> count("count", 1);
  Kokkos::deep_copy(count, 1);
  auto [b_max, ranks] = kpmap::pmax(std::make_tuple(grads.b, count), "devices");
  // [end]
  {
    auto tw = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), total_grads.w);
    auto mw = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), grads.w);
    auto bm = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b_max);
    auto rk = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ranks);
    expect(tw(1, 2) == n * (n + 1) / 2.0 && mw(1, 2) == (n + 1) / 2.0 && bm(0) == (n + 1) / 2.0 &&
               rk(0) == 1,
           "psum of a struct tree: a new one; pmean in place; pmax of a tuple");
  }

  {
    // The last rank's loss is NaN; the numbers are exact.
    const double local_loss = me == n - 1 ? std::nan("") : 1.0;
    const double re = me, im = 1.0;
    // [element_types]
    const double worst = kpmap::pmax(local_loss, "devices");  // NaN if any rank's loss is NaN
    const bool any_diverged = kpmap::pmax(!std::isfinite(local_loss), "devices");
    const std::complex<double> z = kpmap::psum(std::complex<double>(re, im), "devices");
    // [end]
    expect(std::isnan(worst) && any_diverged &&
               z == std::complex<double>(n * (n - 1) / 2.0, double(n)),
           "pmax of a NaN, pmax of bools, psum of complex numbers");
  }

  // [pmap]
  // jax.pmap(f, axis_name="devices", in_axes=(0, 0, None), out_axes=None):
  // X and y are whole arrays; each device gets a block of their rows (the
  // blocks may differ by one row); w is the same on every device.
  const std::size_t N = 10, F = 2;
  Kokkos::View<double**> X("X", N, F);
  Kokkos::View<double*> y("y", N);
  Kokkos::parallel_for(
      "tour::data", N, KOKKOS_LAMBDA(std::size_t i) {
        X(i, 0) = 1.0;
        X(i, 1) = static_cast<double>(i);
        y(i) = 3.0 + 2.0 * i;  // y = 3 + 2 x exactly
      });
  Kokkos::View<double*> w("w", F);  // starts at zero

  auto loss_and_grad =
      kpmap::pmap("devices", LossAndGrad{Kokkos::View<double*>("grad", F)},
                  kpmap::in_axes(kpmap::sharded, kpmap::sharded, kpmap::replicated),
                  kpmap::out_axes(kpmap::replicated, kpmap::replicated));

  for (int step = 0; step < 2000; ++step) {
    const auto grad = std::get<1>(loss_and_grad(X, y, w));
    Kokkos::parallel_for(
        "tour::update", F, KOKKOS_LAMBDA(std::size_t j) { w(j) -= 0.01 * grad(j); });
  }
  // [end]
  auto wh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), w);
  expect(std::abs(wh(0) - 3.0) < 1e-2 && std::abs(wh(1) - 2.0) < 1e-3, "gradient descent fit");

  // [vmap]
  // jax.vmap(correlate, in_axes=(0, None))(x, taps): Correlate1D (above) maps
  // over the rows of x in one kernel; taps is shared. out_axes=0 is the
  // default, and Correlate1D::shape sizes the returned output.
  Kokkos::View<double**> x("x", 6, 8);
  Kokkos::View<double*> taps("taps", 3);
  Kokkos::deep_copy(x, 1.0);
  Kokkos::deep_copy(taps, 0.5);
  auto ys = kpmap::vmap(Correlate1D{}, kpmap::in_axes(kpmap::batched, kpmap::broadcast),
                        kpmap::returns<double*>())(x, taps);  // ys(b, i) = 1.5, shape (6, 6)

  // In a loop that must not allocate: out_axes, and an output made once.
  Kokkos::View<double**> out("out", 6, 6);
  auto correlate = kpmap::vmap(Correlate1D{}, kpmap::in_axes(kpmap::batched, kpmap::broadcast),
                               kpmap::out_axes(kpmap::batched));
  correlate(x, taps, out);  // out(b, i) = sum_k taps(k) x(b, i + k) = 1.5
  // [end]
  auto oh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  auto yh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ys);
  expect(oh(0, 0) == 1.5 && oh(5, 5) == 1.5 && yh.extent(1) == 6 && yh(5, 5) == 1.5,
         "vmap of a cross-correlation");

  if (n % 2 == 0) {
    // [mesh]
    // jax.sharding.Mesh(devices, ("data", "model")) with shard_map: a 2-D mesh
    // whose "data" size MPI_Dims_create picks. Collectives take an axis of it.
    kpmap::Mesh mesh({{"data", 0}, {"model", 2}});
    const double row_sum = kpmap::psum(1.0, mesh.axis("model"));  // 2: one data row
    kpmap::UseMesh use(mesh);  // now plain names mean this mesh's axes
    const int data_index = kpmap::axis_index("data");
    // [end]
    expect(row_sum == 2.0 && data_index == me / 2, "2-D mesh");
  }

  {
    // [shard_map]
    // jax.shard_map(f, mesh=mesh, in_specs=P("data", None), out_specs=P("data")):
    // each device gets the rows of A that its "data" index gives (blocks may be
    // uneven) and all columns; the result stays sharded until gathered.
    kpmap::Mesh mesh({{"data", 0}, {"model", n % 2 == 0 ? 2 : 1}});
    using kpmap::P;
    Kokkos::View<double**> A("A", 7, 3);
    Kokkos::deep_copy(A, 1.0);
    auto row_sums = kpmap::shard_map(mesh, {P("data", kpmap::none)}, {P("data")}, RowSums{});
    auto block = row_sums(A);                            // this device's rows of the result
    auto whole = kpmap::gather(mesh, P("data"), block);  // shape (7), on every device
    // [end]
    auto wh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), whole);
    expect(wh.extent(0) == 7 && wh(0) == 3.0 && wh(6) == 3.0, "shard_map row sums");
  }

  // [gather]
  // all_gather stacks (or, with Tiled, concatenates) every device's block;
  // ppermute sends along pairs, and a device no pair sends to receives zeros.
  Kokkos::View<double*> mine("mine", 3);
  Kokkos::deep_copy(mine, 1.0 * me);
  auto stacked = kpmap::all_gather(mine, "devices");                 // shape (n, 3)
  auto tiled = kpmap::all_gather(mine, "devices", kpmap::Tiled{0});  // shape (3 n)
  auto shifted = kpmap::ppermute(mine, "devices", {{0, n - 1}});     // only n-1 receives
  // [end]
  expect(stacked.extent(0) == std::size_t(n) && tiled.extent(0) == std::size_t(3 * n),
         "all_gather shapes");
  auto sh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), shifted);
  expect(sh(0) == 0.0, "ppermute zeros or rank 0's value");

  // [stream]
  // Kernels that run on an instance of their own (a stream on a GPU: Kokkos 4's
  // partition_space gives one) name it to the collective that reads their data.
  const Kokkos::DefaultExecutionSpace stream;
  Kokkos::View<double*> part("part", 4);
  Kokkos::parallel_for(
      "tour::fill", Kokkos::RangePolicy<>(stream, 0, 4), KOKKOS_LAMBDA(int i) { part(i) = i; });
  kpmap::Request r = kpmap::ipsum(stream, part, "devices");  // fences `stream` only
  r.wait();
  // [end]
  auto sh3 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), part);
  expect(sh3(3) == 3.0 * n, "ipsum on a named instance");

  // Host numbers, reduced in place: rank q holds 10 q, 20 q and 30 q.
  const auto q = static_cast<std::uint64_t>(rt.rank());
  const std::uint64_t parameters = 10 * q, gradients = 20 * q, optimizer = 30 * q;
  // [host_numbers]
  std::uint64_t bytes[3] = {parameters, gradients, optimizer};
  kpmap::pmax(bytes, 3, "devices");  // each the largest any rank holds, on every rank
  // [end]
  const auto last = static_cast<std::uint64_t>(n - 1);
  expect(bytes[0] == 10 * last && bytes[1] == 20 * last && bytes[2] == 30 * last,
         "pmax of host numbers");

  if (rt.rank() == 0) {
    std::printf("pmap tour: %d device(s), fitted y = %.4f + %.4f x\n", n, wh(0), wh(1));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return kpmap::run(argc, argv, tour); }
