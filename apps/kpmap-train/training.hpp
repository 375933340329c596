#pragma once
// kpmap-train's run at one precision: data, model, the library's Trainer, and
// what a run reports (history.csv, progress, result.json). The template is
// instantiated once per precision, each in a file of its own (train_double.cpp,
// train_float.cpp), which the build compiles side by side.

#include "../common/driver.hpp"
#include "config.hpp"

#include <kpmap/checkpoint.hpp>
#include <kpmap/detail/checked.hpp>
#include <kpmap/detail/kokkos_compat.hpp>
#include <kpmap/kpmap.hpp>
#include <kpmap/train/data.hpp>
#include <kpmap/train/layers/registry.hpp>
#include <kpmap/train/linear.hpp>
#include <kpmap/train/optimizer.hpp>
#include <kpmap/train/sequential.hpp>
#include <kpmap/train/trainer.hpp>
#include <kpmap/version.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

namespace kpmap::apps::train {

namespace fs = std::filesystem;
using kpmap::apps::Phase;
using kpmap::deck::Deck;

// "[a, b, ...]" for the terminal: the first and last few of a long vector
// (result.json holds every value).
inline std::string join(const std::vector<double>& v, int digits = 6) {
  constexpr std::size_t shown = 8;  // at each end
  std::ostringstream s;
  s.precision(digits);
  s << "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v.size() > 2 * shown && i == shown) {
      s << ", ... " << v.size() - 2 * shown << " more ...";
      i = v.size() - shown - 1;
      continue;
    }
    s << (i ? ", " : "") << v[i];
  }
  return s.str() + "]";
}

template <class V>
std::vector<double> to_vector(const V& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  std::vector<double> out(h.size());
  for (std::size_t i = 0; i < h.size(); ++i) out[i] = double(h.data()[i]);
  return out;
}

// Samples the work arrays hold: a micro-batch's share of the batch rows a
// rank may get (train.accumulate_steps splits it); evaluation goes in chunks
// of this, so dense models take chunks of up to 4096 validation rows, while
// convolutions keep theirs at the batch (their patch matrices are large).
inline std::size_t work_capacity(const Config& c, std::size_t batch_rows, std::size_t val_rows) {
  const std::size_t micro = (batch_rows + c.accumulate - 1) / c.accumulate;
  const bool conv = std::any_of(c.layers.begin(), c.layers.end(),
                                [](const auto& l) { return l.type == "conv2d"; });
  return conv ? micro : std::max(micro, std::min<std::size_t>(val_rows, 4096));
}

// Bytes one rank allocates: its rows of the data (and, from HDF5, the
// doubles they are read into), the batch order, the parameters with their
// gradient and optimizer moments, and the MLP's work arrays.
template <class T>
double memory_estimate(const Config& c, int ranks, std::string& breakdown) {
  const double n_train = double(c.samples - c.validation);
  const double rows = std::ceil(n_train / ranks) + std::ceil(double(c.validation) / ranks);
  double data = rows * double(c.features + 1) * sizeof(T) + std::ceil(n_train / ranks) * 8.0;
  if (c.data_kind == "hdf5") data += std::ceil(n_train / ranks) * double(c.features + 1) * 8.0;
  const double params = c.model == "linear" ? double(c.features + 1) : c.parameters;
  const int moments = c.optimizer.kind == kpmap::train::OptimizerConfig::Kind::adam       ? 2
                      : c.optimizer.kind == kpmap::train::OptimizerConfig::Kind::momentum ? 1
                                                                                          : 0;
  const double model = params * (2 + moments) * sizeof(T);
  double work = 0;
  if (c.model != "linear") {
    const auto batch_rows =
        std::size_t(c.batch == 0 ? std::ceil(n_train / ranks) : std::min(double(c.batch), n_train));
    const auto val_rows = std::size_t(std::ceil(double(c.validation) / ranks));
    work = double(work_capacity(c, batch_rows, val_rows)) * (c.work_per_sample * sizeof(T) + 8.0);
  }
  breakdown = "data " + kpmap::format_bytes(data) + ", parameters with gradients and optimizer " +
              "state " + kpmap::format_bytes(model) + ", work arrays " + kpmap::format_bytes(work);
  return data + model + work;
}

