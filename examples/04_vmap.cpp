// SPDX-License-Identifier: BSD-3-Clause
// 04 vmap of a 1-D cross-correlation over a batch:
//
//   jax.vmap(lambda x, w: jnp.correlate(x, w, "valid"), in_axes=(0, None))(x, w)
//
// (A cross-correlation, as the "convolutions" of neural networks are:
// jnp.convolve would flip w first.)
//
// The per-example function sees one signal (a subview of x without the batch
// axis) and the shared filter; kpmap::vmap runs it for every signal in one
// Kokkos kernel, one work item per signal.
//
//   ./04_vmap            (one device; see 05 for many)

#include <kpmap/kpmap.hpp>

#include <Kokkos_Core.hpp>

#include "correlate1d.hpp"  // Correlate1D: y(i) = sum_k w(k) x(i + k), one example

#include <array>
#include <cstdio>

int correlate_batch(kpmap::Runtime&) {
  const std::size_t batch = 8, n = 32, taps = 3;
  // x(b, i) = b i + 1, and the filter w = [1, 2, 1], made on the device.
  Kokkos::View<double**> x("x", batch, n);
  Kokkos::View<double*> w("w", taps);
  Kokkos::parallel_for(
      "04_vmap::signals", kpmap::row_major_range<2>({0, 0}, {batch, n}),
      KOKKOS_LAMBDA(std::size_t b, std::size_t i) { x(b, i) = double(b * i + 1); });
  Kokkos::parallel_for(
      "04_vmap::filter", taps, KOKKOS_LAMBDA(std::size_t k) { w(k) = k == 1 ? 2.0 : 1.0; });

  // in_axes=(0, None), out_axes=0 (JAX's default): the call returns the
  // output, (batch, n - taps + 1) as Correlate1D::shape says.
  const auto y = kpmap::vmap(Correlate1D{}, kpmap::in_axes(kpmap::batched, kpmap::broadcast),
                             kpmap::returns<double*>())(x, w);

  // The same, written in place into an output made once (a loop that must
  // not allocate calls it so): out_axes, and the output as the last argument.
  Kokkos::View<double**> y_again("y_again", batch, n - taps + 1);
  auto correlate = kpmap::vmap(Correlate1D{}, kpmap::in_axes(kpmap::batched, kpmap::broadcast),
                               kpmap::out_axes(kpmap::batched));
  correlate(x, w, y_again);

  // Checked against the closed form: sum_k w(k) (b (i + k) + 1) = 4 b (i + 1) + 4.
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
  auto h_again = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y_again);
  int wrong = h.extent(1) != n - taps + 1;
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t i = 0; i < h.extent(1); ++i)
      wrong += h(b, i) != 4.0 * b * (i + 1) + 4 || h_again(b, i) != h(b, i);
  if (kpmap::axis_index("devices") == 0) {
    std::printf("y(3, 0..3) = %g %g %g %g; %zu x %zu outputs %s 4 b (i + 1) + 4\n", h(3, 0),
                h(3, 1), h(3, 2), h(3, 3), batch, h.extent(1), wrong ? "differ from" : "equal");
  }
  return kpmap::psum(wrong, "devices") == 0 ? 0 : 1;
}

int main(int argc, char** argv) { return kpmap::run(argc, argv, correlate_batch); }
