// kpmap-bench-heat: kpmap-heat's kernels and iterations, slowest rank, each
// paired with a STREAM-style copy of the same number of cells in the same run.
//
//   mpiexec -n 1 kpmap-bench-heat --benchmark_filter=kernel
//   mpiexec -n 2 kpmap-bench-heat --benchmark_filter=cg_iteration/2/500
//
// Arguments: D (2 or 3 dimensions) and N (global cells per dimension, so
// N^D cells in all, split over the ranks as kpmap-heat splits them), on
// TeaLeaf's benchmark states.
// - BM_kernel/D/N/K: one kernel over the owned cells, no communication:
//   K = 0 the operator (w = A p, with p.w), 1 r -= a w (with r.r),
//   2 x += a p, p = r + b p, 3 an explicit FTCS step.
// - BM_cg_iteration/D/N: one CG iteration as the solver runs it: the operator
//   with the halo exchange overlapped, two global dot products, the updates.
// - BM_explicit_step/D/N: one explicit step: copy, exchange, stencil.
// Counters: `cells_per_s` (global cells / time); `GBps`, the effective
// bandwidth (bytes the kernels must move: each array read or written once,
// over all ranks / time); `copy_GBps` (2 x 8 bytes a cell / copy time,
// STREAM's convention); `of_copy` = GBps / copy_GBps; `halo_share` and
// `collectives_share`, the part of rank 0's time in halo exchanges and in
// global sums.

#include "support/mpi_benchmark.hpp"

#include <kpmap/collectives.hpp>
#include <kpmap/halo.hpp>
#include <kpmap/runtime.hpp>
#include <kpmap/sim/config.hpp>
#include <kpmap/sim/operator.hpp>
#include <kpmap/sim/setup.hpp>
#include <kpmap/sim/stencil.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <memory>
#include <string>

namespace {

namespace sim = kpmap::sim;
using sim::Exec;
using sim::ScalarField;

// Bytes a kernel must move per owned cell (doubles read or written once).
double kernel_bytes(int kind, bool three) {
  const double coefficient_arrays = three ? 3 : 2;
  switch (kind) {
    case 0:
      return 8 * (1 + coefficient_arrays + 1);  // p, ax, ay (, az) in; w out
    case 1:
      return 8 * 3;  // r, w in; r out
    case 2:
      return 8 * 5;  // x, p, r in; x, p out
    default:
      return 8 * (1 + coefficient_arrays + 1);  // x_old, ax, ay (, az) in; x out
  }
}

// TeaLeaf's benchmark problem on an N^D grid, with the fields a CG iteration uses.
struct Problem {
  sim::HeatConfig config;
  std::unique_ptr<kpmap::CartesianLayout> layout;
  std::unique_ptr<sim::HeatOperator> op;
  ScalarField density, energy, x, b, r, p, w;
  std::unique_ptr<kpmap::HaloExchange<double, Exec>> halo_p;
  Kokkos::View<double*, Exec::memory_space> copy_src, copy_dst;
  double rro = 0.0;
  double rr_start = 0.0;
  sim::Timings timings;
  Exec exec;  // every kernel goes to this one instance, as in sim::Simulation

  Problem(int dims, std::size_t n) {
    config.ndim = dims;
    for (int d = 0; d < dims; ++d) {
      config.cells[d] = n;
      config.upper[d] = 10.0;
    }
    sim::State background;
    background.density = 100.0;
    background.energy = 0.0001;
    sim::State hot;
    hot.density = 0.1;
    hot.energy = 25.0;
    hot.lower = {0.0, 1.0, 0.0};
    hot.upper = {1.0, 2.0, dims == 3 ? 1.0 : 0.0};
    sim::State strip = hot;
    strip.energy = 0.1;
    strip.lower = {1.0, 1.0, 0.0};
    strip.upper = {6.0, 2.0, dims == 3 ? 6.0 : 0.0};
    config.states = {background, hot, strip};
    config.dt = 0.004;
    layout = std::make_unique<kpmap::CartesianLayout>(
        std::vector<std::size_t>(config.cells.begin(), config.cells.begin() + dims), 1);
    op = std::make_unique<sim::HeatOperator>(*layout, sim::Preconditioner::none, exec);
    density = layout->allocate<double>("bench::density");
    energy = layout->allocate<double>("bench::energy");
    x = layout->allocate<double>("bench::x");
    b = layout->allocate<double>("bench::b");
    r = layout->allocate<double>("bench::r");
    p = layout->allocate<double>("bench::p");
    w = layout->allocate<double>("bench::w");
    sim::generate_states(exec, *layout, config, density, energy);
    kpmap::HaloExchange<double, Exec>(*layout, {density}).exchange(exec);
    std::array<double, 3> h{1, 1, 1};
    for (int d = 0; d < dims; ++d) h[d] = config.spacing(d);
    op->assemble(density, config.dt, h, config.solver.coefficient);
    halo_p =
        std::make_unique<kpmap::HaloExchange<double, Exec>>(*layout, std::vector<ScalarField>{p});
    copy_src = Kokkos::View<double*, Exec::memory_space>("bench::copy_src", layout->local_count());
    copy_dst = Kokkos::View<double*, Exec::memory_space>("bench::copy_dst", layout->local_count());
    Kokkos::deep_copy(copy_src, 1.0);
    restart_cg();
  }

