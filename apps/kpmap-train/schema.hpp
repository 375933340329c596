#pragma once
// The deck schema of kpmap-train: the one place its keys are declared (it
// validates decks, prints --help-deck and generates docs/decks.md's table).

#include <kpmap/deck.hpp>
#include <kpmap/train/layers/registry.hpp>
#include <kpmap/train/optimizer.hpp>

namespace kpmap::apps::train {

inline deck::Schema schema() {
  using deck::Range;
  deck::Schema s("kpmap-train");
  s.string("model.kind", "linear", {"linear", "mlp", "sequential"},
           "linear: y ~ X w + b; mlp: dense layers with an activation; sequential: the "
           "layers of model.layers");
  s.integer_list("model.hidden", std::vector<long long>{32, 32}, Range{1, 1 << 20}, "",
                 "mlp: widths of the hidden layers (empty list: softmax/linear regression)");
  s.string("model.layers.#.type", std::nullopt, kpmap::train::layer_types(),
           "sequential: one layer (model.layers = [{ type = ... }, ...], first to last)");
  s.integer("model.layers.#.units", 0, Range{0, 1 << 24}, "", "dense: outputs");
  s.integer("model.layers.#.filters", 0, Range{0, 1 << 16}, "", "conv2d: output channels");
  s.integer("model.layers.#.kernel", 3, Range{1, 1024}, "pixels", "conv2d: kernel x kernel window");
  s.integer("model.layers.#.stride", 1, Range{1, 1024}, "pixels", "conv2d: step between windows");
  s.string("model.layers.#.padding", "valid", {"valid", "same"},
           "conv2d: valid (whole windows only) or same (zero padding, ceil(input / stride) "
           "outputs)");
  s.integer("model.layers.#.size", 2, Range{1, 255}, "pixels",
            "maxpool2d, avgpool2d: size x size windows, stride size");
  s.string("model.activation", "relu", {"relu", "tanh"}, "mlp: activation of the hidden layers");
  s.string("model.loss", "mse", {"mse", "cross_entropy"},
           "mean squared error (regression) or softmax cross-entropy (classification)");
  s.string("model.precision", "double", {"double", "float", "mixed"},
           "scalar type of data, parameters and arithmetic; mixed (mlp, sequential): "
           "parameters, gradient reduction and optimizer in float, forward and backward in "
           "16-bit half_t (a Kokkos built for CUDA, HIP or SYCL)");
  s.real("model.loss_scale", 1024, Range{1, 16777216}, "",
         "mixed: factor of the loss gradient, divided out before the reduction, so small "
         "gradients do not flush to zero in 16 bits (a power of two rounds nothing)");
  s.string("data.kind", "synthetic", {"synthetic", "images", "idx", "hdf5"},
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
            "cross_entropy: number of classes (labels 0 .. classes-1)");
  s.real("data.noise", 0.1, Range{0, 1e6}, "",
         "synthetic regression and images: std. dev. of the noise");
  s.integer("data.seed", 0, Range{0, 9.2e18}, "", "synthetic: seed of the data set");
  s.real("data.validation_fraction", 0.0, Range{0, 0.9}, "",
         "share of the samples held out for validation (the last rows of the set)");
  s.string("optimizer.kind", "gd", {"gd", "sgd", "momentum", "adam"},
           "gd: full-batch gradient descent; sgd: plain minibatch steps; momentum; adam");
  // The library's default rate, so that a deck and a program agree.
  s.real("optimizer.learning_rate", kpmap::train::OptimizerConfig{}.learning_rate, Range{0, 1e6},
         "", "step size (the peak, after warm-up and before decay)");
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
  s.real("optimizer.momentum", 0.9, Range{0, 1}, "", "momentum: v = momentum v + g");
  s.real("optimizer.beta1", 0.9, Range{0, 0.999999}, "", "adam: first-moment decay");
  s.real("optimizer.beta2", 0.999, Range{0, 0.999999999}, "", "adam: second-moment decay");
  s.real("optimizer.epsilon", 1e-8, Range{0, 1}, "", "adam: denominator guard");
  s.integer("train.epochs", 50, Range{1, 1e9}, "", "passes over the training set");
  s.integer("train.max_steps", 0, Range{0, 1e15}, "",
            "end the run after this many optimizer steps in all (0: no limit); a run cut "
            "short mid-epoch reports that part of the epoch and checkpoints its position");
  s.integer("train.log_every", 0, Range{0, 1e15}, "",
            "print the step's loss, accuracy and samples/s every N steps on rank 0 (0: never)");
  s.integer("train.accumulate_steps", 1, Range{1, 1 << 20}, "",
            "mlp, sequential: each step's batch in this many micro-batches, their gradients "
            "added before one reduction and update (the same step in 1/N of the memory)");
  s.integer("train.batch_size", 0, Range{0, 1e12}, "",
            "global batch (over all ranks); 0: the whole training set");
  s.integer("train.seed", 0, Range{0, 9.2e18}, "", "seed of the initial weights and the shuffle");
  s.string("output.dir", "kpmap-train-out", {}, "folder for result.json, history.csv, checkpoints");
  s.integer("output.checkpoint_every", 0, Range{0, 1e9}, "epochs",
            "write a checkpoint every N epochs (0: only at the end)");
  s.integer("output.keep", 3, Range{1, 1000}, "", "checkpoints kept (older ones are deleted)");
  return s;
}

}  // namespace kpmap::apps::train
