// SPDX-License-Identifier: BSD-3-Clause
// kpmap-bench-counts: what one step of every solver and every model asks of
// the device, counted with Kokkos Tools callbacks in the process (see
// support/event_counts.hpp), beside its time (slowest rank):
//
//   mpiexec -n 2 kpmap-bench-counts
//
// Counters, per step: `kernels` (launches; `reductions` of them),
// `syncs` (host synchronisations: fences, and reductions into host values),
// `global_fences` (fences of every instance), `copies` (deep copies, either
// direction) and `allocs` (allocations in any memory space), and as the
// benchmark's label the four most frequent fence labels per step ("global: "
// before a fence of every instance); the solvers' also per iteration of the linear solver
// (`kernels_per_it`, `syncs_per_it`) and `iterations` per step. Steps run twice untimed first, so
// the buffer pools have settled. docs/portability.md's GPU-readiness table is this benchmark's
// output on a Serial build with Kokkos 3.4.
//
// - BM_heat_step/solver: one kpmap-heat time step (TeaLeaf's benchmark
//   problem, 64 x 64 cells), with solver cg, jacobi, chebyshev, ppcg, the
//   explicit FTCS scheme, pipecg, cgsr or fusedcg (0 to 7, bench/support/tea_problem.hpp).
// - BM_model_step/model: one training step (forward, backward, gradient
//   psum, optimizer update) on a global batch of 128: the linear model
//   (64 features, SGD), the MLP 784-512-512-10 and the Fashion-MNIST CNN
//   (float, Adam).

#include "support/event_counts.hpp"
#include "support/mpi_benchmark.hpp"
#include "support/tea_problem.hpp"

#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/runtime/runtime.hpp>
#include <kpmap/sim/simulation.hpp>
#include <kpmap/train/data.hpp>
#include <kpmap/train/layers/registry.hpp>
#include <kpmap/train/linear.hpp>
#include <kpmap/train/optimizers/optimizer.hpp>
#include <kpmap/train/sequential.hpp>

#include <Kokkos_Core.hpp>

#include <memory>
#include <string>
#include <vector>