// What a run reports besides checkpoints: history.csv, the progress line,
// result.json. The loop itself is the library's Trainer.
template <class Model>
int run_training(const Config& c, const Deck& deck, const kpmap::apps::RunOptions& opts,
                 const kpmap::Runtime& rt, Model& model,
                 const kpmap::train::Shard<typename Model::value_type, Mem>& train_set,
                 const kpmap::train::Shard<typename Model::value_type, Mem>& val_set,
                 kpmap::apps::PhaseTimes& times, double t_start, const fs::path& out) {
  const bool root = rt.rank() == 0;
  const std::size_t n_train = c.samples - c.validation;
  kpmap::train::TrainerConfig tc;
  tc.epochs = c.epochs;
  tc.batch = c.batch;
  tc.seed = c.train_seed;
  tc.accumulate = c.accumulate;
  tc.max_steps = c.max_steps;
  tc.log_every = c.log_every;
  tc.checkpoint_every = c.checkpoint_every;
  tc.keep = c.keep;
  tc.output_dir = out.string();
  tc.meta.app = "kpmap-train";
  tc.meta.deck = deck.to_toml();
  tc.meta.decomposition = std::to_string(rt.size()) + " ranks; parameters replicated";
  kpmap::train::Trainer<Model> trainer(model, c.optimizer, tc, "devices");
  if (!opts.restart.empty()) {
    trainer.restart(opts.restart);
    if (root) {
      const auto& at = trainer.position();
      std::printf("kpmap-train: restarting from %s after epoch %lld", opts.restart.c_str(),
                  at.epoch);
      if (at.step > 0) std::printf(" and %lld steps of the next", at.step);
      std::printf("\n");
    }
  }
  const long long first_epoch = trainer.position().epoch;
  if (root) {
    std::printf(
        "kpmap-train: %s model (%zu parameters, %s), %zu training + %zu validation samples "
        "on %d ranks, batch %s, optimizer %s, lr %g\n",
        c.model.c_str(), model.parameter_count(), c.precision.c_str(), n_train, c.validation,
        rt.size(), c.batch == 0 ? "full" : std::to_string(c.batch).c_str(),
        deck.string("optimizer.kind").c_str(), c.optimizer.learning_rate);
    std::printf("kpmap-train: rank 0 runs on %s\n", kpmap::apps::execution_text(rt).c_str());
  }

  // history.csv continues a restarted run's file.
  const fs::path history = out / "history.csv";
  kpmap::apps::CsvTable hist(
      history, "epoch,train_loss,val_loss,accuracy,samples_per_second,wall_s,train_accuracy",
      first_epoch > 0, root);
  kpmap::apps::Progress progress(first_epoch, c.epochs);
  const bool classes = c.loss == "cross_entropy";
  // The accuracy reported: the held-out set's where there is one.
  auto accuracy_of = [&](const kpmap::train::EpochReport& r) {
    return c.validation > 0 && classes ? r.held_out.accuracy : r.train_accuracy;
  };
  auto on_epoch = [&](const kpmap::train::EpochReport& r) {
    if (!root) return;
    using kpmap::apps::Json;
    // No validation set: NaN, written as null in JSON and empty in CSV.
    const double rate = double(r.samples) / r.seconds;
    std::ostringstream line;
    line << r.epoch << ',' << Json::number(r.train_loss) << ','
         << (c.validation > 0 ? Json::number(r.held_out.loss) : "") << ',' << accuracy_of(r) << ','
         << rate << ',' << progress.elapsed() << ','
         << (classes ? Json::number(r.train_accuracy) : "");
    hist.row(line.str());
    char val[48] = "";
    if (c.validation > 0) std::snprintf(val, sizeof val, "  val_loss %.6e", r.held_out.loss);
    std::printf("epoch %lld/%lld  train_loss %.6e%s%s  %.4g samples/s  elapsed %s  ETA %s\n",
                r.epoch, c.epochs, r.train_loss, val,
                classes ? ("  accuracy " + std::to_string(accuracy_of(r))).c_str() : "", rate,
                kpmap::apps::Progress::format(progress.elapsed()).c_str(),
                kpmap::apps::Progress::format(progress.eta(r.epoch)).c_str());
    std::fflush(stdout);
  };
  const kpmap::train::FitResult res = trainer.fit(train_set, val_set, on_epoch);
  if (root && res.stopped_by != 0) {
    if (res.mid_epoch) {
      std::printf("kpmap-train: %s received: stopped after step %lld of %zu in epoch %lld\n",
                  kpmap::StopSignals::name(res.stopped_by).c_str(), res.step, res.steps_per_epoch,
                  res.epoch + 1);
    } else {
      std::printf("kpmap-train: %s received: stopped after epoch %lld\n",
                  kpmap::StopSignals::name(res.stopped_by).c_str(), res.epoch);
    }
  } else if (root && res.max_steps_reached && res.mid_epoch) {
    std::printf(
        "kpmap-train: train.max_steps = %lld reached after step %lld of %zu in epoch %lld\n",
        c.max_steps, res.step, res.steps_per_epoch, res.epoch + 1);
  }
  times.add(Phase::compute, trainer.times().compute);
  times.add(Phase::collectives, trainer.times().collectives);
  times.add(Phase::checkpoint, trainer.times().io);  // the Trainer's io: checkpoints

  // ---- result.json --------------------------------------------------------------
  // NaN (null in result.json) until an epoch completes.
  const double nan = std::nan("");
  const auto& r = res.last;
  const auto report = times.reduce(MPI_Wtime() - t_start, rt.comm());
  kpmap::apps::Json j;
  j.set("app", "kpmap-train")
      .set("kpmap_version", KPMAP_VERSION_STRING)
      .set("deck", deck.source())
      .set("ranks", rt.size())
      .set("model", c.model)
      .set("precision", c.precision)
      .set("parameters", static_cast<long long>(model.parameter_count()))
      .set("train_samples", static_cast<long long>(n_train))
      .set("validation_samples", static_cast<long long>(c.validation))
      .set("epochs", c.epochs)
      .set("train_loss", res.has_report ? r.train_loss : nan)
      .set("val_loss", res.has_report && c.validation > 0 ? r.held_out.loss : nan)
      .set("samples_per_second", res.samples_per_second);
  if (classes) {
    j.set("accuracy", res.has_report ? accuracy_of(r) : nan)
        .set("train_accuracy", res.has_report ? r.train_accuracy : nan);
    if (c.validation > 0) {
      // The held-out set's metrics: the test files', or the validation split's.
      std::vector<long long> counts(r.held_out.confusion.begin(), r.held_out.confusion.end());
      j.set("test_accuracy", res.has_report ? r.held_out.accuracy : nan)
          .set("test_loss", res.has_report ? r.held_out.loss : nan)
          .set("test_set", c.test_set ? c.test_path : "validation split")
          .set("confusion", counts);
    }
  }
  if constexpr (std::is_same_v<Model, kpmap::train::LinearModel<typename Model::value_type, Mem>>) {
    const auto w = to_vector(model.params().w);
    const auto b = to_vector(model.params().b);
    j.set("params", kpmap::apps::Json().set("w", w).set("b", b[0]));
    if (c.data_kind == "synthetic") {
      const kpmap::train::SyntheticRegression g{c.samples, c.features, c.data_seed, c.noise};
      std::vector<double> tw(c.features);
      for (std::size_t i = 0; i < c.features; ++i) tw[i] = g.true_w(i);
      j.set("true_params", kpmap::apps::Json().set("w", tw).set("b", g.true_b()));
      if (root) {
        std::printf("learned w = %s  b = %.6g\n   true w = %s  b = %.6g\n", join(w).c_str(), b[0],
                    join(tw).c_str(), g.true_b());
      }
    }
  }
  const int code = kpmap::apps::finish_result(j, out / "result.json", res.stopped_by,
                                              res.checkpoint, report, root);
  kpmap::apps::make_plots("train", out, root);
  if (root) {
    std::printf("kpmap-train: done in %s; results in %s\nkpmap-train: %s",
                kpmap::apps::Progress::format(report.wall).c_str(), (out / "result.json").c_str(),
                kpmap::apps::phase_table(report).c_str());
    if (res.stopped_by) {
      std::printf("kpmap-train: continue with --restart %s\n", res.checkpoint.c_str());
    }
  }
  return code;
}

