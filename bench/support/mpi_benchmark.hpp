// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Helpers for MPI benchmarks: every rank runs the same iterations, and the
// time reported is the slowest rank's.

#include <benchmark/benchmark.h>
#include <mpi.h>

namespace kpmap::bench {

/// Runs `body` once per benchmark iteration on every rank and reports the
/// slowest rank's time (use with ->UseManualTime()). Because every rank sees
/// the same (maximum) time, Google Benchmark picks the same iteration count
/// on every rank and the ranks stay in step.
template <class Body>
void run_timed(benchmark::State& state, MPI_Comm comm, Body&& body) {
  for (auto _ : state) {
    MPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    body();
    double t = MPI_Wtime() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, comm);
    state.SetIterationTime(t);
  }
}

/// Interleaves a reference and a measured operation in every iteration, so
/// that drift in the machine's speed affects both alike. The iteration time
/// is `body`'s (slowest rank); counters give the reference's mean time and the
/// ratio body / reference over the whole run.
template <class Ref, class Body>
void run_paired(benchmark::State& state, MPI_Comm comm, Ref&& reference, Body&& body) {
  double ref_total = 0;
  double body_total = 0;
  int flip = 0;
  for (auto _ : state) {
    double t[2];
    // Alternate which runs first, so neither always finds the caches warm.
    for (int k = 0; k < 2; ++k) {
      const bool ref_now = (k == 0) == (flip % 2 == 0);
      MPI_Barrier(comm);
      const double t0 = MPI_Wtime();
      if (ref_now) {
        reference();
      } else {
        body();
      }
      t[ref_now ? 0 : 1] = MPI_Wtime() - t0;
    }
    ++flip;
    MPI_Allreduce(MPI_IN_PLACE, t, 2, MPI_DOUBLE, MPI_MAX, comm);
    ref_total += t[0];
    body_total += t[1];
    state.SetIterationTime(t[1]);
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["reference_us"] = n > 0 ? 1e6 * ref_total / n : 0;
  state.counters["ratio"] = ref_total > 0 ? body_total / ref_total : 0;
}

}  // namespace kpmap::bench
