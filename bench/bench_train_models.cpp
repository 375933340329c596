// SPDX-License-Identifier: BSD-3-Clause
// kpmap-bench-train's layered models (bench_train.cpp describes every
// benchmark of the program): BM_mlp_step, BM_cnn_step, BM_cnn_layer, BM_gemm.

#include "support/mpi_benchmark.hpp"

#include <kpmap/runtime/runtime.hpp>
#include <kpmap/train/batches.hpp>
#include <kpmap/train/data.hpp>
#include <kpmap/train/layers/registry.hpp>
#include <kpmap/train/optimizers/optimizer.hpp>
#include <kpmap/train/sequential.hpp>

#include <KokkosBlas3_gemm.hpp>
#include <Kokkos_Core.hpp>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

namespace {

using Mem = Kokkos::DefaultExecutionSpace::memory_space;
using Exec = Kokkos::DefaultExecutionSpace;
using namespace kpmap::train;
// One training step of `model` (forward, backward, gradient psum, Adam) on
// all of this rank's rows of a global batch of `batch`, as a callable.
template <class Model>
auto adam_steps(Model& model, const Shard<float, Mem>& data, std::size_t batch) {
  OptimizerConfig config;
  config.kind = "adam";
  config.learning_rate = 1e-3;
  return [&model, &data, batch,
          opt = std::make_shared<Optimizer<float, Mem, FlatParams<float, Mem>>>(config,
                                                                                model.params())] {
    model.loss_and_gradient(data, Kokkos::View<std::uint32_t*, Mem>(), 0, data.rows(), batch,
                            "devices");
    opt->step(model.params(), model.grads());
    Exec().fence();
  };
}

void BM_mlp_step(benchmark::State& state) {
  auto& rt = kpmap::Runtime::current();
  const auto batch = static_cast<std::size_t>(state.range(0));
  const std::vector<std::size_t> widths{784, 512, 512, 10};
  const SyntheticClassification gen{batch, 784, 10, 3};
  // Class labels from a cheap rule: the benchmark times the step, not the teacher.
  const kpmap::BlockPartition part(batch, rt.size());
  Shard<float, Mem> data;
  data.global_rows = batch;
  data.begin = part.begin(rt.rank());
  const std::size_t local = part.count(rt.rank());
  data.x = Kokkos::View<float**, Kokkos::LayoutRight, Mem>("x", local, 784);
  data.y = Kokkos::View<float*, Mem>("y", local);
  auto x = data.x;
  auto y = data.y;
  const std::size_t begin = data.begin;
  Kokkos::parallel_for(
      "bench::mlp_data", Kokkos::RangePolicy<Exec>(0, local), KOKKOS_LAMBDA(std::size_t i) {
        for (std::size_t j = 0; j < 784; ++j) x(i, j) = static_cast<float>(gen.x(begin + i, j));
        y(i) = static_cast<float>((begin + i) % 10);
      });
  Sequential<float, Mem> model(
      Shape::flat(784), build_layers<float, Mem>(Shape::flat(784), mlp_specs(widths, "relu")),
      Loss::cross_entropy, local);
  model.initialize(1);
  kpmap::bench::run_timed(state, rt.comm(), adam_steps(model, data, batch));
  const std::size_t params = model.parameter_count();
  state.counters["samples_per_s"] =
      benchmark::Counter(double(batch), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOPs"] = benchmark::Counter(6.0 * double(params) * double(batch) / 1e9,
                                                benchmark::Counter::kIsIterationInvariantRate);
}

// The Fashion-MNIST CNN of inputs/cnn_fashion_mnist.toml on synthetic
// 28x28 images, float: one step (forward, backward, gradient psum, Adam),
// interleaved with a float gemm of the second convolution's shape (its
// im2col matrix times the filters) on this rank's share of the batch. The
// counter `of_sgemm` is the step's convolution FLOP rate over that gemm's rate:
// how close the whole step comes to the machine's gemm speed.
void BM_cnn_step(benchmark::State& state) {
  auto& rt = kpmap::Runtime::current();
  const auto batch = static_cast<std::size_t>(state.range(0));
  const SyntheticImages gen(batch, 28, 28, 1, 10, 3, 0.2);
  const Shard<float, Mem> data = generate_shard<float, Mem>(gen, 0, batch, "devices");
  const std::size_t local = data.rows();
  auto conv = [](long long filters) {
    return LayerSpec{"conv2d", {{"filters", filters}, {"padding", std::string("same")}}};
  };
  const LayerSpec pool{"maxpool2d"}, dense{"dense", {{"units", 10LL}}};
  const std::vector<LayerSpec> specs{
      conv(32), LayerSpec{"relu"},    pool, conv(64), LayerSpec{"relu"},
      pool,     LayerSpec{"flatten"}, dense};
  const Shape input = Shape::hwc(28, 28, 1);
  Sequential<float, Mem> model(input, build_layers<float, Mem>(input, specs), Loss::cross_entropy,
                               local);
  model.initialize(1);
  // The reference: conv2's forward gemm, (local * 14 * 14) x 288 times 288 x 64.
  const std::size_t m = std::max<std::size_t>(local, 1) * 14 * 14;
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> a("a", m, 288), b("b", 64, 288), c("c", m, 64);
  Kokkos::deep_copy(a, 0.5f);
  Kokkos::deep_copy(b, 0.25f);
  kpmap::bench::run_paired(
      state, rt.comm(),
      [&] {
        KokkosBlas::gemm("N", "T", 1.0f, a, b, 0.0f, c);
        Exec().fence();
      },
      adam_steps(model, data, batch));
  // Convolution multiply-adds of a step: forward, then the weight and the
  // input gradients (the first convolution computes no input gradient).
  const double conv1 = 28.0 * 28 * 9 * 32, conv2 = 14.0 * 14 * 288 * 64;
  const double step_flops = 2.0 * double(local) * (2 * conv1 + 3 * conv2);
  const double gemm_flops = 2.0 * double(m) * 288 * 64;
  const double ratio = state.counters["ratio"];  // step time / gemm time
  state.counters["samples_per_s"] =
      benchmark::Counter(double(batch), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["of_sgemm"] = ratio > 0 ? step_flops / (ratio * gemm_flops) : 0;
  state.counters["forward_MFLOP_per_sample"] = 2.0 * model.forward_flops() / 1e6;
}

// One weighted layer of the CNN alone, forward or backward, on `batch`
// images: range(0) picks conv 3x3 1->32 on 28x28 (0), conv 3x3 32->64 on
// 14x14 (1) or dense 3136->10 (2); range(1) is 0 forward, 1 backward (with
// the input gradient except for the first layer, which the model never asks
// for one). Paired in every iteration with the OpenBLAS sgemm calls that the
// same work is at the layer's own shapes (rows = batch x output pixels,
// fan-in, outputs): forward C = A W^T; backward dW = D^T A and dA = D W.
// Counters: `GFLOPs` (the layer's gemm FLOPs over its time, so bias,
// im2col and col2im count as overhead), `sgemm_GFLOPs`, and `of_sgemm`,
// their ratio.
void BM_cnn_layer(benchmark::State& state) {
  auto& rt = kpmap::Runtime::current();
  const auto which = static_cast<std::size_t>(state.range(0));
  const bool backward = state.range(1) != 0;
  const auto batch = static_cast<std::size_t>(state.range(2));
  auto conv = [](long long filters) {
    return LayerSpec{"conv2d", {{"filters", filters}, {"padding", std::string("same")}}};
  };
  const Shape inputs[] = {Shape::hwc(28, 28, 1), Shape::hwc(14, 14, 32), Shape::flat(3136)};
  const LayerSpec specs[] = {conv(32), conv(64), LayerSpec{"dense", {{"units", 10LL}}}};
  // 3: the first convolution with the ReLU and max pooling after it, which
  // it computes itself in the model (Conv2D::absorb_next).
  const bool fused = which == 3;
  std::vector<LayerSpec> chain{specs[fused ? 0 : which]};
  if (fused) {
    chain.push_back(LayerSpec{"relu"});
    chain.push_back(LayerSpec{"maxpool2d", {{"size", 2LL}}});
  }
  auto layers = build_layers<float, Mem>(inputs[fused ? 0 : which], chain);
  Layer<float, Mem>& layer = *layers.at(0);
  if (fused && !(layers[2]->absorb_relu() && layer.absorb_next(*layers[2], false))) {
    state.SkipWithError("the first convolution does not absorb its pooling");
    return;
  }
  const ParamSpec w = layer.parameters().at(0);  // outputs x fan-in
  const std::size_t outputs = w.extents[0], fan_in = w.extents[1];
  std::size_t count = 0;
  for (const auto& s : layer.parameters()) count += s.size();
  Kokkos::View<float*, Mem> p("p", count), g("g", count);
  layer.bind(p.data(), g.data());
  for (auto& l : layers) l->reserve(batch);
  layer.initialize(Exec(), 1, 0);
  using Batch = Layer<float, Mem>::Batch;
  const std::size_t in_size = layer.input_shape().size(),
                    out_size = layers.back()->output_shape().size();
  Batch in("in", batch, in_size), out("out", batch, out_size), dout("dout", batch, out_size);
  Batch din = which == 0 || fused ? Batch() : Batch("din", batch, in_size);
  Kokkos::parallel_for(
      "bench::layer_data", Kokkos::RangePolicy<Exec>(0, batch), KOKKOS_LAMBDA(std::size_t s) {
        for (std::size_t j = 0; j < in_size; ++j) in(s, j) = float((s * 7 + j * 13) % 17) / 17;
        for (std::size_t j = 0; j < out_size; ++j) dout(s, j) = float((s + j * 5) % 11) / 11 - 0.5f;
      });
  layer.forward(Exec(), in, out);  // the backward pass reads what forward left (patches)
  Exec().fence();
  const std::size_t rows = batch * layer.output_shape().size() / outputs;  // the gemm's
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> a("a", rows, fan_in), b("b", outputs, fan_in),
      c("c", rows, outputs), dw("dw", outputs, fan_in);
  Kokkos::deep_copy(a, 0.5f);
  Kokkos::deep_copy(b, 0.25f);
  Kokkos::deep_copy(c, 0.125f);
  const bool input_gradient = backward && which != 0 && !fused;
  kpmap::bench::run_paired(
      state, rt.comm(),
      [&] {
        if (!backward) {
          KokkosBlas::gemm("N", "T", 1.0f, a, b, 0.0f, c);
        } else {
          KokkosBlas::gemm("T", "N", 1.0f, c, a, 0.0f, dw);
          if (input_gradient) KokkosBlas::gemm("N", "N", 1.0f, c, b, 0.0f, a);
        }
        Exec().fence();
      },
      [&] {
        if (!backward) {
          layer.forward(Exec(), in, out);
        } else {
          layer.backward(Exec(), in, out, dout, din);
        }
        Exec().fence();
      });
  const double flops = 2.0 * double(rows) * double(fan_in) * double(outputs) *
                       (backward ? (input_gradient ? 2 : 1) : 1);
  const double ratio = state.counters["ratio"];  // layer time / sgemm time
  const double t_ref = state.counters["reference_us"] * 1e-6;
  state.counters["GFLOPs"] =
      benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["sgemm_GFLOPs"] = t_ref > 0 ? flops / t_ref / 1e9 : 0;
  state.counters["of_sgemm"] = ratio > 0 ? 1 / ratio : 0;
  state.SetLabel(layer.describe() + (fused ? " + relu + maxpool2d 2x2" : "") +
                 (backward ? " backward" : " forward"));
}

// The core's nominal single-precision peak in GFLOP/s, or 0 if unknown.
double nominal_peak_gflops() {
  if (const char* e = std::getenv("KPMAP_PEAK_GFLOPS")) return std::atof(e);
  std::ifstream in("/proc/cpuinfo");
  std::string line, model, flags;
  while (std::getline(in, line)) {
    if (model.empty() && line.rfind("model name", 0) == 0) model = line;
    if (flags.empty() && line.rfind("flags", 0) == 0) flags = line;
  }
  const auto at = model.find("GHz");
  const auto sp = model.rfind(' ', at);
  const double ghz = at != std::string::npos && sp != std::string::npos
                         ? std::atof(model.substr(sp + 1, at - sp - 1).c_str())
                         : 0.0;
  const double per_cycle = flags.find("avx512f") != std::string::npos ? 64
                           : flags.find(" fma") != std::string::npos  ? 32
                                                                      : 8;
  return ghz * per_cycle;
}

void BM_gemm(benchmark::State& state) {
  auto& rt = kpmap::Runtime::current();
  const auto m = static_cast<std::size_t>(state.range(0));
  const auto n = static_cast<std::size_t>(state.range(1));
  const auto k = static_cast<std::size_t>(state.range(2));
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> a("a", m, k), b("b", n, k), c("c", m, n);
  Kokkos::deep_copy(a, 0.5f);
  Kokkos::deep_copy(b, 0.25f);
  kpmap::bench::run_timed(state, rt.comm(), [&] {
    KokkosBlas::gemm("N", "T", 1.0f, a, b, 0.0f, c);
    Exec().fence();
  });
  const double flops = 2.0 * double(m) * double(n) * double(k);
  state.counters["GFLOPs"] =
      benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak_GFLOPs"] = nominal_peak_gflops();
  state.SetLabel("kernels " + rt.blas_kernels().core);
}

}  // namespace

BENCHMARK(BM_mlp_step)->Arg(256)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_cnn_step)->Arg(128)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_cnn_layer)
    ->ArgsProduct({{0, 1, 2, 3}, {0, 1}, {128, 64}})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_gemm)
    ->Args({256, 512, 784})
    ->Args({1024, 1024, 1024})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