namespace {

using Mem = Kokkos::DefaultExecutionSpace::memory_space;
using Exec = Kokkos::DefaultExecutionSpace;
namespace sim = kpmap::sim;
using namespace kpmap::train;

void report(benchmark::State& state, const kpmap::bench::EventCounts& total) {
  const auto c = total.per(static_cast<double>(state.iterations()));
  state.counters["kernels"] = c.kernels;
  state.counters["reductions"] = c.reductions;
  state.counters["syncs"] = c.syncs;
  state.counters["global_fences"] = c.global_fences;
  state.counters["copies"] = c.copies;
  state.counters["allocs"] = c.allocations;
  // Where the fences come from (gpu-check prints it): the top labels per step.
  state.SetLabel(c.top_fences(4));
}

// TeaLeaf's benchmark problem (tea_bm) on 64 x 64 cells.
sim::HeatConfig heat_config(int solver) {
  sim::HeatConfig c = kpmap::bench::tea_benchmark(2, 64);
  c.end_time = 1e9;
  if (solver == 4) {
    c.scheme = sim::Scheme::explicit_ftcs;
    c.dt = 1e-4;  // within FTCS's stability limit at this spacing
  } else {
    c.solver.method = kpmap::bench::solver_names[solver];
    c.solver.max_iters = 100000;
    // Jacobi converges slowly: a looser tolerance keeps its steps short (the
    // counts per iteration do not depend on it).
    if (c.solver.method == "jacobi") c.solver.eps = 1e-4;
    // Chebyshev and PPCG start after CG's first steps (their eigenvalue
    // estimates): 5 here, so that most of a solve is theirs.
    c.solver.presteps = 5;
  }
  return c;
}

void BM_heat_step(benchmark::State& state) {
  const int solver = static_cast<int>(state.range(0));
  state.SetLabel(solver == 4 ? "explicit" : kpmap::bench::solver_names[solver]);
  sim::Simulation s(heat_config(solver));
  s.initialise();
  s.step();  // untimed: the solver's halo plans and the pools settle
  s.step();
  long iterations = 0;
  kpmap::bench::EventCounts total;
  {
    kpmap::bench::CountEvents count;
    kpmap::bench::run_timed(state, s.layout().comm(),
                            [&] { iterations += s.step().solve.iterations; });
    total = count.stop();
  }
  report(state, total);
  const double steps = static_cast<double>(state.iterations());
  state.counters["iterations"] = static_cast<double>(iterations) / steps;
  if (iterations > 0) {
    state.counters["kernels_per_it"] = total.kernels / static_cast<double>(iterations);
    state.counters["syncs_per_it"] = total.syncs / static_cast<double>(iterations);
  }
}

// A step of `model` on a global batch of `batch`, with `opt`'s update.
template <class Model, class Opt>
void model_steps(benchmark::State& state, Model& model, Opt& opt,
                 const Shard<typename Model::value_type, Mem>& data, std::size_t batch) {
  const Kokkos::View<std::uint32_t*, Mem> none;
  auto step = [&] {
    model.loss_and_gradient(data, none, 0, data.rows(), batch, "devices");
    opt.step(model.exec(), model.params(), model.grads());
  };
  step();  // untimed: the pools settle
  step();
  kpmap::detail::fence(model.exec(), "bench: untimed steps done");
  kpmap::bench::EventCounts total;
  {
    kpmap::bench::CountEvents count;
    kpmap::bench::run_timed(state, kpmap::Runtime::current().comm(), [&] {
      step();
      // The time is the step's, not its enqueueing (a fence every Kokkos
      // reports, so that it can be taken off the count below).
      kpmap::detail::fence(model.exec(), "bench: step done");
    });
    total = count.stop();
  }
  // The fence after each timed step is the benchmark's, not the step's.
  total.syncs -= static_cast<double>(state.iterations());
  report(state, total);
}

OptimizerConfig optimizer(const std::string& kind) {
  OptimizerConfig c;
  c.kind = kind;
  c.learning_rate = 1e-3;
  return c;
}

void BM_model_step(benchmark::State& state) {
  const std::size_t batch = 128;
  const int which = static_cast<int>(state.range(0));
  if (which == 0) {
    state.SetLabel("linear");
    const std::size_t f = 64;
    const auto data =
        generate_shard<double, Mem>(SyntheticRegression{batch, f, 1, 0.1}, 0, batch, "devices");
    LinearModel<double, Mem> model(f, data.rows());
    Optimizer<double, Mem, LinearParams<double, Mem>> opt(optimizer("sgd"), model.params());
    model_steps(state, model, opt, data, batch);
    return;
  }
  std::vector<LayerSpec> specs;
  Shape input = Shape::flat(784);
  if (which == 1) {
    state.SetLabel("mlp");
    specs = mlp_specs({784, 512, 512, 10}, "relu");
  } else {
    state.SetLabel("cnn");
    input = Shape::hwc(28, 28, 1);
    const LayerSpec conv1{"conv2d", {{"filters", 32LL}, {"padding", std::string("same")}}};
    const LayerSpec conv2{"conv2d", {{"filters", 64LL}, {"padding", std::string("same")}}};
    const LayerSpec pool{"maxpool2d"}, dense{"dense", {{"units", 10LL}}};
    specs = {conv1, LayerSpec{"relu"},    pool, conv2, LayerSpec{"relu"},
             pool,  LayerSpec{"flatten"}, dense};
  }
  const auto data = generate_shard<float, Mem>(
      SyntheticImages(batch, which == 1 ? 1 : 28, which == 1 ? 784 : 28, 1, 10, 3, 0.2), 0, batch,
      "devices");
  Sequential<float, Mem> model(input, build_layers<float, Mem>(input, specs), Loss::cross_entropy,
                               std::max<std::size_t>(data.rows(), 1));
  model.initialize(1);
  Optimizer<float, Mem, FlatParams<float, Mem>> opt(optimizer("adam"), model.params());
  model_steps(state, model, opt, data, batch);
}

}  // namespace

BENCHMARK(BM_heat_step)->DenseRange(0, 7)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_model_step)->DenseRange(0, 2)->UseManualTime()->Unit(benchmark::kMillisecond);