/// \brief The whole run at one precision. T: data, parameters and optimizer;
/// C: what the layers compute in.
template <class T, class C>
int run(const Config& c, const Deck& deck, const kpmap::apps::RunOptions& opts,
        const kpmap::Runtime& rt) {
  const MPI_Comm comm = rt.comm();
  kpmap::apps::PhaseTimes times;
  const double t_start = MPI_Wtime();
  const fs::path out = kpmap::apps::prepare_output_dir(c.output, comm);
  const std::size_t n_train = c.samples - c.validation;
  {
    std::string breakdown;
    const double bytes = memory_estimate<T>(c, rt.size(), breakdown);
    kpmap::require_memory(bytes,
                          deck.source() + " (" + std::to_string(c.samples) + " samples of " +
                              std::to_string(c.features) + " features)",
                          breakdown, comm);
  }

  // ---- data -----------------------------------------------------------------
  kpmap::train::Shard<T, Mem> train_set, val_set;
  {
    auto t = times.scope(Phase::io);
    const kpmap::AxisRef axis("devices");
    if (c.data_kind == "idx") {
      train_set =
          kpmap::train::read_idx_shard<T, Mem>(c.path, c.train_images, c.labels, c.train_labels, 0,
                                               n_train, c.input.channels, c.scaling, axis);
      val_set = c.test_set ? kpmap::train::read_idx_shard<T, Mem>(
                                 c.test_path, c.test_images, c.test_labels, c.test_labels_info, 0,
                                 c.validation, c.input.channels, c.scaling, axis)
                           : kpmap::train::read_idx_shard<T, Mem>(
                                 c.path, c.train_images, c.labels, c.train_labels, n_train,
                                 c.validation, c.input.channels, c.scaling, axis);
    } else if (c.data_kind == "images") {
      const kpmap::train::SyntheticImages g(c.samples, c.input.height, c.input.width,
                                            c.input.channels, c.classes, c.data_seed, c.noise);
      train_set = kpmap::train::generate_shard<T, Mem>(g, 0, n_train, axis);
      val_set = kpmap::train::generate_shard<T, Mem>(g, n_train, c.validation, axis);
    } else if (c.data_kind == "hdf5") {
      const kpmap::train::PixelScaling* scaling = c.hdf5_bytes ? &c.scaling : nullptr;
      train_set = kpmap::train::read_shard<T, Mem>(c.path, c.x_name, c.y_name, 0, n_train, axis,
                                                   scaling, c.input.channels);
      val_set = kpmap::train::read_shard<T, Mem>(c.path, c.x_name, c.y_name, n_train, c.validation,
                                                 axis, scaling, c.input.channels);
    } else if (c.loss == "mse") {
      const kpmap::train::SyntheticRegression g{c.samples, c.features, c.data_seed, c.noise};
      train_set = kpmap::train::generate_shard<T, Mem>(g, 0, n_train, axis);
      val_set = kpmap::train::generate_shard<T, Mem>(g, n_train, c.validation, axis);
    } else {
      const kpmap::train::SyntheticClassification g{c.samples, c.features, c.classes, c.data_seed};
      train_set = kpmap::train::generate_shard<T, Mem>(g, 0, n_train, axis);
      val_set = kpmap::train::generate_shard<T, Mem>(g, n_train, c.validation, axis);
    }
  }
  if (c.loss == "cross_entropy") {
    // Labels must be class indices: checked on every rank's rows, agreed by all.
    int badrow = -1;
    for (const auto* set : {&train_set, &val_set}) {
      auto y = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), set->y);
      for (std::size_t i = 0; i < y.size() && badrow < 0; ++i) {
        const double v = double(y(i));
        if (!(v >= 0 && v < double(c.classes) && v == std::floor(v))) badrow = int(i);
      }
    }
    if (kpmap::pmax(badrow >= 0 ? 1 : 0, "devices") != 0) {
      throw kpmap::InputError(deck.source() +
                                  ": key 'data.classes': a target is not a class "
                                  "index in [0, " +
                                  std::to_string(c.classes) + ")",
                              kpmap::ErrorScope::all_ranks);
    }
  }

  // ---- model, then the training loop ----------------------------------------------
  // A rank may hold all of a batch.
  const std::size_t batch_rows =
      c.batch == 0 ? std::max<std::size_t>(train_set.rows(), 1) : std::min(c.batch, n_train);
  const std::size_t capacity = work_capacity(c, batch_rows, val_set.rows());
  if (c.model == "linear") {
    kpmap::train::LinearModel<T, Mem> model(c.features, capacity);
    return run_training(c, deck, opts, rt, model, train_set, val_set, times, t_start, out);
  }
  kpmap::train::Sequential<T, Mem, C> model(
      c.input, kpmap::train::build_layers<C, Mem>(c.input, c.layers),
      c.loss == "mse" ? kpmap::train::Loss::mse : kpmap::train::Loss::cross_entropy, capacity);
  model.set_loss_scale(c.loss_scale);
  model.initialize(c.train_seed);
  return run_training(c, deck, opts, rt, model, train_set, val_set, times, t_start, out);
}

}  // namespace kpmap::apps::train
