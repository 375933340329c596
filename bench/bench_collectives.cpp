// SPDX-License-Identifier: BSD-3-Clause
// kpmap-bench-collectives: kpmap's collectives against raw MPI on the same
// buffers in the same run; times are the slowest rank's.
//
//   mpiexec -n 2 kpmap-bench-collectives --benchmark_out=collectives.json
//
// BM_psum/<bytes> vs BM_mpi_allreduce/<bytes>: the layer's overhead.
// BM_pmean_fused/100 vs BM_pmean_unfused/100: fusion of 100 Views of 1024 doubles.
// BM_psum_staged/<bytes>: the pinned-staging path forced on host memory, vs BM_psum.
// BM_paired_*: the same comparisons interleaved call by call in one loop, so
// that the "ratio" counter is immune to the machine's drift; these are the
// figures quoted in docs/performance.md.
// BM_paired_pmax_vs_mpi/<bytes>: pmax, whose operation on floating point is
// kpmap's own (a NaN on any rank gives NaN), against MPI_Allreduce(MPI_MAX).
// BM_overlap_ipsum/<bytes>: ipsum started, a kernel's compute in 8 parts (each
// followed by Request::test(), MPI's chance to progress), then wait; against
// the compute alone, psum alone and ipsum started and waited for at once, in
// the same iteration, each first in turn. Counters: compute_us, collective_us
// (psum), started_us (ipsum then wait), together_us, and hidden: the share of
// the shorter of compute and psum that the overlap hid, (compute + collective
// - together) / min(...), below 0 where together costs more than both. Shows
// what a network gives that ranks sharing one host's cores cannot: run it
// across hosts (docs/cluster.md).

#include "support/mpi_benchmark.hpp"

#include <kpmap/collectives/collectives.hpp>
#include <kpmap/runtime/runtime.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using kpmap::bench::run_timed;

MPI_Comm devices_comm() { return kpmap::Mesh::world().axis("devices").comm(); }

Kokkos::View<double*, Exec> buffer(std::size_t bytes) {
  Kokkos::View<double*, Exec> v("bench::buffer", std::max<std::size_t>(1, bytes / 8));
  Kokkos::deep_copy(v, 1.0);
  return v;
}

void set_bytes(benchmark::State& state, std::size_t bytes) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
  state.counters["bytes"] = static_cast<double>(bytes);
}

void BM_psum(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  auto v = buffer(bytes);
  run_timed(state, devices_comm(), [&] { kpmap::psum_inplace(v, "devices"); });
  set_bytes(state, bytes);
}

void BM_mpi_allreduce(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  auto v = buffer(bytes);
  MPI_Comm comm = devices_comm();
  run_timed(state, comm, [&] {
    Exec().fence();
    MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_SUM, comm);
  });
  set_bytes(state, bytes);
}

void BM_psum_staged(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  auto v = buffer(bytes);
  auto& rt = kpmap::Runtime::current();
  const bool saved = rt.gpu_awareness().staging_always;
  rt.set_staging_always(true);
  run_timed(state, devices_comm(), [&] { kpmap::psum_inplace(v, "devices"); });
  rt.set_staging_always(saved);
  set_bytes(state, bytes);
}

std::vector<Kokkos::View<double*, Exec>> small_views(int count) {
  std::vector<Kokkos::View<double*, Exec>> views;
  for (int i = 0; i < count; ++i) {
    views.emplace_back("bench::small", 1024);
    Kokkos::deep_copy(views.back(), 1.0);
  }
  return views;
}

void BM_pmean_fused(benchmark::State& state) {
  auto views = small_views(static_cast<int>(state.range(0)));
  run_timed(state, devices_comm(), [&] { kpmap::pmean_inplace(views, "devices"); });
  set_bytes(state, views.size() * 1024 * sizeof(double));
}

void BM_pmean_unfused(benchmark::State& state) {
  auto views = small_views(static_cast<int>(state.range(0)));
  run_timed(state, devices_comm(), [&] {
    for (auto& v : views) kpmap::pmean_inplace(v, "devices");
  });
  set_bytes(state, views.size() * 1024 * sizeof(double));
}

