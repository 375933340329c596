// SPDX-License-Identifier: BSD-3-Clause
// kpmap-bench-vmap: vmap against the same computation written by hand as one
// kernel, paired in every iteration (slowest rank).
//
//   mpiexec -n 2 kpmap-bench-vmap
//
// - BM_vmap_conv1d/B/N: a 1-D "valid" cross-correlation (9 taps) of each of
//   B signals of N samples (Correlate1D, the per-example function of
//   docs/pmap.md and its tests), mapped with kpmap::vmap (one work item per
//   signal), against a hand-made parallel_for over the signals with the same
//   loops.
// - BM_vmap_team_conv1d/B/N: the same with kpmap::per_team (one team per
//   signal, its outputs over the team's threads) against a hand-made
//   TeamPolicy kernel.
// Counters: `hand_us`, the hand kernel's mean time, and `speed_of_hand`, the
// hand kernel's time over vmap's (1: as fast; the target is at least 0.9).

#include "correlate1d.hpp"  // examples/
#include "support/mpi_benchmark.hpp"

#include <kpmap/runtime/runtime.hpp>
#include <kpmap/spmd/vmap.hpp>

#include <Kokkos_Core.hpp>

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
constexpr std::size_t taps = 9;

struct TeamConv1D {
  template <class Member, class X, class W, class Y>
  KOKKOS_FUNCTION void operator()(const Member& team, const X& x, const W& w, const Y& y) const {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, y.extent(0)), [&](std::size_t i) {
      double s = 0;
      for (std::size_t k = 0; k < w.extent(0); ++k) s += w(k) * x(i + k);
      y(i) = s;
    });
  }
};

struct Data {
  Kokkos::View<double**, Mem> x, y;
  Kokkos::View<double*, Mem> w;
  Data(std::size_t batch, std::size_t n)
      : x("bench::x", batch, n), y("bench::y", batch, n - taps + 1), w("bench::w", taps) {
    Kokkos::deep_copy(x, 0.5);
    Kokkos::deep_copy(w, 0.25);
  }
};

void report(benchmark::State& state) {
  const double ratio = state.counters["ratio"];  // vmap time / hand time
  state.counters["hand_us"] = state.counters["reference_us"];
  state.counters["speed_of_hand"] = ratio > 0 ? 1.0 / ratio : 0;
}

void BM_vmap_conv1d(benchmark::State& state) {
  auto& rt = kpmap::Runtime::current();
  const Data d(static_cast<std::size_t>(state.range(0)), static_cast<std::size_t>(state.range(1)));
  auto conv = kpmap::vmap(Correlate1D{}, kpmap::in_axes(kpmap::batched, kpmap::broadcast),
                          kpmap::out_axes(kpmap::batched));
  const auto x = d.x;
  const auto y = d.y;
  const auto w = d.w;
  kpmap::bench::run_paired(
      state, rt.comm(),
      [&] {
        Kokkos::parallel_for(
            "bench::hand_conv1d", Kokkos::RangePolicy<Exec>(0, x.extent(0)),
            KOKKOS_LAMBDA(std::size_t b) {
              for (std::size_t i = 0; i < y.extent(1); ++i) {
                double s = 0;
                for (std::size_t k = 0; k < w.extent(0); ++k) s += w(k) * x(b, i + k);
                y(b, i) = s;
              }
            });
        Exec().fence();
      },
      [&] {
        conv(x, w, y);
        Exec().fence();
      });
  report(state);
}

void BM_vmap_team_conv1d(benchmark::State& state) {
  auto& rt = kpmap::Runtime::current();
  const Data d(static_cast<std::size_t>(state.range(0)), static_cast<std::size_t>(state.range(1)));
  auto conv =
      kpmap::vmap(kpmap::per_team, TeamConv1D{}, kpmap::in_axes(kpmap::batched, kpmap::broadcast),
                  kpmap::out_axes(kpmap::batched));
  const auto x = d.x;
  const auto y = d.y;
  const auto w = d.w;
  using Policy = Kokkos::TeamPolicy<Exec>;
  kpmap::bench::run_paired(
      state, rt.comm(),
      [&] {
        Kokkos::parallel_for(
            "bench::hand_team_conv1d", Policy(static_cast<int>(x.extent(0)), Kokkos::AUTO),
            KOKKOS_LAMBDA(const Policy::member_type& team) {
              const std::size_t b = static_cast<std::size_t>(team.league_rank());
              Kokkos::parallel_for(Kokkos::TeamThreadRange(team, y.extent(1)), [&](std::size_t i) {
                double s = 0;
                for (std::size_t k = 0; k < w.extent(0); ++k) s += w(k) * x(b, i + k);
                y(b, i) = s;
              });
            });
        Exec().fence();
      },
      [&] {
        conv(x, w, y);
        Exec().fence();
      });
  report(state);
}

}  // namespace

BENCHMARK(BM_vmap_conv1d)
    ->Args({256, 4096})
    ->Args({4096, 256})
    ->Args({64, 65536})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_vmap_team_conv1d)
    ->Args({256, 4096})
    ->Args({64, 65536})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
