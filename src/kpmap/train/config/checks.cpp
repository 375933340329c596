// SPDX-License-Identifier: BSD-3-Clause
// What one section of a kpmap-train deck means for another's, one named
// check each, and what is resolved from several sections at once: the
// mesh's data axis, the validation rows, the scaled learning rate, the decay.
#include <kpmap/train/config/sections.hpp>

#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/base/error.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace kpmap::train::detail {

using deck::Deck;

void deck_error(const Deck& d, const std::string& what) {
  throw kpmap::InputError(d.source() + ": " + what, kpmap::ErrorScope::all_ranks);
}

namespace {

int rank_count(MPI_Comm comm) {
  int ranks = 1;
  MPI_Comm_size(comm, &ranks);
  return ranks;
}

// train.mesh.data x train.mesh.model is the run's ranks; data = 0 takes what
// model leaves.
void resolve_mesh(const Deck& d, LoopConfig& t, int ranks) {
  const int model = t.mesh_model, data = t.mesh_data;
  if (ranks % model != 0 || (data > 0 && data * model != ranks)) {
    if (data > 0) {
      throw d.bad("train.mesh.data", "a mesh of " + std::to_string(data) + " x " +
                                         std::to_string(model) +
                                         " ranks (data x model) is not the " +
                                         std::to_string(ranks) + " ranks of this run");
    }
    throw d.bad("train.mesh.model", std::to_string(model) +
                                        " ranks along \"model\" do not divide the " +
                                        std::to_string(ranks) + " ranks of this run");
  }
  if (t.mesh_data == 0) t.mesh_data = ranks / model;
}

// Accumulation and layer-wise sharding need layers; the linear model has none.
void check_linear_layers(const Deck& d, const TrainConfig& c) {
  if (c.model.kind != "linear") return;
  if (c.train.accumulate > 1) {
    throw d.bad("train.accumulate_steps",
                "the linear model reads its whole batch in one pass; accumulation is for mlp "
                "and sequential models");
  }
  if (c.train.sharding == Sharding::gradients || c.train.sharding == Sharding::parameters) {
    throw d.bad("train.sharding",
                "the linear model keeps its gradient and parameters whole "
                "(features + 1 values); \"" +
                    std::string(word_of(c.train.sharding)) +
                    "\" is for mlp and sequential models (\"optimizer\" "
                    "shards the linear model's optimizer state)");
  }
}

// The linear model is fitted by mse.
void check_linear_loss(const Deck& d, const ModelConfig& m) {
  if (m.kind == "linear" && m.loss != "mse") {
    throw d.bad("model.loss",
                "a linear model is fitted by mse; for softmax regression use "
                "model.kind = \"mlp\" with model.hidden = []");
  }
}

// Mixed precision: layers to run in 16 bits, a 16-bit type in this build,
// and no layer-wise sharding yet.
void check_precision(const Deck& d, const TrainConfig& c) {
  if (c.model.precision != "mixed") return;
  if (c.train.sharding == Sharding::gradients || c.train.sharding == Sharding::parameters) {
    throw d.bad("train.sharding", "\"" + std::string(word_of(c.train.sharding)) +
                                      "\" is not yet taken under model.precision = \"mixed\" "
                                      "(\"optimizer\" is)");
  }
  if (c.model.kind == "linear") {
    throw d.bad("model.precision",
                "\"mixed\" is for mlp and sequential models (the linear model has no layers to "
                "run in 16 bits); use \"float\" or \"double\"");
  }
  if (!kpmap::detail::has_half_type) {
    throw d.bad("model.precision",
                "\"mixed\" needs a 16-bit floating-point type, and this Kokkos build (" +
                    kpmap::detail::kokkos_version_string() + ", " +
                    Kokkos::DefaultExecutionSpace::name() +
                    ") has none: Kokkos::Experimental::half_t is float unless Kokkos is built "
                    "for CUDA, HIP or SYCL. Use \"float\" here, or a GPU build of Kokkos");
  }
}

// Each synthetic label is the best of `classes` scores over `classes` hidden
// units of `features` inputs: samples x classes^2 x features multiply-adds
// (about 70 ns each on one core, the truth matrices being drawn as they are
// used). Refused where that would run for minutes without a word.
void check_synthetic_label_cost(const Deck& d, const DataConfig& data, int ranks) {
  if (data.kind != DataKind::synthetic || !data.classification) return;
  const double rows = std::ceil(double(data.samples) / ranks);
  const double per_rank =
      rows * double(data.classes) * double(data.classes) * double(data.features);
  constexpr double limit = 2e9;
  if (per_rank <= limit) return;
  const double fit = std::floor(std::sqrt(limit / (rows * double(data.features))));
  char text[400];
  std::snprintf(text, sizeof text,
                "the labels of a synthetic set of %zu samples, %zu features and %zu classes "
                "cost %.3g multiply-adds per rank (samples x classes^2 x features; minutes to "
                "hours): use at most %.0f classes here, fewer samples or features, more ranks, "
                "or data from a file",
                data.samples, data.features, data.classes, per_rank, std::max(2.0, fit));
  throw d.bad("data.classes", text);
}

// The validation rows: the test files', or the fraction's of the set's last rows.
void resolve_validation(const Deck& d, DataConfig& data) {
  if (!data.test_set) {
    data.validation = std::size_t(std::floor(data.validation_fraction * double(data.samples)));
  }
  if (data.samples - data.validation < 1) {
    deck_error(d, "no training samples are left after the split");
  }
}

// optimizer.scale_lr_with_batch: the linear scaling rule.
void scale_learning_rate(const Deck& d, TrainConfig& c, std::size_t train_rows) {
  if (!d.boolean("optimizer.scale_lr_with_batch")) return;
  c.optimizer.learning_rate *=
      double(global_batch(c.train.batch, train_rows)) / double(d.integer("optimizer.base_batch"));
}

// A decaying schedule's length: step needs it given; cosine, without it,
// decays over the rest of the run.
void resolve_decay(const Deck& d, TrainConfig& c, std::size_t train_rows) {
  OptimizerConfig& o = c.optimizer;
  if (o.schedule == OptimizerConfig::Schedule::constant || o.decay_steps != 0) return;
  if (o.schedule == OptimizerConfig::Schedule::step) {
    throw d.bad("optimizer.decay_steps",
                "optimizer.schedule = \"step\" needs the steps between decays (at least 1)");
  }
  const auto per_epoch = static_cast<long long>(steps_per_epoch(train_rows, c.train.batch));
  const long long planned = c.train.epochs * per_epoch;
  const long long total = c.train.max_steps > 0 ? std::min(c.train.max_steps, planned) : planned;
  o.decay_steps = std::max(1LL, total - o.warmup_steps);
}

// output.expect_val_loss: a range, over a validation set the run holds out.
void check_expected_loss(const Deck& d, const TrainConfig& c) {
  const auto& e = c.expect_val_loss;
  if (e.empty()) return;
  if (e.size() != 2 || e[0] > e[1]) {
    throw d.bad("output.expect_val_loss", "expected [low, high] with low <= high");
  }
  if (c.data.validation == 0) {
    throw d.bad("output.expect_val_loss",
                "it checks the validation loss, and this run holds out no samples (set "
                "data.validation_fraction, or data.test_path for IDX images)");
  }
}

// An optimizer that takes whole-batch steps (L-BFGS) gets the whole set.
void check_full_batch(const Deck& d, const TrainConfig& c, std::size_t train_rows) {
  if (!find_optimizer(c.optimizer.kind)->full_batch ||
      global_batch(c.train.batch, train_rows) >= train_rows) {
    return;
  }
  std::string minibatch;
  for (const OptimizerInfo* o : registered_optimizers()) {
    if (!o->full_batch) minibatch += (minibatch.empty() ? "\"" : ", \"") + o->name + "\"";
  }
  throw d.bad("train.batch_size", "optimizer.kind = \"" + c.optimizer.kind +
                                      "\" takes whole-batch steps (train.batch_size = 0); use " +
                                      minibatch + " for minibatches");
}

}  // namespace

void check_across(const Deck& d, TrainConfig& c, MPI_Comm comm) {
  const int ranks = rank_count(comm);
  resolve_mesh(d, c.train, ranks);
  check_linear_layers(d, c);
  check_precision(d, c);
  check_linear_loss(d, c.model);
  check_synthetic_label_cost(d, c.data, ranks);
  resolve_validation(d, c.data);
  const std::size_t train_rows = c.data.samples - c.data.validation;
  scale_learning_rate(d, c, train_rows);
  resolve_decay(d, c, train_rows);
  check_expected_loss(d, c);
  check_full_batch(d, c, train_rows);
}

}  // namespace kpmap::train::detail
