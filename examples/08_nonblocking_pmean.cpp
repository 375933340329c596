// SPDX-License-Identifier: BSD-3-Clause
// 08 a non-blocking pmean overlapped with computation.
//
// kpmap::ipmean starts the reduction and returns a Request at once; the
// device computes something else meanwhile (in training: the backward pass of
// the layers before), and wait() completes the mean in place.
//
//   mpiexec -n 3 ./08_nonblocking_pmean

#include <kpmap/kpmap.hpp>

#include <Kokkos_Core.hpp>

#include <cstdio>

int overlap(kpmap::Runtime&) {
  const int n = kpmap::axis_size("devices");
  const int me = kpmap::axis_index("devices");
  const std::size_t size = 1 << 20;

  // A "gradient" of 1M numbers: device me holds me + 1 everywhere.
  Kokkos::View<double*> grad("grad", size);
  Kokkos::deep_copy(grad, me + 1.0);

  kpmap::Request pending = kpmap::ipmean(grad, "devices");  // started, not finished

  // Independent work while the messages move: sum of k^2 for k < 1000.
  double squares = 0;
  Kokkos::parallel_reduce(
      "08_nonblocking_pmean::other_work", 1000,
      KOKKOS_LAMBDA(long k, double& s) { s += double(k) * double(k); }, squares);

  pending.wait();  // grad now holds the mean over the devices

  // Checked against closed forms: mean of 1..n is (n + 1) / 2 in every
  // element; sum of k^2 for k < m is (m - 1) m (2m - 1) / 6.
  double wrong = 0;
  const double mean = (n + 1) / 2.0;
  Kokkos::parallel_reduce(
      "08_nonblocking_pmean::check", size,
      KOKKOS_LAMBDA(std::size_t i, double& w) { w += grad(i) != mean; }, wrong);
  const bool ok = wrong == 0 && squares == 999.0 * 1000.0 * 1999.0 / 6.0;
  if (me == 0) {
    std::printf("pmean of 1..%d = %g in all %zu elements; meanwhile sum of squares = %.0f: %s\n", n,
                mean, size, squares, ok ? "OK" : "WRONG");
  }
  return kpmap::psum(ok ? 0 : 1, "devices") == 0 ? 0 : 1;
}

int main(int argc, char** argv) { return kpmap::run(argc, argv, overlap); }