  // x = b = density x energy, r = b - A x with x = b / 2, p = r.
  void restart_cg() {
    const auto owned = layout->interior();
    const auto rho = density;
    const auto e = energy;
    const auto xx = x;
    const auto bb = b;
    sim::for_cells(exec, "bench::init", owned, Init{rho, e, xx, bb});
    kpmap::HaloExchange<double, Exec>(*layout, {x}).exchange(exec);
    op->visit([&](auto s) {
      constexpr bool three = std::is_same_v<decltype(s), sim::Stencil<true>>;
      rro = kpmap::psum(sim::reduce_cells<double>(exec, "bench::residual", owned,
                                                  sim::kernels::Residual<three>{s, x, b, r}),
                        "devices");
    });
    sim::for_cells(exec, "bench::init_p", owned, sim::kernels::Copy{p, r});
    rr_start = rro;
  }

  struct Init {
    ScalarField rho, e, x, b;
    KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i) const {
      b(k, j, i) = rho(k, j, i) * e(k, j, i);
      x(k, j, i) = 0.5 * b(k, j, i);
    }
  };

  void copy() {
    const auto src = copy_src;
    const auto dst = copy_dst;
    Kokkos::parallel_for("bench::stream_copy", Kokkos::RangePolicy<Exec>(exec, 0, src.size()),
                         Copy1D{dst, src});
    exec.fence();
  }
  struct Copy1D {
    Kokkos::View<double*, Exec::memory_space> dst, src;
    KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const { dst(i) = src(i); }
  };

  // One kernel of a CG iteration (or the explicit stencil), no communication.
  void kernel(int kind) {
    const auto owned = layout->interior();
    op->visit([&](auto s) {
      constexpr bool three = std::is_same_v<decltype(s), sim::Stencil<true>>;
      switch (kind) {
        case 0:
          sim::reduce_cells<double>(exec, "bench::matvec", owned,
                                    sim::kernels::MatvecDot<three>{s, p, w});
          break;
        case 1:
          sim::reduce_cells<double>(exec, "bench::update_r", owned,
                                    sim::kernels::UpdateR{r, w, r, {}, 1e-9, false});
          break;
        case 2:
          sim::for_cells(exec, "bench::update_xp", owned,
                         sim::kernels::UpdateXP{x, p, r, 1e-9, 0.5});
          break;
        default:
          sim::for_cells(exec, "bench::explicit", owned,
                         sim::kernels::ExplicitStep<three>{s, w, x});
      }
    });
    exec.fence();
  }

  double global_sum(double v) {
    const double t0 = MPI_Wtime();
    const double g = kpmap::psum(v, "devices");
    timings.collectives_s += MPI_Wtime() - t0;
    return g;
  }

  // One CG iteration as sim::LinearSolver runs it (no preconditioner).
  void cg_iteration() {
    const auto owned = layout->interior();
    const double pw = global_sum(op->visit([&](auto s) {
      constexpr bool three = std::is_same_v<decltype(s), sim::Stencil<true>>;
      return sim::overlapped_reduce(exec, "bench::cg::matvec", *layout,
                                    sim::kernels::MatvecDot<three>{s, p, w}, *halo_p, timings);
    }));
    const double alpha = rro / pw;
    const double rrn = global_sum(sim::reduce_cells<double>(
        exec, "bench::cg::update_r", owned, sim::kernels::UpdateR{r, w, r, {}, alpha, false}));
    sim::for_cells(exec, "bench::cg::update_xp", owned,
                   sim::kernels::UpdateXP{x, p, r, alpha, rrn / rro});
    exec.fence();
    rro = rrn;
    // Converged far below any tolerance: start again before values go subnormal.
    if (!(rro > 1e-40 * rr_start)) restart_cg();
  }

