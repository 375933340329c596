// SPDX-License-Identifier: BSD-3-Clause
// 03 psum and pmean over a named axis, and over one axis of a 2-D mesh:
//
//   jax.lax.psum(x, "devices"), jax.lax.pmean(x, "devices")
//   Mesh(devices, ("data", "model")) and psum(x, "model")
//
//   mpiexec -n 3 ./03_psum_pmean

#include <kpmap/kpmap.hpp>

#include <Kokkos_Core.hpp>

#include <cstdio>

int reductions(kpmap::Runtime&) {
  const int n = kpmap::axis_size("devices");
  const int me = kpmap::axis_index("devices");

  // Each device holds a vector of 4 copies of (its index + 1).
  Kokkos::View<double*> x("x", 4);
  Kokkos::deep_copy(x, me + 1.0);

  const auto total = kpmap::psum(x, "devices");  // 1 + 2 + ... + n, in every element
  const auto mean = kpmap::pmean(x, "devices");  // (n + 1) / 2

  // A 2-D mesh: MPI_Dims_create picks the shape ("data" x "model"); ranks are
  // numbered row-major, so device r sits at data = r / model, model = r % model.
  kpmap::Mesh mesh({{"data", 0}, {"model", 0}});
  const int model = mesh.axis_size("model");
  const int row = me / model;
  const auto row_total = kpmap::psum(x, mesh.axis("model"));  // over one row of the mesh

  // Checked against closed forms: n (n + 1) / 2, (n + 1) / 2, and the sum of
  // r + 1 over the ranks r of this row.
  double row_expect = 0;
  for (int r = row * model; r < (row + 1) * model; ++r) row_expect += r + 1;
  auto t = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), total);
  auto m = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), mean);
  auto rt = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), row_total);
  const bool ok =
      t(0) == n * (n + 1) / 2.0 && t(3) == t(0) && m(0) == (n + 1) / 2.0 && rt(0) == row_expect;
  if (me == 0) {
    std::printf("psum = %g, pmean = %g over %d devices; mesh %d x %d, psum over row 0 = %g: %s\n",
                t(0), m(0), n, mesh.axis_size("data"), model, rt(0), ok ? "OK" : "WRONG");
  }
  return kpmap::psum(ok ? 0 : 1, "devices") == 0 ? 0 : 1;
}

int main(int argc, char** argv) { return kpmap::run(argc, argv, reductions); }
