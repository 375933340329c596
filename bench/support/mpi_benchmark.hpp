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

}  // namespace kpmap::bench
