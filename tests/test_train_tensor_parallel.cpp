// SPDX-License-Identifier: BSD-3-Clause
// Tensor parallelism: dense layers split over the mesh axis "model" (by
// their outputs, "column", and by their inputs, "row") against the same
// layers whole, on meshes of 1 x 1, 1 x 2, 1 x 3 and 2 x 2 (part of the
// test_train_model executable).

#include "support/mpi_test.hpp"
#include "support/train_checks.hpp"

#include <kpmap/runtime/mesh.hpp>
#include <kpmap/train/layers/dense.hpp>
#include <kpmap/train/layers/registry.hpp>
#include <kpmap/train/sequential.hpp>
#include <kpmap/train/trainer.hpp>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace {

using namespace kpmap::train;
using namespace train_checks;

LayerSpec split_dense(std::size_t units, const char* parallel) {
  return {"dense", {{"units", static_cast<long long>(units)}, {"parallel", std::string(parallel)}}};
}

// The largest difference between each split array and its block of the
// whole model's (`flat` and `whole_flat`: the parameters or the gradients),
// relative to the whole array's largest value.
double worst_block_difference(const Model& split, const std::vector<double>& flat,
                              const Model& whole, const std::vector<double>& whole_flat) {
  REQUIRE(split.slices().size() == whole.slices().size());
  double worst = 0;
  for (std::size_t s = 0; s < split.slices().size(); ++s) {
    const auto& mine = split.slices()[s];
    const auto& all = whole.slices()[s];
    REQUIRE(mine.name == all.name);
    const auto& e = mine.spec.extents;
    const std::size_t rows = e[0], cols = e.size() == 2 ? e[1] : 1;
    const std::size_t row0 = mine.spec.start.empty() ? 0 : mine.spec.start[0];
    const std::size_t col0 = mine.spec.start.size() == 2 ? mine.spec.start[1] : 0;
    const std::size_t whole_cols = all.spec.extents.size() == 2 ? all.spec.extents[1] : 1;
    if (!mine.spec.whole.empty()) CHECK(mine.spec.whole == all.spec.extents);
    double scale = 1e-300;
    for (std::size_t k = 0; k < all.spec.size(); ++k) {
      scale = std::max(scale, std::abs(whole_flat[all.offset + k]));
    }
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::size_t j = 0; j < cols; ++j) {
        const double a = flat[mine.offset + i * cols + j];
        const double b = whole_flat[all.offset + (row0 + i) * whole_cols + col0 + j];
        worst = std::max(worst, std::abs(a - b) / scale);
      }
    }
  }
  return worst;
}

}  // namespace

TEST_CASE("dense layers split by column and row over a model axis compute the whole layers",
          "[train][tensor]") {
  // 2 ranks on "model" where the count is even, else all: a whole layer,
  // then 7 units split by column 4 + 3 or 3 + 2 + 2 (its input gradient
  // summed over "model" for the layer before), a row layer of 5 whose
  // inputs come from the column layer through an activation, and a whole
  // layer; 23 samples over "data".
  const int ranks = kpmap::Mesh::world().axis("devices").size();
  const kpmap::Mesh mesh({{"data", 0}, {"model", ranks % 2 == 0 ? 2 : ranks}});
  const kpmap::Axis& data_axis = mesh.axis("data");
  const SyntheticClassification gen{23, 4, 3, 6};
  const auto data = generate_shard<double, Mem>(gen, 0, gen.samples, data_axis);
  const Shape input = Shape::flat(4);
  const std::vector<LayerSpec> whole_specs{dense(6), LayerSpec{"relu"}, dense(7), LayerSpec{"tanh"},
                                           dense(5), LayerSpec{"relu"}, dense(3)};
  const std::vector<LayerSpec> split_specs{
      dense(6),          LayerSpec{"relu"},     split_dense(7, "column"),
      LayerSpec{"tanh"}, split_dense(5, "row"), LayerSpec{"relu"},
      dense(3)};
  const std::size_t cap = std::max<std::size_t>(data.rows(), 1);
  Model whole(input, build_layers<double, Mem>(input, whole_specs), Loss::cross_entropy, cap);
  std::vector<Model::LayerPtr> layers;
  {
    const kpmap::UseMesh use(mesh);  // "model" in the layers' keys is this mesh's axis
    layers = build_layers<double, Mem>(input, split_specs);
  }
  const auto* column = dynamic_cast<const Dense<double, Mem>*>(layers[2].get());
  REQUIRE(column != nullptr);
  CHECK(column->parallel() == DenseParallel::column);
  CHECK(column->output_shape().size() ==
        kpmap::BlockPartition(7, mesh.axis_size("model")).count(mesh.axis_index("model")));
  Model split(input, std::move(layers), Loss::cross_entropy, cap);
  whole.initialize(3);
  split.initialize(3);
  // Each rank's blocks start as the whole layers' values there, bit for bit.
  CHECK(worst_block_difference(split, to_host(split.params().all), whole,
                               to_host(whole.params().all)) == 0);

  const Kokkos::View<std::uint32_t*, Mem> none;
  const auto ref =
      whole.loss_and_gradient(data, none, 0, data.rows(), gen.samples, data_axis).fetch();
  const auto got =
      split.loss_and_gradient(data, none, 0, data.rows(), gen.samples, data_axis).fetch();
  CHECK(std::abs(got.loss - ref.loss) <= 1e-12 * ref.loss);
  CHECK(got.accuracy == ref.accuracy);
  // The gradient reduced over "data" only: each rank's blocks are the whole
  // model's, to the rounding of the sums over "model".
  const double worst =
      worst_block_difference(split, to_host(split.grads().all), whole, to_host(whole.grads().all));
  INFO("largest relative difference of the gradient blocks: " << worst);
  CHECK(worst < 1e-13);
  const auto e_whole = whole.evaluate(data, data_axis);
  const auto e_split = split.evaluate(data, data_axis);
  CHECK(std::abs(e_split.loss - e_whole.loss) <= 1e-12 * e_whole.loss);
  CHECK(e_split.confusion == e_whole.confusion);
}

