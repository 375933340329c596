// SPDX-License-Identifier: BSD-3-Clause
// kpmap-bench-train: one training step of kpmap-train's models, slowest rank
// (the linear model's here, the layered models' in bench_train_models.cpp:
// one program, its sources compiled side by side).
//
//   mpiexec -n 2 kpmap-bench-train
//   OPENBLAS_NUM_THREADS=1 kpmap-bench-train --benchmark_filter='mlp|cnn'
//
// - BM_linear_epoch/F/MiB: a full-batch gradient-descent epoch of linear
//   regression (X is MiB per rank, F features), paired with a STREAM-style
//   copy of an array as large as X in the same run. Counters: `GBps`, the
//   epoch's effective bandwidth (bytes of X / time), `copy_GBps` (2 x bytes /
//   time, STREAM's convention) and `of_copy`, their ratio.
// - BM_linear_batch/F/B: one minibatch step of the same model on a global
//   batch of B shuffled samples (B / ranks rows per rank: one chunk of the
//   gradient kernel or a few), paired with the step's own message alone (the
//   fused psum of grad w, grad b and the loss). Counter: `ratio`, step time /
//   psum time.
// - BM_mlp_step/B: one step (forward, backward, gradient psum, Adam) of a
//   784-512-512-10 ReLU MLP in float on a global batch of B samples.
//   Counters: `samples_per_s` and `GFLOPs` (6 x parameters x samples per step).
// - BM_cnn_step/B: one step of the Fashion-MNIST CNN (two 3x3 convolutions,
//   pooling, dense) in float on a global batch of B 28x28 images, paired with
//   a float gemm of the second convolution's shape. Counters: `samples_per_s`
//   and `of_sgemm`, the step's convolution FLOP rate over that gemm's.
// - BM_cnn_layer/L/D/B: one weighted layer of that CNN alone (L: 0 and 1 the
//   convolutions, 2 the dense layer, 3 the first convolution with the ReLU
//   and max pooling it computes itself in the model; D: 0 forward, 1
//   backward) on B images, paired with OpenBLAS sgemm at the convolution's
//   or dense layer's own shapes. Counters: `GFLOPs`,
//   `sgemm_GFLOPs` and `of_sgemm`, the layer's rate over sgemm's.
// - BM_gemm/M/N/K: the float gemm at the MLP's largest shape and at 1024^3,
//   labelled with the BLAS's kernel set (kpmap-info's), and `of_peak`,
//   its share of the core's nominal peak (GHz x FLOP/cycle from /proc/cpuinfo:
//   64 with AVX-512, 32 with AVX2 and FMA; override with KPMAP_PEAK_GFLOPS).

#include "support/mpi_benchmark.hpp"

#include <kpmap/runtime/runtime.hpp>
#include <kpmap/train/batches.hpp>
#include <kpmap/train/data.hpp>
#include <kpmap/train/linear.hpp>
#include <kpmap/train/optimizers/optimizer.hpp>

#include <Kokkos_Core.hpp>

#include <cstdlib>
#include <memory>
#include <string>

namespace {

using Mem = Kokkos::DefaultExecutionSpace::memory_space;
using Exec = Kokkos::DefaultExecutionSpace;
using namespace kpmap::train;

// The linear model on n synthetic samples of f features, sharded over the ranks.
struct LinearSetup {
  Shard<double, Mem> data;
  LinearParams<double, Mem> p, g;
  Kokkos::View<double, Mem> loss{"loss"};
  LinearSetup(std::size_t n, std::size_t f)
      : data(generate_shard<double, Mem>(SyntheticRegression{n, f, 1, 0.1}, 0, n, "devices")),
        p("p", f),
        g("g", f) {}
};

void BM_linear_epoch(benchmark::State& state) {
  auto& rt = kpmap::Runtime::current();
  const auto f = static_cast<std::size_t>(state.range(0));
  const std::size_t local = (static_cast<std::size_t>(state.range(1)) << 20) / (f * sizeof(double));
  const std::size_t n = local * static_cast<std::size_t>(rt.size());
  LinearSetup m(n, f);
  const auto& data = m.data;
  auto &p = m.p, &g = m.g;
  auto& loss = m.loss;
  OptimizerConfig config;
  Optimizer<double, Mem, LinearParams<double, Mem>> opt(config, p);
  const Kokkos::View<std::uint32_t*, Mem> none;
  const LinearWorkspace<double, Mem> ws(data.rows(), data.x.extent(1));
  // The copy reads and writes arrays as large as X.
  Kokkos::View<double*, Mem> src("copy::src", data.x.size());
  Kokkos::View<double*, Mem> dst("copy::dst", data.x.size());
  Kokkos::deep_copy(src, 1.0);
  kpmap::bench::run_paired(
      state, rt.comm(),
      [&] {
        Kokkos::parallel_for(
            "bench::copy", Kokkos::RangePolicy<Exec>(0, src.size()),
            KOKKOS_LAMBDA(std::size_t i) { dst(i) = src(i); });
        Exec().fence();
      },
      [&] {
        linear_loss_and_gradient(Exec(), data, none, 0, data.rows(), n, p, g, loss, ws, "devices");
        opt.step(p, g);
        Exec().fence();
      });
  const double bytes = double(data.x.size() * sizeof(double));
  const double ratio = state.counters["ratio"];  // epoch time / copy time
  const double t_copy = state.counters["reference_us"] * 1e-6;
  state.counters["copy_GBps"] = t_copy > 0 ? 2 * bytes / t_copy / 1e9 : 0;
  state.counters["GBps"] = t_copy > 0 ? bytes / (ratio * t_copy) / 1e9 : 0;
  state.counters["of_copy"] = ratio > 0 ? 0.5 / ratio : 0;
}

void BM_linear_batch(benchmark::State& state) {
  auto& rt = kpmap::Runtime::current();
  const auto f = static_cast<std::size_t>(state.range(0));
  const auto batch = static_cast<std::size_t>(state.range(1));
  const std::size_t n = 64 * batch;  // 64 batches an epoch
  LinearSetup m(n, f);
  const auto& data = m.data;
  auto &p = m.p, &g = m.g;
  auto& loss = m.loss;
  OptimizerConfig config;
  config.kind = "sgd";
  Optimizer<double, Mem, LinearParams<double, Mem>> opt(config, p);
  const auto plan = plan_epoch(Exec(), n, data.begin, data.rows(), batch, 7, 0);
  const LinearWorkspace<double, Mem> ws(data.rows(), f);
  std::size_t k = 0;
  kpmap::bench::run_paired(
      state, rt.comm(),
      [&] {
        kpmap::psum_inplace(Exec(), std::make_tuple(g.w, g.b, loss), "devices");
        Exec().fence();
      },
      [&] {
        linear_loss_and_gradient(Exec(), data, plan.order, plan.offsets[k], plan.offsets[k + 1],
                                 plan.global_size(k), p, g, loss, ws, "devices");
        opt.step(p, g);
        Exec().fence();
        k = (k + 1) % plan.batches;
      });
}

}  // namespace

BENCHMARK(BM_linear_epoch)
    ->Args({8, 4})
    ->Args({8, 256})
    ->Args({16, 256})
    ->Args({32, 256})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_linear_batch)
    ->Args({8, 64})
    ->Args({8, 1024})
    ->Args({32, 256})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
