// SPDX-License-Identifier: BSD-3-Clause
// The model's layer stack built from its specs (their pairing for tensor
// parallelism checked, their shapes chained from the data to the loss), and
// what a rank allocates for the run: work arrays and the memory estimate.
#include <kpmap/train/config.hpp>

#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/base/error.hpp>
#include <kpmap/runtime/memory.hpp>
#include <kpmap/train/layer_stack.hpp>
#include <kpmap/train/layers/dense.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace kpmap::train {

namespace {
// Tensor parallelism pairs dense layers (Megatron-LM): a column layer's
// outputs are each rank's part of its units, which only elementwise layers
// (those that work in place) may pass on, to a row layer that takes that
// part as its inputs and sums the products over the axis. Any other layout
// is another model on every mesh (a row layer alone sums its whole input
// over the axis, so its weights grow with the axis), so it is refused on
// every mesh, one rank too. \throws ShapeError naming the layer's `parallel`.
template <class C, class M>
void check_pairing(const std::vector<std::unique_ptr<Layer<C, M>>>& layers) {
  std::size_t open = 0;  // the column layer (from 1) whose part the layers since carry
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const auto* dense = dynamic_cast<const Dense<C, M>*>(layers[l].get());
    const DenseParallel p = dense != nullptr ? dense->parallel() : DenseParallel::none;
    const std::string here = "layer " + std::to_string(l + 1) + " (" + layers[l]->type() + ")";
    if (p == DenseParallel::row && open == 0) {
      throw ShapeError(here +
                           " is split by row: its inputs are a column-split dense layer's "
                           "part of the units, and no such layer comes before it (only "
                           "elementwise layers may come between); make the dense layer before it "
                           "parallel = \"column\", or this one \"none\"",
                       l + 1, "parallel");
    }
    if (open != 0 && p != DenseParallel::row &&
        (p != DenseParallel::none || !layers[l]->in_place())) {
      throw ShapeError(
          "layer " + std::to_string(open) + " is split by column, and " + here +
              (p == DenseParallel::column ? " is split by column too" : " is not elementwise") +
              ": a column-split layer's part of the units goes, through elementwise "
              "layers only, to a dense layer split by row (parallel = \"row\")",
          open, "parallel");
    }
    if (p == DenseParallel::row) open = 0;
    if (p == DenseParallel::column) open = l + 1;
  }
  if (open != 0) {
    throw ShapeError("layer " + std::to_string(open) +
                         " is split by column, and no dense layer "
                         "split by row takes its part of the units (the model's output would "
                         "stay split over the axis); add one, or make this one parallel = \"none\"",
                     open, "parallel");
  }
}
}  // namespace

template <class T, class C, class M>
std::vector<std::unique_ptr<Layer<C, M>>> build_model_layers(const deck::Deck& d, TrainConfig& c) {
  if (c.model.kind == "linear") return {};
  try {
    // Without its arrays: a layer allocates in reserve(), called by the model.
    auto layers = build_layers<C, M>(c.data.input, c.model.layers);
    check_pairing(layers);
    check_stack(c.data.input, layers, Loss{c.model.loss, c.model.loss_keys});
    const std::size_t scores = layers.back()->output_shape().channels;
    if (c.data.classification && scores != c.data.classes) {
      throw ShapeError("the last layer gives " + std::to_string(scores) +
                           " class scores and data.classes is " + std::to_string(c.data.classes),
                       c.model.layers.size());
    }
    c.model.parameters = double(stack_parameter_count(layers));
    c.model.work_per_sample = stack_work_bytes_per_sample(c.data.input, layers) / sizeof(C);
    c.model.large_work =
        std::any_of(layers.begin(), layers.end(), [](const auto& l) { return l->large_work(); });
    return layers;
  } catch (const ShapeError& e) {
    // The deck's layers are numbered from 1 without gaps (read_layers); an
    // mlp's come from model.hidden.
    const std::string layer = "model.layers." + std::to_string(std::max<std::size_t>(e.layer(), 1));
    const std::string key = c.model.kind == "mlp" ? "model.hidden"
                            : e.key().empty()     ? "model.layers"
                                                  : layer + "." + e.key();
    const std::string path = c.model.kind == "mlp" ? key : e.key().empty() ? layer : key;
    const std::string data =
        e.key().empty() ? " (the data gives a " + c.data.input.str() + " per sample)" : "";
    throw kpmap::InputError(d.where(path) + "key '" + key + "': " + e.what() + data,
                            kpmap::ErrorScope::all_ranks);
  }
}

