// SPDX-License-Identifier: BSD-3-Clause
// 05 pmap of vmap: each device cross-correlates its shard of the batch.
//
//   jax.pmap(jax.vmap(correlate, in_axes=(0, None)), in_axes=(0, None))(x, w)
//
// kpmap::returns lets the vmap allocate and return its output (one signal of
// n - taps + 1 samples per example, as Correlate1D::shape says), which is
// what pmap keeps sharded or, marked gathered, gathers.
//
//   mpiexec -n 3 ./05_pmap_vmap

#include <kpmap/kpmap.hpp>

#include <Kokkos_Core.hpp>

#include "correlate1d.hpp"  // Correlate1D: y(i) = sum_k w(k) x(i + k), one example

#include <array>
#include <cstdio>

int correlate_sharded(kpmap::Runtime&) {
  const std::size_t batch = 10, n = 32, taps = 3;  // 10 signals: 4 + 3 + 3 on 3 devices
  Kokkos::View<double**> x("x", batch, n);
  Kokkos::View<double*> w("w", taps);
  Kokkos::parallel_for(
      "05_pmap_vmap::signals", kpmap::row_major_range<2>({0, 0}, {batch, n}),
      KOKKOS_LAMBDA(std::size_t b, std::size_t i) { x(b, i) = double(b * i + 1); });
  Kokkos::parallel_for(
      "05_pmap_vmap::filter", taps, KOKKOS_LAMBDA(std::size_t k) { w(k) = k == 1 ? 2.0 : 1.0; });

  auto correlate = kpmap::vmap(Correlate1D{}, kpmap::in_axes(kpmap::batched, kpmap::broadcast),
                               kpmap::returns<double*>());
  auto f = kpmap::pmap("devices", correlate, kpmap::in_axes(kpmap::sharded, kpmap::replicated),
                       kpmap::out_axes(kpmap::gathered));
  const auto y = f(x, w);  // (batch, n - taps + 1), gathered on every device

  // Checked against the closed form of 04: y(b, i) = 4 b (i + 1) + 4.
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
  int wrong = 0;
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t i = 0; i < h.extent(1); ++i) wrong += h(b, i) != 4.0 * b * (i + 1) + 4;
  const kpmap::BlockPartition shards(batch, kpmap::axis_size("devices"));
  const int me = kpmap::axis_index("devices");
  std::printf("device %d cross-correlated signals [%zu, %zu)\n", me, shards.begin(me),
              shards.end(me));
  std::fflush(stdout);
  if (me == 0) {
    std::printf("y(9, 0..2) = %g %g %g; %zu x %zu outputs %s 4 b (i + 1) + 4\n", h(9, 0), h(9, 1),
                h(9, 2), batch, h.extent(1), wrong ? "differ from" : "equal");
  }
  return kpmap::psum(wrong, "devices") == 0 ? 0 : 1;
}

int main(int argc, char** argv) { return kpmap::run(argc, argv, correlate_sharded); }
