// The program behind docs/pmap.md: each block between "// [name]" and
// "// [end]" appears verbatim in the document, and ctest runs this program at
// 1 to 4 ranks, so the tour always compiles and tells the truth.
//
//   mpiexec -n 3 pmap_tour

#include <kpmap/kpmap.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdio>

namespace {

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

  // [pmap]
  // jax.pmap(f, axis_name="devices", in_axes=(0, 0, None), out_axes=None):
  // X and y are whole arrays; each device gets a block of their rows (the
  // blocks may differ by one row); w is the same on every device.
  const std::size_t N = 10, F = 2;
  Kokkos::View<double**, Kokkos::HostSpace> X("X", N, F);
  Kokkos::View<double*, Kokkos::HostSpace> y("y", N);
  for (std::size_t i = 0; i < N; ++i) {
    X(i, 0) = 1.0;
    X(i, 1) = static_cast<double>(i);
    y(i) = 3.0 + 2.0 * i;  // y = 3 + 2 x exactly
  }
  Kokkos::View<double*, Kokkos::HostSpace> w("w", F);  // starts at zero

  auto loss_and_grad = kpmap::pmap(
      "devices",
      [](auto X_local, auto y_local, auto w) {
        const std::size_t rows = X_local.extent(0);
        Kokkos::View<double*, Kokkos::HostSpace> grad("grad", w.extent(0));
        double loss = 0.0;
        for (std::size_t i = 0; i < rows; ++i) {
          const double r = X_local(i, 0) * w(0) + X_local(i, 1) * w(1) - y_local(i);
          loss += r * r / rows;
          for (std::size_t j = 0; j < w.extent(0); ++j) grad(j) += 2 * r * X_local(i, j) / rows;
        }
        // Uneven blocks: weight each device's mean by its row count, so the
        // result is the mean over all N rows (jax's pmean over equal shards).
        const kpmap::Weight rows_here{static_cast<double>(rows)};
        kpmap::pmean_inplace(grad, "devices", rows_here);
        return std::make_tuple(kpmap::pmean(loss, "devices", rows_here), grad);
      },
      kpmap::in_axes(kpmap::sharded, kpmap::sharded, kpmap::replicated),
      kpmap::out_axes(kpmap::replicated, kpmap::replicated));

  for (int step = 0; step < 2000; ++step) {
    auto [loss, grad] = loss_and_grad(X, y, w);
    for (std::size_t j = 0; j < F; ++j) w(j) -= 0.01 * grad(j);  // identical on every device
  }
  // [end]
  expect(std::abs(w(0) - 3.0) < 1e-2 && std::abs(w(1) - 2.0) < 1e-3, "gradient descent fit");

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

  if (rt.rank() == 0) {
    std::printf("pmap tour: %d device(s), fitted y = %.4f + %.4f x\n", n, w(0), w(1));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return kpmap::run(argc, argv, tour); }
