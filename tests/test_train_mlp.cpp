// The MLP's hand-written backward pass against central finite differences of
// its own loss, at every rank count (the gradient is the global batch mean),
// and the optimizers' updates against their closed forms.

#include "support/mpi_test.hpp"

#include <kpmap/train/mlp.hpp>
#include <kpmap/train/optimizer.hpp>

#include <catch2/catch_test_macros.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <vector>

namespace {

using Mem = Kokkos::DefaultExecutionSpace::memory_space;
using namespace kpmap::train;

// Every parameter as a host vector, in for_each_view order.
std::vector<double> flatten(const MlpParams<double, Mem>& p) {
  std::vector<double> out;
  p.for_each_view([&](const auto& v) {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
    out.insert(out.end(), h.data(), h.data() + h.size());
  });
  return out;
}

// Adds `delta` to parameter number `index` (in flatten's order), on every rank alike.
void nudge(const MlpParams<double, Mem>& p, std::size_t index, double delta) {
  std::size_t base = 0;
  p.for_each_view([&](const auto& v) {
    if (index >= base && index < base + v.size()) {
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
      h.data()[index - base] += delta;
      Kokkos::deep_copy(v, h);
    }
    base += v.size();
  });
}

template <class Gen>
void check_gradient(const Gen& gen, std::vector<std::size_t> widths, Activation act, Loss loss) {
  const auto& axis = kpmap::Mesh::world().axis("devices");
  const auto data = generate_shard<double, Mem>(gen, 0, gen.samples, axis);
  MlpParams<double, Mem> p("p", widths);
  MlpParams<double, Mem> g("g", widths);
  initialize(p, 5);
  Mlp<double, Mem> mlp(widths, act, loss, data.rows() > 0 ? data.rows() : 1);
  const Kokkos::View<std::uint32_t*, Mem> none;
  auto loss_at = [&] {
    return mlp.loss_and_gradient(data, none, 0, data.rows(), gen.samples, p, g, axis).loss;
  };
  const double l0 = loss_at();
  const auto grad = flatten(g);
  // The evaluation path gives the same loss as the training path.
  CHECK(std::abs(mlp.evaluate(data, p, axis).loss - l0) <= 1e-12 * std::abs(l0));
  const double h = 1e-6;
  double worst = 0;
  for (std::size_t i = 0; i < grad.size(); ++i) {
    nudge(p, i, h);
    const double up = loss_at();
    nudge(p, i, -2 * h);
    const double down = loss_at();
    nudge(p, i, h);
    const double fd = (up - down) / (2 * h);
    const double err = std::abs(fd - grad[i]) / std::max(1e-3, std::abs(grad[i]));
    worst = std::max(worst, err);
  }
  INFO("worst relative error of the gradient against finite differences: " << worst);
  CHECK(worst < 1e-5);
}

}  // namespace

TEST_CASE("MLP gradients match finite differences (mse, tanh)", "[train][mlp]") {
  // 37 samples: uneven shards at 2, 3 and 4 ranks.
  check_gradient(SyntheticRegression{37, 3, 9, 0.1}, {3, 5, 4, 1}, Activation::tanh, Loss::mse);
}

TEST_CASE("MLP gradients match finite differences (cross-entropy, relu)", "[train][mlp]") {
  check_gradient(SyntheticClassification{41, 4, 3, 8}, {4, 6, 3}, Activation::relu,
                 Loss::cross_entropy);
}

TEST_CASE("MLP gradients match finite differences (softmax regression, no hidden layer)",
          "[train][mlp]") {
  check_gradient(SyntheticClassification{29, 3, 4, 2}, {3, 4}, Activation::relu,
                 Loss::cross_entropy);
}

TEST_CASE("optimizer updates follow their closed forms", "[train]") {
  using Params = MlpParams<double, Mem>;
  const std::vector<std::size_t> widths{2, 3};
  auto run = [&](OptimizerConfig::Kind kind, const std::vector<std::vector<double>>& grads) {
    Params p("p", widths);
    Params g("g", widths);
    initialize(p, 1);
    const auto p0 = flatten(p);
    OptimizerConfig c;
    c.kind = kind;
    c.learning_rate = 0.1;
    c.momentum = 0.5;
    Optimizer<double, Mem, Params> opt(c, p);
    for (const auto& step : grads) {
      const auto now = flatten(g);
      for (std::size_t i = 0; i < now.size(); ++i) nudge(g, i, step[i] - now[i]);
      opt.step(p, g);
    }
    return std::make_pair(p0, flatten(p));
  };
  const std::size_t n = 2 * 3 + 3;
  std::vector<double> g1(n), g2(n);
  for (std::size_t i = 0; i < n; ++i) {
    g1[i] = 0.3 * double(i) - 1.0;
    g2[i] = 0.7 - 0.2 * double(i);
  }
  {  // gd: p - lr g
    auto [p0, p1] = run(OptimizerConfig::Kind::gd, {g1});
    for (std::size_t i = 0; i < n; ++i) CHECK(std::abs(p1[i] - (p0[i] - 0.1 * g1[i])) < 1e-15);
  }
  {  // momentum: v1 = g1, v2 = 0.5 g1 + g2; p2 = p0 - lr (v1 + v2)
    auto [p0, p2] = run(OptimizerConfig::Kind::momentum, {g1, g2});
    for (std::size_t i = 0; i < n; ++i) {
      CHECK(std::abs(p2[i] - (p0[i] - 0.1 * (g1[i] + 0.5 * g1[i] + g2[i]))) < 1e-14);
    }
  }
  {  // adam, first step: the bias-corrected moments are g and g^2, so the
     // step is lr g / (|g| + eps)
    auto [p0, p1] = run(OptimizerConfig::Kind::adam, {g1});
    for (std::size_t i = 0; i < n; ++i) {
      const double expected = p0[i] - 0.1 * g1[i] / (std::abs(g1[i]) + 1e-8);
      CHECK(std::abs(p1[i] - expected) < 1e-13);
    }
  }
}