#define KPMAP_TRAIN_BUILD_MODEL_LAYERS_(T, C)                                                  \
  template std::vector<std::unique_ptr<Layer<C, Kokkos::DefaultExecutionSpace::memory_space>>> \
  build_model_layers<T, C, Kokkos::DefaultExecutionSpace::memory_space>(const deck::Deck&,     \
                                                                        TrainConfig&);
KPMAP_TRAIN_BUILD_MODEL_LAYERS_(double, double)
KPMAP_TRAIN_BUILD_MODEL_LAYERS_(float, float)
#if defined(KOKKOS_HALF_T_IS_FLOAT) && !KOKKOS_HALF_T_IS_FLOAT
KPMAP_TRAIN_BUILD_MODEL_LAYERS_(float, kpmap::detail::half)
#endif
#undef KPMAP_TRAIN_BUILD_MODEL_LAYERS_

std::size_t work_capacity(const TrainConfig& c, std::size_t batch_rows, std::size_t val_rows) {
  const std::size_t micro = (batch_rows + c.train.accumulate - 1) / c.train.accumulate;
  return c.model.large_work ? micro : std::max(micro, std::min<std::size_t>(val_rows, 4096));
}

double memory_estimate(const TrainConfig& c, int ranks, std::size_t value_bytes,
                       std::string& breakdown) {
  const double n_train = double(c.data.samples - c.data.validation);
  const double rows = std::ceil(n_train / ranks) + std::ceil(double(c.data.validation) / ranks);
  double data =
      rows * double(c.data.features + 1) * double(value_bytes) + std::ceil(n_train / ranks) * 8.0;
  if (c.data.kind == DataKind::hdf5)
    data += std::ceil(n_train / ranks) * double(c.data.features + 1) * 8.0;
  const double params = c.model.kind == "linear" ? double(c.data.features + 1) : c.model.parameters;
  const auto moments = double(find_optimizer(c.optimizer.kind)->state.size());
  // Sharded, a rank keeps its even part of the optimizer's state.
  const double part = std::ceil(params / ranks);
  const double kept = c.train.sharding != Sharding::replicated ? part : params;
  // Sharded gradients: this rank's part of the sum, the same again for a
  // micro-batch's, and two work buffers of at most the whole gradient.
  // Sharded parameters: the part, and the whole the model is built with
  // before it is split (then two work buffers of at most the whole).
  const bool layered =
      c.train.sharding == Sharding::gradients || c.train.sharding == Sharding::parameters;
  const double grads = layered ? 2 * part + params : params;
  const double held = c.train.sharding == Sharding::parameters ? part + params : params;
  const double model = (held + grads + moments * kept) * double(value_bytes);
  double work = 0;
  if (c.model.kind != "linear") {
    const auto batch_rows = batch_rows_held(c.train.batch, std::size_t(n_train),
                                            std::size_t(std::ceil(n_train / ranks)));
    const auto val_rows = std::size_t(std::ceil(double(c.data.validation) / ranks));
    work = double(work_capacity(c, batch_rows, val_rows)) *
           (c.model.work_per_sample * double(value_bytes) + 8.0);
  }
  breakdown = "data " + kpmap::format_bytes(data) + ", parameters with gradients and optimizer " +
              "state " + kpmap::format_bytes(model) + ", work arrays " + kpmap::format_bytes(work);
  return data + model + work;
}

}  // namespace kpmap::train
