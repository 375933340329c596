#include <kpmap/train/config.hpp>

#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/base/error.hpp>
#include <kpmap/io/checkpoint.hpp>
#include <kpmap/runtime/memory.hpp>
#include <kpmap/train/layers/dense.hpp>
#include <kpmap/train/sequential.hpp>
#include <kpmap/train/trainer.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace kpmap::train {

deck::Schema train_schema() {
  using deck::Range;
  deck::Schema s("kpmap-train");
  s.string("model.kind", "linear", {"linear", "mlp", "sequential"},
           "linear: y ~ X w + b; mlp: dense layers with an activation; sequential: the "
           "layers of model.layers");
  s.integer_list("model.hidden", std::vector<long long>{32, 32}, Range{1, 1 << 20}, "",
                 "mlp: widths of the hidden layers (empty list: softmax/linear regression)");
  deck::Registry<LayerInfo>& layers = layer_registry();
  s.string("model.layers.#.type", std::nullopt, layers.names(),
           "sequential: one layer (model.layers = [{ type = ... }, ...], first to last): " +
               layers.described());
  layers.merge_keys(s, "model.layers.#.");
  s.string("model.activation", "relu", {"relu", "tanh"}, "mlp: activation of the hidden layers");
  s.string("model.tensor_parallel", "none", {"none", "auto"},
           "mlp: auto pairs the hidden layers over the mesh axis \"model\" (train.mesh), the "
           "first of each pair split by column, the second by row (Megatron-LM), an unpaired "
           "last one whole; none: every layer whole");
  deck::Registry<LossInfo>& losses = loss_registry();
  s.string("model.loss", "mse", losses.names(), "the loss (" + losses.described() + ")");
  losses.merge_keys(s, "model.", "model.loss");
  s.string("model.precision", "double", {"double", "float", "mixed"},
           "scalar type of data, parameters and arithmetic; mixed (mlp, sequential): "
           "parameters, gradient reduction and optimizer in float, forward and backward in "
           "16-bit half_t (a Kokkos built for CUDA, HIP or SYCL)");
  s.real("model.loss_scale", 1024, Range{1, 16777216}, "",
         "mixed: factor of the loss gradient, divided out before the reduction, so small "
         "gradients do not flush to zero in 16 bits (a power of two rounds nothing)");
  std::vector<std::string> kinds;
  for (DataKind k : data_kinds) kinds.push_back(data_kind_name(k));
  s.string("data.kind", "synthetic", kinds,
           "synthetic: generated from the sample index; images: synthetic images (class "
           "patterns and noise); idx: IDX image and label files (MNIST format, .gz or not); "
           "hdf5: read from data.path");
  s.string("data.path", "", {}, "hdf5: the data file; idx: the training images");
  s.string("data.labels", "", {}, "idx: the training labels");
  s.string("data.test_path", "", {},
           "idx: test images (the validation set; data.validation_fraction must be 0)");
  s.string("data.test_labels", "", {}, "idx: test labels");
  s.integer_list("data.image", std::vector<long long>{12, 12, 1}, Range{1, 1 << 16}, "pixels",
                 "images: height, width, channels of the synthetic images");
  s.real_list("data.mean", std::vector<double>{}, Range{-1e6, 1e6}, "",
              "idx, hdf5 byte images: per-channel mean subtracted after scaling bytes to [0, 1] "
              "(empty: none)");
  s.real_list("data.std", std::vector<double>{}, Range{1e-12, 1e6}, "",
              "idx, hdf5 byte images: per-channel standard deviation divided by (as many as "
              "data.mean)");
  s.string("data.x", "x", {},
           "hdf5: features dataset: samples x features, or images samples x height x width "
           "(x channels), unsigned bytes (scaled to [0, 1]) or any number type");
  s.string("data.y", "y", {}, "hdf5: targets dataset (samples): values, or class indices");
  s.integer("data.samples", 400, Range{1, 1e12}, "", "synthetic: samples in the whole data set");
  s.integer("data.features", 5, Range{1, 1 << 24}, "", "synthetic: features per sample");
  s.integer("data.classes", 4, Range{2, 1 << 20}, "",
            "a classification loss (cross_entropy): number of classes (labels 0 .. "
            "classes-1)");
  s.real("data.noise", 0.1, Range{0, 1e6}, "",
         "synthetic regression and images: std. dev. of the noise");
  s.integer("data.seed", 0, Range{0, 9.2e18}, "", "synthetic: seed of the data set");
  s.real("data.validation_fraction", 0.0, Range{0, 0.9}, "",
         "share of the samples held out for validation (the last rows of the set)");
  deck::Registry<OptimizerInfo>& optimizers = optimizer_registry();
  s.string("optimizer.kind", "gd", optimizers.names(),
           "the update rule (" + optimizers.described() + ")");
  // The library's default rate, so that a deck and a program agree.
  s.real("optimizer.learning_rate", OptimizerConfig{}.learning_rate, Range{0, 1e6}, "",
         "step size (the peak, after warm-up and before decay)");
  s.boolean("optimizer.scale_lr_with_batch", false,
            "use learning_rate x train.batch_size / optimizer.base_batch (the linear scaling "
            "rule: learning_rate is tuned for base_batch)");
  s.integer("optimizer.base_batch", 256, Range{1, 1e12}, "",
            "scale_lr_with_batch: the global batch learning_rate is tuned for");
  s.integer("optimizer.warmup_steps", 0, Range{0, 1e15}, "",
            "the rate climbs linearly from 0 to learning_rate over the first N steps");
  s.string("optimizer.schedule", "constant", {"constant", "cosine", "step"},
           "after the warm-up: constant; cosine decay to 0 over decay_steps; step: times "
           "decay_factor every decay_steps");
  s.integer("optimizer.decay_steps", 0, Range{0, 1e15}, "",
            "cosine: steps of the decay (0: the rest of the run); step: steps between decays");
  s.real("optimizer.decay_factor", 0.1, Range{0, 1}, "", "step: factor of each decay");
  optimizers.merge_keys(s, "optimizer.", "optimizer.kind");
  s.integer("train.epochs", 50, Range{1, 1e9}, "", "passes over the training set");
  s.integer("train.max_steps", 0, Range{0, 1e15}, "",
            "end the run after this many optimizer steps in all (0: no limit); a run cut "
            "short mid-epoch reports that part of the epoch and checkpoints its position");
  s.integer("train.log_every", -1, Range{-1, 1e15}, "",
            "print the step's loss, accuracy and samples/s every N steps on rank 0, and write "
            "them to steps.csv (0: never; -1: where the run plans fewer than 10 epochs, about "
            "15 lines with the epoch lines)");
  s.integer("train.accumulate_steps", 1, Range{1, 1 << 20}, "",
            "mlp, sequential: each step's batch in this many micro-batches, their gradients "
            "added before one reduction and update (the same step in 1/N of the memory)");
  s.integer("train.batch_size", 0, Range{0, 1e12}, "",
            "global batch (over all ranks); 0: the whole training set");
  s.integer("train.seed", 0, Range{0, 9.2e18}, "", "seed of the initial weights and the shuffle");
  s.string("train.sharding", "replicated", {"replicated", "optimizer", "gradients", "parameters"},
           "what each rank keeps of the training state: replicated, all of it; optimizer, "
           "its even part of the optimizer's state, which it alone updates before the "
           "parameters are all-gathered (ZeRO stage 1: the same numbers, less memory); "
           "gradients, as optimizer, and only its part of the reduced gradient, each "
           "layer's reduce-scattered as soon as it exists (ZeRO stage 2; mlp, sequential); "
           "parameters, as gradients, and only its part of the parameters, each layer's "
           "all-gathered just before its forward and backward passes (ZeRO stage 3, FSDP; "
           "mlp, sequential)");
  s.integer("train.mesh.data", 0, Range{0, 1 << 20}, "ranks",
            "ranks along the mesh axis \"data\", over which batches are split and gradients "
            "summed (0: all that train.mesh.model leaves)");
  s.integer("train.mesh.model", 1, Range{1, 1 << 20}, "ranks",
            "ranks along the mesh axis \"model\", over which dense layers with parallel = "
            "\"column\" or \"row\" are split (tensor parallelism; every rank of it sees the "
            "same samples)");
  declare_output_keys(s, "kpmap-train", "epochs");
  s.boolean("output.checkpoints", true,
            "false: write no checkpoint (a run that only reports; nothing to restart from, and "
            "a stop signal ends it without one)");
  s.real_list("output.expect_val_loss", std::vector<double>{}, Range{0, 1e300}, "",
              "[low, high]: the run's check; it fails with exit code 5 unless the final "
              "validation loss lies in this range (empty: no check)");
  // When each key takes effect: a key given where it would do nothing is
  // refused (Schema::when).
  std::vector<std::string> classifiers;
  for (const LossInfo* l : losses.all()) {
    if (l->classification) classifiers.push_back(l->name);
  }
  s.when("model.hidden", "model.kind", {"mlp"})
      .when("model.activation", "model.kind", {"mlp"})
      .when("model.tensor_parallel", "model.kind", {"mlp"})
      .when("model.loss_scale", "model.precision", {"mixed"})
      .when("data.path", "data.kind", {"hdf5", "idx"})
      .when("data.labels", "data.kind", {"idx"})
      .when("data.test_path", "data.kind", {"idx"})
      .when("data.test_labels", "data.kind", {"idx"})
      .when("data.image", "data.kind", {"images"})
      .when("data.mean", "data.kind", {"idx", "hdf5"})
      .when("data.std", "data.kind", {"idx", "hdf5"})
      .when("data.x", "data.kind", {"hdf5"})
      .when("data.y", "data.kind", {"hdf5"})
      .when("data.samples", "data.kind", {"synthetic", "images"})
      .when("data.features", "data.kind", {"synthetic"})
      .when("data.noise", "data.kind", {"synthetic", "images"})
      .when("data.seed", "data.kind", {"synthetic", "images"})
      .when("data.classes", "model.loss", classifiers)
      .when("optimizer.base_batch", "optimizer.scale_lr_with_batch", {"true"})
      .when("optimizer.decay_steps", "optimizer.schedule", {"cosine", "step"})
      .when("optimizer.decay_factor", "optimizer.schedule", {"step"});
  return s;
}

