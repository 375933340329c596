// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// What the training tests share: the model they build, copies to the host,
// and the check of a model's gradient against central finite differences.

#include <kpmap/runtime/mesh.hpp>
#include <kpmap/train/layers/registry.hpp>
#include <kpmap/train/sequential.hpp>

#include <catch2/catch_test_macros.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace train_checks {

using Mem = Kokkos::DefaultExecutionSpace::memory_space;
using Model = kpmap::train::Sequential<double, Mem>;
using kpmap::train::LayerSpec;
using kpmap::train::Loss;
using kpmap::train::Shape;

inline std::vector<double> to_host(const Kokkos::View<double*, Mem>& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<double>(h.data(), h.data() + h.size());
}

// Adds `delta` to parameter number `index`, on every rank alike.
inline void nudge(const Kokkos::View<double*, Mem>& v, std::size_t index, double delta) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  h(index) += delta;
  Kokkos::deep_copy(v, h);
}

// The gradient of the model's loss on the whole data set (one global batch)
// against central differences in every parameter.
// `adjust` may change the layers before the model is built.
template <class Gen, class Adjust = void (*)(std::vector<Model::LayerPtr>&)>
void check_gradient(
    const Gen& gen, const Shape& input, const std::vector<LayerSpec>& specs, Loss loss,
    Adjust adjust = [](std::vector<Model::LayerPtr>&) {}) {
  const auto& axis = kpmap::Mesh::world().axis("devices");
  const auto data = kpmap::train::generate_shard<double, Mem>(gen, 0, gen.samples, axis);
  auto layers = kpmap::train::build_layers<double, Mem>(input, specs);
  adjust(layers);
  Model model(input, std::move(layers), loss, data.rows());
  model.initialize(5);
  const Kokkos::View<std::uint32_t*, Mem> none;
  auto loss_at = [&] {
    return model.loss_and_gradient(data, none, 0, data.rows(), gen.samples, axis).fetch().loss;
  };
  const double l0 = loss_at();
  const auto grad = to_host(model.grads().all);
  // The evaluation path gives the same loss as the training path.
  CHECK(std::abs(model.evaluate(data, axis).loss - l0) <= 1e-12 * std::abs(l0));
  const double h = 1e-6;
  double worst = 0;
  const auto p = model.params().all;
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

}  // namespace train_checks
