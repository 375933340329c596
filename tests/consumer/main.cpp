// SPDX-License-Identifier: BSD-3-Clause
// Uses the installed kpmap: the runtime, a Kokkos kernel and an MPI reduction.
#include <kpmap/kpmap.hpp>

#include <Kokkos_Core.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  return kpmap::run(argc, argv, [](kpmap::Runtime& rt) {
    const int n = 1000;
    double local = 0.0;
    Kokkos::parallel_reduce(
        "consumer::sum", Kokkos::RangePolicy<>(0, n),
        KOKKOS_LAMBDA(int i, double& acc) { acc += i; }, local);
    double global = 0.0;
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, rt.world());
    // Each rank sums 0..n-1, so the total is size * n(n-1)/2.
    const double expected = rt.size() * 0.5 * n * (n - 1);
    if (rt.rank() == 0) {
      std::printf("consumer: kpmap %s, sum %.0f, expected %.0f\n", kpmap::version_string, global,
                  expected);
    }
    return global == expected ? 0 : 1;
  });
}