namespace {

using deck::Deck;

// An IDX label file holds `n` labels: shaped (n), or (n, 1) as HDF5 targets may be.
bool one_label_each(const IdxInfo& labels, std::size_t n) {
  const auto& d = labels.dims;
  return (d.size() == 1 || (d.size() == 2 && d[1] == 1)) && d[0] == n;
}

[[noreturn]] void bad(const Deck& d, const std::string& what) {
  throw kpmap::InputError(d.source() + ": " + what, kpmap::ErrorScope::all_ranks);
}

// A value the deck holds at `key` is refused: the message cites its line.
[[noreturn]] void bad(const Deck& d, const std::string& key, const std::string& what) {
  throw kpmap::InputError(d.where(key) + "key " + d.named(key) + ": " + what,
                          kpmap::ErrorScope::all_ranks);
}

// The data set's size and the shape of one sample, from the generator's
// keys or the files' headers.
void read_data_shape(TrainConfig& c, const Deck& d, MPI_Comm comm) {
  c.data.input = Shape::flat(c.data.features);
  if (c.data.kind == DataKind::hdf5) {
    if (c.data.path.empty()) bad(d, "data.path", "data.kind = \"hdf5\" needs the data file");
    const auto shape = hdf5_data_shape(c.data.path, c.data.x_name, c.data.y_name, comm);
    c.data.samples = shape.samples;
    c.data.features = shape.features;
    const auto& e = shape.sample;
    c.data.input =
        e.size() == 1 ? Shape::flat(e[0]) : Shape::hwc(e[0], e[1], e.size() == 3 ? e[2] : 1);
    c.data.hdf5_bytes = shape.bytes && c.data.input.image;
  } else if (c.data.kind == DataKind::images) {
    const auto& e = d.integer_list("data.image");
    if (e.size() != 3) {
      throw kpmap::InputError(d.where("data.image") + "key 'data.image': expected [height, " +
                                  "width, channels], found " + std::to_string(e.size()) +
                                  " numbers",
                              kpmap::ErrorScope::all_ranks);
    }
    c.data.input = Shape::hwc(std::size_t(e[0]), std::size_t(e[1]), std::size_t(e[2]));
    c.data.features = c.data.input.size();
  } else if (c.data.kind == DataKind::idx) {
    for (const char* key : {"data.path", "data.labels"}) {
      if (d.string(key).empty()) {
        bad(d, key, "data.kind = \"idx\" needs it");
      }
    }
    c.data.train_images = idx_info(c.data.path, "data.path", comm);
    c.data.train_labels = idx_info(c.data.labels, "data.labels", comm);
    const auto& dims = c.data.train_images.dims;
    if (dims.size() < 3 || dims.size() > 4) {
      bad(d, "data.path",
          c.data.path + " holds " + std::to_string(dims.size()) +
              "-D data; images are N x height x width (x channels)");
    }
    if (!one_label_each(c.data.train_labels, dims[0])) {
      bad(d, "data.labels",
          c.data.labels + " holds " + std::to_string(c.data.train_labels.dims[0]) + " labels (" +
              std::to_string(c.data.train_labels.dims.size()) + "-D), not one for each of the " +
              std::to_string(dims[0]) + " images of " + c.data.path);
    }
    c.data.input = Shape::hwc(dims[1], dims[2], dims.size() == 4 ? dims[3] : 1);
    c.data.features = c.data.input.size();
    c.data.samples = dims[0];
    if (!c.data.test_path.empty() || !c.data.test_labels.empty()) {
      if (c.data.test_path.empty() || c.data.test_labels.empty()) {
        bad(d, "keys 'data.test_path' and 'data.test_labels': give both, or neither");
      }
      if (c.data.validation_fraction > 0) {
        bad(d, "data.validation_fraction",
            "the test files are the validation set; set "
            "it to 0");
      }
      c.data.test_images = idx_info(c.data.test_path, "data.test_path", comm);
      c.data.test_labels_info = idx_info(c.data.test_labels, "data.test_labels", comm);
      const auto& t = c.data.test_images.dims;
      if (t.size() != dims.size() || !std::equal(t.begin() + 1, t.end(), dims.begin() + 1)) {
        bad(d, "data.test_path",
            "the test images of " + c.data.test_path +
                " are not the shape of the training images of " + c.data.path);
      }
      if (!one_label_each(c.data.test_labels_info, t[0])) {
        bad(d, "data.test_labels",
            c.data.test_labels + " holds " + std::to_string(c.data.test_labels_info.dims[0]) +
                " labels (" + std::to_string(c.data.test_labels_info.dims.size()) +
                "-D), not one for each of the " + std::to_string(t[0]) + " images of " +
                c.data.test_path);
      }
      c.data.test_set = true;
      c.data.validation = t[0];
      c.data.samples += t[0];
    }
  }
  // The schema refuses a scaling of generated data (Schema::when); whether
  // an HDF5 file holds bytes is known only once its header is read.
  if ((!c.data.scaling.mean.empty() || !c.data.scaling.std.empty()) &&
      c.data.kind == DataKind::hdf5 && !c.data.hdf5_bytes) {
    bad(d, !c.data.scaling.mean.empty() ? "data.mean" : "data.std",
        "it scales byte images (data.kind = \"idx\", or HDF5 images of unsigned bytes), and "
        "the features of " +
            c.data.path + " are not bytes; they are used as they are: it would have no effect");
  }
  if (c.data.scaling.mean.size() != c.data.scaling.std.size() ||
      (!c.data.scaling.mean.empty() && c.data.scaling.mean.size() != c.data.input.channels)) {
    bad(d, "keys 'data.mean' and 'data.std': give one value per channel (" +
               std::to_string(c.data.input.channels) + ") in each, or leave both empty");
  }
  if (c.data.input.image && !c.data.classification && c.model.kind == "linear") {
    bad(d, "model.kind", "images need model.kind = \"sequential\" (or \"mlp\")");
  }
}

// model.layers (sequential) or model.hidden (mlp) as layer specs: their
// types and keys (build_model_layers builds the stack and checks its shapes).
void read_layers(TrainConfig& c, const Deck& d) {
  const std::vector<int> at = d.indices("model.layers");
  if (c.model.kind != "sequential") {
    if (!at.empty()) {
      throw kpmap::InputError(d.where("model.layers.1") +
                                  "key 'model.layers': layers are read "
                                  "for model.kind = \"sequential\", and model.kind is \"" +
                                  c.model.kind + "\"",
                              kpmap::ErrorScope::all_ranks);
    }
    if (c.model.kind == "mlp") {
      std::vector<std::size_t> widths{c.data.input.size()};
      widths.insert(widths.end(), c.model.hidden.begin(), c.model.hidden.end());
      const std::size_t outputs = loss_info(c.model.loss).outputs;
      widths.push_back(c.data.classification ? c.data.classes : outputs > 0 ? outputs : 1);
      c.model.layers = mlp_specs(widths, c.model.activation);
      if (c.model.tensor_parallel) {
        // Hidden layers 2k and 2k + 1 (of the dense layers, the last being the output) pair up.
        const std::size_t pairs = c.model.hidden.size() / 2;
        std::size_t dense = 0;
        for (auto& spec : c.model.layers) {
          if (spec.type != "dense") continue;
          if (dense < 2 * pairs) spec.keys["parallel"] = std::string(dense % 2 ? "row" : "column");
          ++dense;
        }
      }
      if (c.data.input.image) c.model.layers.insert(c.model.layers.begin(), LayerSpec{"flatten"});
    }
  } else if (at.empty()) {
    bad(d, "model.layers", "model.kind = \"sequential\" needs its layers");
  }
  if (c.model.kind == "linear") return;
  for (std::size_t n = 0; n < at.size(); ++n) {
    if (at[n] != static_cast<int>(n) + 1) {
      bad(d, "model.layers." + std::to_string(at[n]) + ".type",
          "layers are numbered 1, 2, 3, ... without gaps (first to last), model.layers." +
              std::to_string(n + 1) + " is missing");
    }
  }
  // Each layer's own keys (its registration's); a key only other types
  // declare is refused where the deck gives it a value other than its
  // default (a resolved deck, deck.toml, writes every key's), one it
  // requires where the deck does not give it.
  for (int i : at) {
    const std::string k = "model.layers." + std::to_string(i) + ".";
    LayerSpec s{d.string(k + "type")};
    const LayerInfo& mine = *find_layer(s.type);  // the schema's choices
    std::string reads;
    for (const deck::Key& key : mine.keys.keys()) reads += ", " + key.path;
    for (const LayerInfo* other : registered_layers()) {
      for (const deck::Key& key : other->keys.keys()) {
        if (d.given(k + key.path) && mine.keys.find(key.path) == nullptr &&
            d.value(k + key.path) != *key.fallback) {
          bad(d, k + key.path,
              "a " + s.type + " layer has no " + key.path + ", it would have no effect (a " +
                  s.type + " layer reads " + (reads.empty() ? "only its type" : "type" + reads) +
                  ")");
        }
      }
    }
    for (const std::string& key : mine.required) {
      if (!d.given(k + key)) {
        throw kpmap::InputError(d.where(k.substr(0, k.size() - 1)) + "key '" + k + key + "': a " +
                                    s.type + " layer needs " + key,
                                kpmap::ErrorScope::all_ranks);
      }
    }
    for (const deck::Key& key : mine.keys.keys()) s.keys[key.path] = d.value(k + key.path);
    c.model.layers.push_back(s);
  }
}

// Each section of the deck into its part of the run, in the order the later
// ones need: the data's shape needs the loss (labels or values), the layers
// the data's shape.

// [model] without its layers: the kind, the loss and its own keys, the precision.
ModelConfig read_model(const Deck& d) {
  ModelConfig m;
  m.kind = d.string("model.kind");
  m.activation = d.string("model.activation");
  m.loss = d.string("model.loss");
  // Its own keys (a key only other losses read was refused as the deck was read).
  m.loss_keys = loss_registry().own_keys(d, "model.", m.loss);
  m.precision = d.string("model.precision");
  m.loss_scale = d.real("model.loss_scale");
  for (long long w : d.integer_list("model.hidden")) m.hidden.push_back(std::size_t(w));
  m.tensor_parallel = d.string("model.tensor_parallel") == "auto";
  return m;
}

// [data], with the files' headers read on rank 0 (collective over `comm`).
void read_data(const Deck& d, TrainConfig& c, MPI_Comm comm) {
  {
    const std::string& kind = d.string("data.kind");  // one of the schema's choices
    for (DataKind k : data_kinds) {
      if (kind == data_kind_name(k)) c.data.kind = k;
    }
  }
  c.data.source = c.source;
  c.data.path = d.string("data.path");
  c.data.x_name = d.string("data.x");
  c.data.y_name = d.string("data.y");
  c.data.samples = std::size_t(d.integer("data.samples"));
  c.data.features = std::size_t(d.integer("data.features"));
  c.data.classes = c.data.classification ? std::size_t(d.integer("data.classes")) : 1;
  c.data.noise = d.real("data.noise");
  c.data.seed = std::uint64_t(d.integer("data.seed"));
  c.data.validation_fraction = d.real("data.validation_fraction");
  c.data.labels = d.string("data.labels");
  c.data.test_path = d.string("data.test_path");
  c.data.test_labels = d.string("data.test_labels");
  c.data.scaling.mean = d.real_list("data.mean");
  c.data.scaling.std = d.real_list("data.std");
  read_data_shape(c, d, comm);
}

// [optimizer]: the kind and its own keys, the learning rate and its schedule.
OptimizerConfig read_optimizer(const Deck& d) {
  OptimizerConfig o;
  o.kind = d.string("optimizer.kind");
  // Its own keys (a key only other kinds read was refused as the deck was read).
  o.keys = optimizer_registry().own_keys(d, "optimizer.", o.kind);
  o.learning_rate = d.real("optimizer.learning_rate");
  o.warmup_steps = d.integer("optimizer.warmup_steps");
  o.schedule = schedule_kind(d.string("optimizer.schedule"));
  o.decay_steps = d.integer("optimizer.decay_steps");
  o.decay_factor = d.real("optimizer.decay_factor");
  return o;
}

// [train]: the loop's length, batch and seed.
LoopConfig read_train(const Deck& d) {
  LoopConfig l;
  l.epochs = d.integer("train.epochs");
  l.max_steps = d.integer("train.max_steps");
  l.log_every = d.integer("train.log_every");
  l.accumulate = std::size_t(d.integer("train.accumulate_steps"));
  l.batch = std::size_t(d.integer("train.batch_size"));
  l.seed = std::uint64_t(d.integer("train.seed"));
  l.mesh_data = int(d.integer("train.mesh.data"));
  l.mesh_model = int(d.integer("train.mesh.model"));
  const std::string& sharding = d.string("train.sharding");
  l.sharding = sharding == "optimizer"    ? Sharding::optimizer
               : sharding == "gradients"  ? Sharding::gradients
               : sharding == "parameters" ? Sharding::parameters
                                          : Sharding::replicated;
  return l;
}

// [output]: the keys every run shares (run/output_keys.hpp) and kpmap-train's own.
void read_output(const Deck& d, TrainConfig& c) {
  c.output = read_output_keys(d);
  c.checkpoints = d.boolean("output.checkpoints");
  c.expect_val_loss = d.real_list("output.expect_val_loss");
}

// What one section's values mean for another's: the model against the
// precision and the loop, the validation split, the learning rate against
// the batch, the schedule against the run's length, the check against the
// split, the optimizer against the batch.
void check_across(const Deck& d, TrainConfig& c, MPI_Comm comm) {
  {
    int ranks = 1;
    MPI_Comm_size(comm, &ranks);
    const int model = c.train.mesh_model, data = c.train.mesh_data;
    if (ranks % model != 0 || (data > 0 && data * model != ranks)) {
      const bool both = data > 0;
      const std::string what =
          both ? "a mesh of " + std::to_string(data) + " x " + std::to_string(model) +
                     " ranks (data x model) is not the " + std::to_string(ranks) +
                     " ranks of this run"
               : std::to_string(model) + " ranks along \"model\" do not divide the " +
                     std::to_string(ranks) + " ranks of this run";
      throw kpmap::InputError(d.where(both ? "train.mesh.data" : "train.mesh.model") +
                                  "key 'train.mesh." + (both ? "data" : "model") + "': " + what,
                              kpmap::ErrorScope::all_ranks);
    }
    if (c.train.mesh_data == 0) c.train.mesh_data = ranks / model;
  }
  if (c.model.kind == "linear" && c.train.accumulate > 1) {
    throw kpmap::InputError(d.where("train.accumulate_steps") +
                                "key 'train.accumulate_steps': the linear model reads its whole "
                                "batch in one pass; accumulation is for mlp and sequential models",
                            kpmap::ErrorScope::all_ranks);
  }
  const bool layered =
      c.train.sharding == Sharding::gradients || c.train.sharding == Sharding::parameters;
  if (c.model.kind == "linear" && layered) {
    throw kpmap::InputError(d.where("train.sharding") +
                                "key 'train.sharding': the linear model keeps its gradient and "
                                "parameters whole (features + 1 values); \"" +
                                sharding_name(c.train.sharding) +
                                "\" is for mlp and sequential models (\"optimizer\" shards the "
                                "linear model's optimizer state)",
                            kpmap::ErrorScope::all_ranks);
  }
  if (c.model.precision == "mixed" && layered) {
    throw kpmap::InputError(d.where("train.sharding") + "key 'train.sharding': \"" +
                                sharding_name(c.train.sharding) +
                                "\" is not yet taken under model.precision = \"mixed\" "
                                "(\"optimizer\" is)",
                            kpmap::ErrorScope::all_ranks);
  }
  if (c.model.precision == "mixed") {
    if (c.model.kind == "linear") {
      throw kpmap::InputError(d.where("model.precision") +
                                  "key 'model.precision': \"mixed\" is for mlp and sequential "
                                  "models (the linear model has no layers to run in 16 bits); "
                                  "use \"float\" or \"double\"",
                              kpmap::ErrorScope::all_ranks);
    }
    if (!kpmap::detail::has_half_type) {
      throw kpmap::InputError(
          d.where("model.precision") +
              "key 'model.precision': \"mixed\" needs a 16-bit floating-point type, and this "
              "Kokkos build (" +
              kpmap::detail::kokkos_version_string() + ", " +
              Kokkos::DefaultExecutionSpace::name() +
              ") has none: Kokkos::Experimental::half_t is float unless Kokkos is built for "
              "CUDA, HIP or SYCL. Use \"float\" here, or a GPU build of Kokkos",
          kpmap::ErrorScope::all_ranks);
    }
  }
  if (c.model.kind == "linear" && c.model.loss != "mse") {
    bad(d, "model.loss",
        "a linear model is fitted by mse; for softmax regression use "
        "model.kind = \"mlp\" with model.hidden = []");
  }
  if (c.data.kind == DataKind::synthetic && c.data.classification) {
    // Each label is the best of `classes` scores over `classes` hidden units
    // of `features` inputs: samples x classes^2 x features multiply-adds
    // (about 70 ns each on one core, the truth matrices being drawn as they
    // are used). Refused where that would run for minutes without a word.
    int ranks = 1;
    MPI_Comm_size(comm, &ranks);
    const double per_rank = std::ceil(double(c.data.samples) / ranks) * double(c.data.classes) *
                            double(c.data.classes) * double(c.data.features);
    constexpr double limit = 2e9;
    if (per_rank > limit) {
      const double fit = std::floor(
          std::sqrt(limit / (std::ceil(double(c.data.samples) / ranks) * double(c.data.features))));
      char text[400];
      std::snprintf(text, sizeof text,
                    "key 'data.classes': the labels of a synthetic set of %zu samples, %zu "
                    "features and %zu classes cost %.3g multiply-adds per rank (samples x "
                    "classes^2 x features; minutes to hours): use at most %.0f classes here, "
                    "fewer samples or features, more ranks, or data from a file",
                    c.data.samples, c.data.features, c.data.classes, per_rank, std::max(2.0, fit));
      throw kpmap::InputError(d.where("data.classes") + text, kpmap::ErrorScope::all_ranks);
    }
  }
  c.data.validation =
      c.data.test_set
          ? c.data.validation
          : std::size_t(std::floor(c.data.validation_fraction * double(c.data.samples)));
  if (c.data.samples - c.data.validation < 1)
    bad(d, "no training samples are left after the split");
  const std::size_t train_rows = c.data.samples - c.data.validation;
  if (d.boolean("optimizer.scale_lr_with_batch")) {
    c.optimizer.learning_rate *=
        double(global_batch(c.train.batch, train_rows)) / double(d.integer("optimizer.base_batch"));
  }
  if (c.optimizer.schedule != OptimizerConfig::Schedule::constant && c.optimizer.decay_steps == 0) {
    if (c.optimizer.schedule == OptimizerConfig::Schedule::step) {
      throw kpmap::InputError(d.where("optimizer.decay_steps") +
                                  "key 'optimizer.decay_steps': optimizer.schedule = \"step\" "
                                  "needs the steps between decays (at least 1)",
                              kpmap::ErrorScope::all_ranks);
    }
    // Cosine over the rest of the run.
    const auto per_epoch = static_cast<long long>(steps_per_epoch(train_rows, c.train.batch));
    const long long total = c.train.max_steps > 0
                                ? std::min(c.train.max_steps, c.train.epochs * per_epoch)
                                : c.train.epochs * per_epoch;
    c.optimizer.decay_steps = std::max(1LL, total - c.optimizer.warmup_steps);
  }
  if (!c.expect_val_loss.empty()) {
    const auto& e = c.expect_val_loss;
    if (e.size() != 2 || e[0] > e[1]) {
      bad(d, "output.expect_val_loss", "expected [low, high] with low <= high");
    }
    if (c.data.validation == 0) {
      bad(d, "output.expect_val_loss",
          "it checks the validation loss, and this run holds out no samples (set "
          "data.validation_fraction, or data.test_path for IDX images)");
    }
  }
  if (find_optimizer(c.optimizer.kind)->full_batch &&
      global_batch(c.train.batch, train_rows) < train_rows) {
    std::string minibatch;
    for (const OptimizerInfo* o : registered_optimizers()) {
      if (!o->full_batch) minibatch += (minibatch.empty() ? "\"" : ", \"") + o->name + "\"";
    }
    bad(d, "train.batch_size",
        "optimizer.kind = \"" + c.optimizer.kind + "\" takes whole-batch steps " +
            "(train.batch_size = 0); use " + minibatch + " for minibatches");
  }
}

}  // namespace