TEST_CASE("a dense layer split over a mesh without a model axis is refused", "[train][tensor]") {
  const std::vector<LayerSpec> specs{split_dense(6, "column")};
  CHECK_THROWS_WITH((build_layers<double, Mem>(Shape::flat(4), specs)),
                    Catch::Matchers::ContainsSubstring(
                        "parallel = \"column\" splits the layer over the mesh axis \"model\""));
}

TEST_CASE("a Trainer refuses a TrainerConfig mesh its axes do not make, and takes one they do",
          "[train][tensor]") {
  const int ranks = kpmap::Mesh::world().axis("devices").size();
  const int model_ranks = ranks % 2 == 0 ? 2 : ranks;
  const kpmap::Mesh mesh({{"data", 0}, {"model", model_ranks}});
  const Shape input = Shape::flat(4);
  const std::vector<LayerSpec> specs{
      dense(6),          LayerSpec{"relu"},     split_dense(8, "column"),
      LayerSpec{"relu"}, split_dense(5, "row"), dense(3)};
  std::vector<Model::LayerPtr> layers;
  {
    const kpmap::UseMesh use(mesh);
    layers = build_layers<double, Mem>(input, specs);
  }
  Model model(input, std::move(layers), Loss::cross_entropy, 8);
  model.initialize(1);
  OptimizerConfig sgd;
  TrainerConfig run;
  run.checkpoints = false;
  // A config that says nothing of the mesh (mesh_model and mesh_data at 0,
  // their defaults): the axes decide.
  CHECK_NOTHROW(Trainer<Model>(model, sgd, run, mesh.axis("data"), mesh.axis("devices")));
  run.mesh_model = model_ranks;
  // The mesh the config names, given as its axes: accepted.
  CHECK_NOTHROW(Trainer<Model>(model, sgd, run, mesh.axis("data"), mesh.axis("devices")));
  // A config that names another model count: refused, naming the one field
  // to set and its value.
  if (model_ranks != 1) {
    run.mesh_model = 1;
    CHECK_THROWS_WITH((Trainer<Model>(model, sgd, run, mesh.axis("data"), mesh.axis("devices"))),
                      Catch::Matchers::ContainsSubstring(
                          "set TrainerConfig::mesh_model = " + std::to_string(model_ranks) +
                          " (or leave it at 0, its default: the axes decide)"));
    run.mesh_model = model_ranks;
  }
  // A model axis in the config and a plain data-parallel Trainer (one axis,
  // every rank): it would train a model split over "model" as if whole.
  run.mesh_model = 2;
  try {
    Trainer<Model> t(model, sgd, run, "devices");
    FAIL_CHECK("a Trainer over one axis took TrainerConfig::mesh_model = 2");
  } catch (const kpmap::Error& e) {
    CHECK_THAT(std::string(e.what()),
               Catch::Matchers::ContainsSubstring(
                   "TrainerConfig asks for a mesh of all data x 2 model ranks"));
    CHECK_THAT(std::string(e.what()),
               Catch::Matchers::ContainsSubstring("a mesh of " + std::to_string(ranks) + " x 1"));
    CHECK(e.code() == kpmap::exit_code::bad_input);
    CHECK(e.all_ranks());
  }
  // A data count that differs from the data axis'.
  run.mesh_model = model_ranks;
  run.mesh_data = ranks + 1;
  CHECK_THROWS_WITH((Trainer<Model>(model, sgd, run, mesh.axis("data"), mesh.axis("devices"))),
                    Catch::Matchers::ContainsSubstring("TrainerConfig asks for a mesh of " +
                                                       std::to_string(ranks + 1) + " data"));
}