// The MPI floor under BM_pmean_unfused: 100 raw MPI_Allreduce calls, one per View.
void BM_mpi_allreduce_each(benchmark::State& state) {
  auto views = small_views(static_cast<int>(state.range(0)));
  MPI_Comm comm = devices_comm();
  run_timed(state, comm, [&] {
    for (auto& v : views) {
      MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_SUM, comm);
    }
  });
  set_bytes(state, views.size() * 1024 * sizeof(double));
}

// kpmap's in-place reduction `call` of a buffer against MPI_Allreduce with
// `op` on another of the same size, interleaved call by call.
template <class Call>
void paired_against_allreduce(benchmark::State& state, MPI_Op op, Call&& call) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  auto a = buffer(bytes);
  auto b = buffer(bytes);
  MPI_Comm comm = devices_comm();
  kpmap::bench::run_paired(
      state, comm,
      [&] {
        Exec().fence();
        MPI_Allreduce(MPI_IN_PLACE, a.data(), static_cast<int>(a.size()), MPI_DOUBLE, op, comm);
      },
      [&] { call(b); });
  set_bytes(state, bytes);
}

void BM_paired_psum_vs_mpi(benchmark::State& state) {
  paired_against_allreduce(state, MPI_SUM,
                           [](const auto& b) { kpmap::psum_inplace(b, "devices"); });
}

// pmax's own NaN-propagating operation against MPI's MPI_MAX (which MPI may
// run in its own vector code).
void BM_paired_pmax_vs_mpi(benchmark::State& state) {
  paired_against_allreduce(state, MPI_MAX,
                           [](const auto& b) { kpmap::pmax_inplace(b, "devices"); });
}

// The same with the execution space instance given and the axis resolved
// once, as a solver's inner loop calls it: no fence of every instance (the
// form without an instance makes one, Kokkos::fence), no lookup of the name.
void BM_paired_psum_on_instance_vs_mpi(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  auto a = buffer(bytes);
  auto b = buffer(bytes);
  MPI_Comm comm = devices_comm();
  const kpmap::Axis& axis = kpmap::Mesh::current().axis("devices");
  const Exec exec;
  kpmap::bench::run_paired(
      state, comm,
      [&] {
        exec.fence();
        MPI_Allreduce(MPI_IN_PLACE, a.data(), static_cast<int>(a.size()), MPI_DOUBLE, MPI_SUM,
                      comm);
      },
      [&] { kpmap::psum_inplace(exec, b, axis); });
  set_bytes(state, bytes);
}

void BM_paired_staged_vs_direct(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  auto a = buffer(bytes);
  auto b = buffer(bytes);
  auto& rt = kpmap::Runtime::current();
  const bool saved = rt.gpu_awareness().staging_always;
  kpmap::bench::run_paired(
      state, devices_comm(),
      [&] {
        rt.set_staging_always(false);
        kpmap::psum_inplace(a, "devices");
      },
      [&] {
        rt.set_staging_always(true);
        kpmap::psum_inplace(b, "devices");
      });
  rt.set_staging_always(saved);
  set_bytes(state, bytes);
}

// y = 0.999 y + x over n doubles, `parts` kernels of n / parts: a stand-in for
// a step's work, sized to take about as long as the collective it hides.
struct Axpy {
  Kokkos::View<double*, Exec> y, x;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const { y(i) = 0.999 * y(i) + x(i); }
};

