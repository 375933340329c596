// SPDX-License-Identifier: BSD-3-Clause
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
// - BM_cg_iteration/D/N/M: iterations of the library's CG-family solver M
//   (0 cg, 5 pipecg, 6 cgsr, 7 fusedcg; sim::make_solver): the time of a solve of
//   `cg_iterations` iterations from the same start; the counters per
//   iteration (the operator with the halo exchange overlapped, the global
//   dot products, the updates; plus a 20th of the solve's first residual and
//   of resetting x; pipecg's residual replacement, every 50 iterations, is
//   not among them).
// - BM_solve/D/N/M: one whole solve to TeaLeaf's tolerance (eps 1e-10) with
//   method M (0 cg, 2 chebyshev, 3 ppcg, 5 pipecg, 6 cgsr, 7 fusedcg), from the same start;
//   counters `iterations` and `ms_per_iteration`.
// - BM_explicit_step/D/N: the library's explicit step (exchange, stencil).
// Counters: `cells_per_s` (global cells / time); `GBps`, the effective
// bandwidth (bytes the kernels must move: each array read or written once,
// over all ranks / time); `copy_GBps` (2 x 8 bytes a cell / copy time,
// STREAM's convention); `of_copy` = GBps / copy_GBps; `halo_share` and
// `collectives_share`, the part of rank 0's time in halo exchanges and in
// global sums.

#include "support/mpi_benchmark.hpp"
#include "support/tea_problem.hpp"

#include <kpmap/collectives/collectives.hpp>
#include <kpmap/grid/halo.hpp>
#include <kpmap/runtime/runtime.hpp>
#include <kpmap/sim/config.hpp>
#include <kpmap/sim/operator.hpp>
#include <kpmap/sim/setup.hpp>
#include <kpmap/sim/solvers/solver.hpp>
#include <kpmap/sim/stencil.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <utility>

namespace {

namespace sim = kpmap::sim;
// The bench runs the simulation on the default execution space.
using Exec = Kokkos::DefaultExecutionSpace;
using Memory = Exec::memory_space;
using ScalarField = sim::CellField<Memory>;

// The kernels of BM_kernel (its third argument).
enum class Kernel { operator_dot = 0, update_r = 1, update_xp = 2, explicit_step = 3 };

// Bytes a kernel must move per owned cell (doubles read or written once).
double kernel_bytes(Kernel kind, bool three) {
  const double coefficient_arrays = three ? 3 : 2;
  switch (kind) {
    case Kernel::operator_dot:
      return 8 * (1 + coefficient_arrays + 1);  // p, ax, ay (, az) in; w out
    case Kernel::update_r:
      return 8 * 3;  // r, w in; r out
    case Kernel::update_xp:
      return 8 * 5;  // x, p, r in; x, p out
    case Kernel::explicit_step:
      break;
  }
  return 8 * (1 + coefficient_arrays + 1);  // x_old, ax, ay (, az) in; x out
}

// Iterations of one timed CG solve in BM_cg_iteration.
constexpr long cg_iterations = 20;

// TeaLeaf's benchmark problem on an N^D grid, with the fields a CG iteration uses.
struct Problem {
  sim::HeatConfig config;
  std::unique_ptr<kpmap::CartesianLayout> layout;
  std::unique_ptr<sim::HeatOperator<Exec>> op;
  ScalarField density, energy, x, b, r, p, w;
  Kokkos::View<double*, Exec::memory_space> copy_src, copy_dst;
  sim::Timings timings;
  Exec exec;  // every kernel goes to this one instance, as in sim::Simulation
  std::unique_ptr<kpmap::Mesh> mesh;  // the axis of the solvers' global sums
  // The library's solvers by (scheme and method, fixed iteration count), built on first use.
  std::map<std::pair<std::string, int>, std::unique_ptr<sim::Solver<Exec>>> solvers;

  Problem(int dims, std::size_t n) : config(kpmap::bench::tea_benchmark(dims, n)) {
    layout = std::make_unique<kpmap::CartesianLayout>(
        std::vector<std::size_t>(config.cells.begin(), config.cells.begin() + dims), 1,
        std::vector<int>{}, MPI_COMM_NULL, kpmap::Rows::aligned);  // as kpmap-heat's
    op = std::make_unique<sim::HeatOperator<Exec>>(*layout, sim::Preconditioner::none, exec);
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
    copy_src = Kokkos::View<double*, Exec::memory_space>("bench::copy_src", layout->local_count());
    copy_dst = Kokkos::View<double*, Exec::memory_space>("bench::copy_dst", layout->local_count());
    Kokkos::deep_copy(copy_src, 1.0);
    mesh = std::make_unique<kpmap::Mesh>(layout->comm(), "blocks");
    reset();
  }