  // One explicit step: x_old = x, exchange x_old's halo, then the stencil.
  void explicit_step() {
    const auto owned = layout->interior();
    sim::for_cells(exec, "bench::explicit::copy", owned, sim::kernels::Copy{p, x});
    op->visit([&](auto s) {
      constexpr bool three = std::is_same_v<decltype(s), sim::Stencil<true>>;
      sim::overlapped_for(exec, "bench::explicit::step", *layout,
                          sim::kernels::ExplicitStep<three>{s, x, p}, *halo_p, timings);
    });
    exec.fence();
  }
};

std::unique_ptr<Problem>& problem_for(int dims, std::size_t n) {
  static std::unique_ptr<Problem> cached;
  static int cached_dims = 0;
  static std::size_t cached_n = 0;
  if (!cached || cached_dims != dims || cached_n != n) {
    cached.reset();
    cached = std::make_unique<Problem>(dims, n);
    cached_dims = dims;
    cached_n = n;
    kpmap::Runtime::at_finalize([] { cached.reset(); });
  }
  return cached;
}

void report(benchmark::State& state, const Problem& pb, double bytes_per_cell, double busy_s) {
  const double cells = double(pb.layout->global_count());
  const double ratio = state.counters["ratio"];  // body time / copy time
  const double t_copy = state.counters["reference_us"] * 1e-6;
  const double t_body = ratio * t_copy;
  state.counters["cells_per_s"] = t_body > 0 ? cells / t_body : 0;
  state.counters["GBps"] = t_body > 0 ? cells * bytes_per_cell / t_body / 1e9 : 0;
  state.counters["copy_GBps"] = t_copy > 0 ? cells * 16.0 / t_copy / 1e9 : 0;
  state.counters["of_copy"] =
      state.counters["copy_GBps"] > 0 ? state.counters["GBps"] / state.counters["copy_GBps"] : 0;
  if (busy_s > 0) {
    state.counters["halo_share"] = pb.timings.halo_s / busy_s;
    state.counters["collectives_share"] = pb.timings.collectives_s / busy_s;
  }
}

void BM_kernel(benchmark::State& state) {
  const int dims = int(state.range(0));
  auto& pb = *problem_for(dims, std::size_t(state.range(1)));
  const int kind = int(state.range(2));
  kpmap::bench::run_paired(
      state, pb.layout->comm(), [&] { pb.copy(); }, [&] { pb.kernel(kind); });
  report(state, pb, kernel_bytes(kind, dims == 3), 0);
}

void BM_cg_iteration(benchmark::State& state) {
  const int dims = int(state.range(0));
  auto& pb = *problem_for(dims, std::size_t(state.range(1)));
  pb.timings = {};
  double busy = 0;
  kpmap::bench::run_paired(
      state, pb.layout->comm(), [&] { pb.copy(); },
      [&] {
        const double t0 = MPI_Wtime();
        pb.cg_iteration();
        busy += MPI_Wtime() - t0;
      });
  report(state, pb, kernel_bytes(0, dims == 3) + kernel_bytes(1, false) + kernel_bytes(2, false),
         busy);
}

void BM_explicit_step(benchmark::State& state) {
  const int dims = int(state.range(0));
  auto& pb = *problem_for(dims, std::size_t(state.range(1)));
  pb.timings = {};
  double busy = 0;
  kpmap::bench::run_paired(
      state, pb.layout->comm(), [&] { pb.copy(); },
      [&] {
        const double t0 = MPI_Wtime();
        pb.explicit_step();
        busy += MPI_Wtime() - t0;
      });
  report(state, pb, 16.0 + kernel_bytes(3, dims == 3), busy);
}

}  // namespace

// 2-D: TeaLeaf's tea_bm_3 size (500^2, in cache) and 4096^2 (128 MiB a field);
// 3-D: 64^3 and 256^3 (128 MiB a field).
BENCHMARK(BM_kernel)
    ->ArgsProduct({{2}, {500, 4096}, {0, 1, 2, 3}})
    ->ArgsProduct({{3}, {64, 256}, {0, 1, 2, 3}})
    ->UseManualTime();
BENCHMARK(BM_cg_iteration)
    ->Args({2, 500})
    ->Args({2, 4096})
    ->Args({3, 64})
    ->Args({3, 256})
    ->UseManualTime();
BENCHMARK(BM_explicit_step)
    ->Args({2, 500})
    ->Args({2, 4096})
    ->Args({3, 64})
    ->Args({3, 256})
    ->UseManualTime();