TrainConfig from_deck(const Deck& d, MPI_Comm comm) {
  TrainConfig c;
  c.source = d.source();
  c.model = read_model(d);
  c.data.classification = loss_info(c.model.loss).classification;
  read_data(d, c, comm);
  read_layers(c, d);
  c.optimizer = read_optimizer(d);
  c.train = read_train(d);
  read_output(d, c);
  check_across(d, c, comm);
  return c;
}

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
  using Net = Sequential<T, M, C>;
  try {
    // Without its arrays: a layer allocates in reserve(), called by the model.
    auto layers = build_layers<C, M>(c.data.input, c.model.layers);
    check_pairing(layers);
    Net::check(c.data.input, layers, Loss{c.model.loss, c.model.loss_keys});
    const std::size_t scores = layers.back()->output_shape().channels;
    if (c.data.classification && scores != c.data.classes) {
      throw ShapeError("the last layer gives " + std::to_string(scores) +
                           " class scores and data.classes is " + std::to_string(c.data.classes),
                       c.model.layers.size());
    }
    c.model.parameters = double(Net::parameter_count(layers));
    c.model.work_per_sample = Net::work_bytes_per_sample(c.data.input, layers) / sizeof(C);
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

TrainerConfig trainer_config(const TrainConfig& c, const std::string& out,
                             const std::string& deck_toml, int ranks) {
  TrainerConfig tc;
  static_cast<LoopConfig&>(tc) = c.train;
  tc.output = c.output;
  tc.output.dir = out;
  tc.checkpoints = c.checkpoints;
  tc.meta.app = "kpmap-train";
  tc.meta.deck = deck_toml;
  // Over the ranks, or on a mesh, over "data" within each block of the
  // layers split over "model".
  const bool mesh = c.train.mesh_model > 1;
  const std::string over = mesh ? " split over data" : " split over the ranks";
  tc.meta.decomposition =
      std::to_string(ranks) + " ranks" +
      (mesh ? ", a mesh of " + std::to_string(c.train.mesh_data) + " (data) x " +
                  std::to_string(c.train.mesh_model) + " (model); layers split over model in blocks"
            : std::string()) +
      "; " +
      (c.train.sharding == Sharding::optimizer ? "parameters replicated, optimizer state" + over
       : c.train.sharding == Sharding::gradients
           ? "parameters replicated, optimizer state and gradient" + over
       : c.train.sharding == Sharding::parameters
           ? "parameters, gradient and optimizer state" + over
           : std::string(mesh ? "the rest replicated" : "parameters replicated"));
  return tc;
}

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

void check_restart(const deck::Deck& d, const std::string& file, MPI_Comm comm) {
  const checkpoint::Reader r(file, comm, "kpmap-train");
  // What a checkpoint's state continues only under, and why: the model (its
  // parameters are read by shape, and another model of the same shapes, as
  // another activation or a pooling of another kind, would take them without
  // a word and train something else) and the optimizer.
  // A layer's `parallel` is where its parameters live, not what they are:
  // checkpoints hold whole arrays, so a split model continues whole and
  // the other way round (as model.tensor_parallel, which is not compared).
  const std::vector<std::string> layout = {"model.layers.#.parallel"};
  const std::pair<std::vector<std::string>, const char*> same[] = {
      {{"model.kind", "model.activation", "model.hidden", "model.layers"},
       " holds the parameters of another model, which continue only in the model that made "
       "them; restart with the checkpoint's model"},
      {{"optimizer"},
       " was written with other optimizer settings, and its state (velocity, moments, step "
       "count) continues only under them; restart with the checkpoint's settings"},
  };
  for (const auto& [paths, why] : same) {
    const std::string diff = deck::first_difference(d, r.metadata().deck, paths, layout);
    if (!diff.empty()) {
      throw InputError(diff + ": restart file " + file + why + " (its deck.toml)",
                       ErrorScope::all_ranks);
    }
  }
}

}  // namespace kpmap::train