  // b = density x energy, x = b / 2 (every solve starts from here), p = r = b.
  void reset() {
    const auto owned = layout->interior();
    sim::for_cells(exec, "bench::reset", owned, Init{density, energy, x, b});
    sim::for_cells(exec, "bench::init_p", owned, sim::kernels::Copy<Memory>{p, b});
    sim::for_cells(exec, "bench::init_r", owned, sim::kernels::Copy<Memory>{r, b});
  }

  // The library's solver for `scheme` and `method`: x from b. A CG solve for
  // BM_cg_iteration stops after cg_iterations (eps 0: never converged).
  sim::Solver<Exec>& solver(sim::Scheme scheme, const std::string& method, bool fixed_iterations) {
    auto& s = solvers[{std::to_string(int(scheme)) + method, fixed_iterations ? 1 : 0}];
    if (!s) {
      sim::SolverOptions options = config.solver;
      options.method = method;
      if (fixed_iterations) {
        options.eps = 0.0;
        options.max_iters = cg_iterations;
      } else {
        options.max_iters = 100000;
      }
      s = sim::make_solver(
          scheme, sim::SolverContext<Exec>{*layout, mesh->axis("blocks"), options, x, b, timings});
    }
    return *s;
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
  void kernel(Kernel kind) {
    const auto owned = layout->interior();
    op->visit([&](auto s) {
      constexpr bool three = decltype(s)::three_d;
      switch (kind) {
        case Kernel::operator_dot:
          sim::reduce_cells<double>(exec, "bench::matvec", owned,
                                    sim::kernels::MatvecDot<three, Memory>{s, p, w});
          break;
        case Kernel::update_r:
          sim::reduce_cells<double>(exec, "bench::update_r", owned,
                                    sim::kernels::UpdateR<false, Memory>{r, w, r, {}, 1e-9});
          break;
        case Kernel::update_xp:
          sim::for_cells(exec, "bench::update_xp", owned,
                         sim::kernels::UpdateXP<Memory>{x, p, r, 1e-9, 0.5});
          break;
        case Kernel::explicit_step:
          sim::for_cells(exec, "bench::explicit", owned,
                         sim::kernels::ExplicitStep<three, Memory>{s, w, x});
      }
    });
    exec.fence();
  }

  // A solve from the same start every time: x = b / 2, then the library's solver.
  sim::SolveResult solve(sim::Scheme scheme, const std::string& method, bool fixed_iterations) {
    sim::for_cells(exec, "bench::reset_x", layout->interior(), ResetX{x, b});
    const sim::SolveResult res = solver(scheme, method, fixed_iterations).solve(*op);
    exec.fence();
    return res;
  }
  struct ResetX {
    ScalarField x, b;
    KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i) const {
      x(k, j, i) = 0.5 * b(k, j, i);
    }
  };
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
  // The bytes the body moves (every rank's), and the time they take at the
  // in-run copy's rate: the body's memory-bound floor; of_copy is floor / time.
  state.counters["bytes"] = cells * bytes_per_cell;
  state.counters["copy_floor_us"] = state.counters["copy_GBps"] > 0
                                        ? cells * bytes_per_cell / state.counters["copy_GBps"] / 1e3
                                        : 0;
  if (busy_s > 0) {
    state.counters["halo_share"] = pb.timings.halo_s / busy_s;
    state.counters["collectives_share"] = pb.timings.collectives_s / busy_s;
  }
}

void BM_kernel(benchmark::State& state) {
  const int dims = int(state.range(0));
  auto& pb = *problem_for(dims, std::size_t(state.range(1)));
  const auto kind = static_cast<Kernel>(state.range(2));
  kpmap::bench::run_paired(
      state, pb.layout->comm(), [&] { pb.copy(); }, [&] { pb.kernel(kind); });
  report(state, pb, kernel_bytes(kind, dims == 3), 0);
}

// Bytes a CG-family iteration's kernels must move per owned cell (without a
// preconditioner): the operator, and the vector updates of method `method`.
double iteration_bytes(const std::string& method, bool three) {
  const double op = kernel_bytes(Kernel::operator_dot, three);
  if (method == "pipecg") return op + 8 * 13;  // n z w s r p x in; z s p x r w out
  if (method == "cgsr") return op + 8 * 9;     // r p w s x in; p s x r out
  if (method == "fusedcg") return op + 8 * 6;  // x r w in; x r p out (p in, w out: op's)
  return op + kernel_bytes(Kernel::update_r, false) + kernel_bytes(Kernel::update_xp, false);
}

void BM_cg_iteration(benchmark::State& state) {
  const int dims = int(state.range(0));
  auto& pb = *problem_for(dims, std::size_t(state.range(1)));
  const std::string method = kpmap::bench::solver_names[state.range(2)];
  state.SetLabel(method);
  // Untimed: builds the solver (its fields' first touch) and warms the caches.
  pb.solve(sim::Scheme::implicit, method, true);
  pb.timings = {};
  double busy = 0;
  kpmap::bench::run_paired(
      state, pb.layout->comm(), [&] { pb.copy(); },
      [&] {
        const double t0 = MPI_Wtime();
        const auto res = pb.solve(sim::Scheme::implicit, method, true);
        busy += MPI_Wtime() - t0;
        if (res.iterations != cg_iterations) state.SkipWithError("the solve stopped early");
      });
  // The benchmark's time is a whole solve's; the counters are per CG
  // iteration: a cg_iterations-th of the solve against one copy.
  state.counters["ratio"] /= double(cg_iterations);
  report(state, pb, iteration_bytes(method, dims == 3), busy);
  state.counters["ms_per_iteration"] =
      state.counters["ratio"] * state.counters["reference_us"] * 1e-3;
}

void BM_solve(benchmark::State& state) {
  const int dims = int(state.range(0));
  auto& pb = *problem_for(dims, std::size_t(state.range(1)));
  const std::string method = kpmap::bench::solver_names[state.range(2)];
  state.SetLabel(method);
  pb.solve(sim::Scheme::implicit, method, false);  // untimed: builds the solver
  pb.timings = {};
  long iterations = 0;
  double busy = 0;
  kpmap::bench::run_paired(
      state, pb.layout->comm(), [&] { pb.copy(); },
      [&] {
        const double t0 = MPI_Wtime();
        const auto res = pb.solve(sim::Scheme::implicit, method, false);
        busy += MPI_Wtime() - t0;
        if (!res.converged) state.SkipWithError(res.failure.c_str());
        iterations = res.iterations;
      });
  report(state, pb, 0, busy);
  state.counters.erase("GBps");
  state.counters.erase("of_copy");
  state.counters["iterations"] = double(iterations);
  const double solve_ms = state.counters["ratio"] * state.counters["reference_us"] * 1e-3;
  state.counters["ms_per_iteration"] = iterations > 0 ? solve_ms / double(iterations) : 0;
  state.counters["cells_per_s"] *= double(iterations);  // cell updates of iterations
}

void BM_explicit_step(benchmark::State& state) {
  const int dims = int(state.range(0));
  auto& pb = *problem_for(dims, std::size_t(state.range(1)));
  pb.timings = {};
  double busy = 0;
  auto& step = pb.solver(sim::Scheme::explicit_ftcs, "cg", false);
  step.solve(*pb.op);  // untimed: the first touch of its halo buffers
  kpmap::bench::run_paired(
      state, pb.layout->comm(), [&] { pb.copy(); },
      [&] {
        const double t0 = MPI_Wtime();
        step.solve(*pb.op);
        pb.exec.fence();
        busy += MPI_Wtime() - t0;
      });
  report(state, pb, kernel_bytes(Kernel::explicit_step, dims == 3), busy);
}

}  // namespace

// 2-D: TeaLeaf's tea_bm_3 size (500^2, in cache), 1024^2 (8 MiB a field) and 4096^2 (128 MiB a
// field); 3-D: 64^3 and 256^3 (128 MiB a field).
BENCHMARK(BM_kernel)
    ->ArgsProduct({{2}, {500, 1024, 4096}, {0, 1, 2, 3}})
    ->ArgsProduct({{3}, {64, 256}, {0, 1, 2, 3}})
    ->UseManualTime();
BENCHMARK(BM_cg_iteration)
    ->ArgsProduct({{2}, {500, 1024, 4096}, {0, 6, 5, 7}})
    ->ArgsProduct({{3}, {64, 256}, {0, 6, 5, 7}})
    ->UseManualTime();
BENCHMARK(BM_solve)
    ->ArgsProduct({{2}, {500}, {0, 2, 3, 5, 6, 7}})
    ->ArgsProduct({{3}, {64}, {0, 2, 3, 5, 6, 7}})
    ->UseManualTime();
BENCHMARK(BM_explicit_step)
    ->Args({2, 500})
    ->Args({2, 4096})
    ->Args({3, 64})
    ->Args({3, 256})
    ->UseManualTime();