void BM_overlap_ipsum(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const auto n = static_cast<std::size_t>(state.range(1));
  constexpr std::size_t parts = 8;
  auto v = buffer(bytes);
  Kokkos::View<double*, Exec> y("bench::overlap_y", n), x("bench::overlap_x", n);
  Kokkos::deep_copy(x, 1e-3);
  const Exec exec;
  const kpmap::Axis& axis = kpmap::Mesh::current().axis("devices");
  MPI_Comm comm = devices_comm();
  auto compute = [&](kpmap::Request* r) {
    for (std::size_t p = 0; p < parts; ++p) {
      Kokkos::parallel_for("bench::overlap_compute",
                           Kokkos::RangePolicy<Exec>(exec, p * n / parts, (p + 1) * n / parts),
                           Axpy{y, x});
      exec.fence();
      if (r != nullptr) r->test();
    }
  };
  double sums[4] = {0, 0, 0, 0};
  int flip = 0;
  for (auto _ : state) {
    double t[4];
    for (int k = 0; k < 4; ++k) {
      const int which = (k + flip) % 4;  // each goes first in turn
      MPI_Barrier(comm);
      const double t0 = MPI_Wtime();
      if (which == 0) {
        compute(nullptr);
      } else if (which == 1) {
        kpmap::psum_inplace(exec, v, axis);
      } else if (which == 3) {
        kpmap::ipsum(exec, v, axis).wait();
      } else {
        kpmap::Request r = kpmap::ipsum(exec, v, axis);
        compute(&r);
        r.wait();
      }
      t[which] = MPI_Wtime() - t0;
    }
    ++flip;
    MPI_Allreduce(MPI_IN_PLACE, t, 4, MPI_DOUBLE, MPI_MAX, comm);
    for (int i = 0; i < 4; ++i) sums[i] += t[i];
    state.SetIterationTime(t[2]);
  }
  const double iters = std::max(1.0, static_cast<double>(state.iterations()));
  state.counters["compute_us"] = 1e6 * sums[0] / iters;
  state.counters["collective_us"] = 1e6 * sums[1] / iters;
  state.counters["together_us"] = 1e6 * sums[2] / iters;
  state.counters["started_us"] = 1e6 * sums[3] / iters;
  const double shorter = std::min(sums[0], sums[1]);
  state.counters["hidden"] = shorter > 0 ? (sums[0] + sums[1] - sums[2]) / shorter : 0;
  set_bytes(state, bytes);
}

void BM_paired_fused_vs_unfused(benchmark::State& state) {
  auto a = small_views(static_cast<int>(state.range(0)));
  auto b = small_views(static_cast<int>(state.range(0)));
  kpmap::bench::run_paired(
      state, devices_comm(),
      [&] {
        for (auto& v : a) kpmap::pmean_inplace(v, "devices");
      },
      [&] { kpmap::pmean_inplace(b, "devices"); });
  set_bytes(state, b.size() * 1024 * sizeof(double));
}

// 8 B to 64 MiB: 1 to 512 doubles and 1024 and up (the per-call cost and the bandwidth).
void sizes(benchmark::internal::Benchmark* b) {
  for (std::int64_t bytes :
       {std::int64_t(8), std::int64_t(64), std::int64_t(512), std::int64_t(1) << 10,
        std::int64_t(4) << 10, std::int64_t(8) << 10, std::int64_t(64) << 10, std::int64_t(1) << 20,
        std::int64_t(8) << 20, std::int64_t(64) << 20}) {
    b->Arg(bytes);
  }
}

void staged_sizes(benchmark::internal::Benchmark* b) {
  for (std::int64_t bytes : {std::int64_t(1) << 10, std::int64_t(64) << 10, std::int64_t(1) << 20,
                             std::int64_t(8) << 20, std::int64_t(64) << 20}) {
    b->Arg(bytes);
  }
}

}  // namespace

BENCHMARK(BM_mpi_allreduce)->Apply(sizes)->UseManualTime();
BENCHMARK(BM_psum)->Apply(sizes)->UseManualTime();
BENCHMARK(BM_psum_staged)->Apply(staged_sizes)->UseManualTime();
BENCHMARK(BM_mpi_allreduce_each)->Arg(100)->UseManualTime();
BENCHMARK(BM_pmean_unfused)->Arg(100)->UseManualTime();
BENCHMARK(BM_pmean_fused)->Arg(100)->UseManualTime();
BENCHMARK(BM_paired_psum_vs_mpi)->Apply(sizes)->UseManualTime();
BENCHMARK(BM_paired_psum_on_instance_vs_mpi)->Apply(sizes)->UseManualTime();
BENCHMARK(BM_paired_pmax_vs_mpi)->Arg(8)->Arg(64 << 10)->Arg(1 << 20)->UseManualTime();
BENCHMARK(BM_paired_staged_vs_direct)->Apply(staged_sizes)->UseManualTime();
BENCHMARK(BM_paired_fused_vs_unfused)->Arg(100)->UseManualTime();
// (bytes, compute elements): 8 B with a short kernel, 64 KiB and 1 MiB with
// about 2 and 16 ms of compute on one core.
BENCHMARK(BM_overlap_ipsum)
    ->Args({8, 1 << 16})
    ->Args({64 << 10, 1 << 20})
    ->Args({1 << 20, 1 << 23})
    ->UseManualTime();
