// SPDX-License-Identifier: BSD-3-Clause
// kpmap-train's run for one precision: the model, its data and the Trainer
// for values T computed in C, with what a run reports besides checkpoints.
// Included by the one source file of each precision (double.cpp, float.cpp,
// mixed.cpp), so that the three training stacks compile side by side.

#pragma once

#include <kpmap/apps/options.hpp>
#include <kpmap/apps/train/precisions.hpp>

#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/kpmap.hpp>
#include <kpmap/run/output.hpp>
#include <kpmap/runtime/memory.hpp>
#include <kpmap/train/config.hpp>
#include <kpmap/train/epoch_log.hpp>
#include <kpmap/train/linear.hpp>
#include <kpmap/train/result.hpp>
#include <kpmap/train/sequential.hpp>

#include <Kokkos_Core.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace kpmap::apps::detail {

namespace fs = std::filesystem;
using kpmap::deck::Deck;
using Mem = Kokkos::DefaultExecutionSpace::memory_space;
using kpmap::Phase;

// What a run reports besides checkpoints: history.csv, the progress line,
// result.json. The loop itself is the library's Trainer.
template <class Model>
int run_training(const kpmap::train::TrainConfig& c, const Deck& deck,
                 const kpmap::apps::RunOptions& opts, const kpmap::Runtime& rt, Model& model,
                 const kpmap::train::Shard<typename Model::value_type, Mem>& train_set,
                 const kpmap::train::Shard<typename Model::value_type, Mem>& val_set,
                 kpmap::PhaseTimes& times, double t_start, const fs::path& out,
                 const kpmap::Mesh& mesh) {
  const bool root = rt.rank() == 0;
  const std::size_t n_train = c.data.samples - c.data.validation;
  const auto tc = kpmap::train::trainer_config(c, out, deck.to_toml(), rt.size());
  // Batches over "data"; checkpoints and run control over every rank.
  kpmap::train::Trainer<Model> trainer(model, c.optimizer, tc, mesh.axis("data"),
                                       mesh.axis("devices"));
  if (!opts.restart.empty()) {
    kpmap::train::check_restart(deck, opts.restart, rt.comm());
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
  const auto held = trainer.largest_state_bytes();
  if (root) {
    std::printf(
        "kpmap-train: %s model (%zu parameters%s, %s), %zu training + %zu validation samples "
        "on %d ranks%s, batch %s, optimizer %s, lr %g\n",
        c.model.kind.c_str(), model.whole_parameter_count(),
        c.train.mesh_model > 1
            ? (", " + std::to_string(model.parameter_count()) + " on rank 0").c_str()
            : "",
        c.model.precision.c_str(), n_train, c.data.validation, rt.size(),
        c.train.mesh_model > 1 ? (" (" + std::to_string(c.train.mesh_data) + " data x " +
                                  std::to_string(c.train.mesh_model) + " model)")
                                     .c_str()
                               : "",
        c.train.batch == 0 ? "full" : std::to_string(c.train.batch).c_str(),
        deck.string("optimizer.kind").c_str(), c.optimizer.learning_rate);
    std::printf("kpmap-train: rank 0 runs on %s\n", kpmap::apps::execution_text(rt).c_str());
    kpmap::apps::print_blas_lines("kpmap-train", rt);
    const std::size_t buffers = trainer.work_buffer_bytes();
    std::printf(
        "kpmap-train: each rank holds parameters %s, gradients %s, optimizer state %s%s "
        "(train.sharding = %s)\n",
        kpmap::format_bytes(double(held.parameters)).c_str(),
        kpmap::format_bytes(double(held.gradients)).c_str(),
        kpmap::format_bytes(double(held.optimizer)).c_str(),
        buffers > 0 ? (", and layer work buffers " + kpmap::format_bytes(double(buffers))).c_str()
                    : "",
        kpmap::word_of(c.train.sharding));
    kpmap::files::write_atomic((out / kpmap::run_file::deck).string(), deck.to_toml());
  }

  const bool classes = c.data.classification;
  // About 15 progress lines whatever the run's length (output.progress_every).
  const long long planned = kpmap::train::planned_epochs(
      c.train, first_epoch, kpmap::train::steps_per_epoch(n_train, c.train.batch));
  kpmap::train::EpochLog log(
      out, first_epoch, c.train.epochs, !opts.restart.empty(), classes, c.data.validation > 0, root,
      kpmap::progress_cadence(c.output.progress_every, planned), first_epoch + planned);
  const kpmap::train::FitResult res =
      trainer.fit(train_set, val_set, [&](const kpmap::train::EpochReport& r) { log(r); });
  log.finish();
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
        c.train.max_steps, res.step, res.steps_per_epoch, res.epoch + 1);
  }
  times += trainer.times();

  const auto report = times.reduce(MPI_Wtime() - t_start, rt.comm());
  auto result = kpmap::train::training_result(c, rt.size(), model, res, log, held, root);
  int code = kpmap::write_result(result.json, out, res.stopped_by, res.checkpoint, report, root);
  // A run that finished with a wrong answer has not succeeded.
  if (code == kpmap::exit_code::success && result.check_failed) {
    code = kpmap::exit_code::check_failed;
  }
  if (root) {
    std::printf("kpmap-train: done in %s; results in %s\nkpmap-train: %s",
                kpmap::Progress::format(report.wall).c_str(),
                (out / kpmap::run_file::result).c_str(), kpmap::phase_table(report).c_str());
    std::printf("kpmap-train: plots (loss.png): %s\n", kpmap::plot_command(out).c_str());
    if (res.stopped_by) {
      std::printf("kpmap-train: continue with --restart %s\n", res.checkpoint.c_str());
    }
  }
  return code;
}

// T: data, parameters and optimizer; C: what the layers compute in.
template <class T, class C = T>
int train_in(kpmap::train::TrainConfig c, const Deck& deck, const kpmap::apps::RunOptions& opts,
             const kpmap::Runtime& rt) {
  const MPI_Comm comm = rt.comm();
  // The ranks as a mesh of data x model (train.mesh); layers split over
  // "model" (parallel = "column" or "row") are built on it.
  const kpmap::Mesh mesh({{"data", c.train.mesh_data}, {"model", c.train.mesh_model}}, comm);
  // The model's layers, built once and checked before anything is written.
  auto layers = [&] {
    const kpmap::UseMesh use(mesh);
    return kpmap::train::build_model_layers<T, C, Mem>(deck, c);
  }();
  kpmap::PhaseTimes times;
  const double t_start = MPI_Wtime();
  const fs::path out = kpmap::prepare_output_dir(c.output.dir, comm);
  const kpmap::OutputLock lock(out, comm);  // one run per folder
  kpmap::check_folder_app(out, "kpmap-train", comm);
  kpmap::check_outputs(out, kpmap::run_files({"loss.png"}), {opts.deck, opts.restart}, comm);
  kpmap::apps::start_trace(opts, out, kpmap::run_files({"loss.png"}), comm);
  const std::size_t n_train = c.data.samples - c.data.validation;
  {
    std::string breakdown;
    const double bytes = kpmap::train::memory_estimate(c, rt.size(), sizeof(T), breakdown);
    kpmap::require_memory(bytes,
                          deck.source() + " (" + std::to_string(c.data.samples) + " samples of " +
                              std::to_string(c.data.features) + " features)",
                          breakdown, comm);
  }

  // ---- data -----------------------------------------------------------------
  kpmap::train::Shard<T, Mem> train_set, val_set;
  {
    auto t = times.scope(Phase::io);
    std::tie(train_set, val_set) = kpmap::train::load_data<T, Mem>(c.data, mesh.axis("data"));
  }

  // ---- model, then the training loop ----------------------------------------------
  // A rank may hold all of a batch.
  const std::size_t batch_rows = kpmap::train::batch_rows_held(
      c.train.batch, n_train, std::max<std::size_t>(train_set.rows(), 1));
  const std::size_t capacity = kpmap::train::work_capacity(c, batch_rows, val_set.rows());
  if (c.model.kind == "linear") {
    kpmap::train::LinearModel<T, Mem> model(c.data.features, capacity);
    return run_training(c, deck, opts, rt, model, train_set, val_set, times, t_start, out, mesh);
  }
  kpmap::train::Sequential<T, Mem, C> model(c.data.input, std::move(layers),
                                            kpmap::train::Loss{c.model.loss, c.model.loss_keys},
                                            capacity);
  model.set_loss_scale(c.model.loss_scale);
  model.initialize(c.train.seed);
  return run_training(c, deck, opts, rt, model, train_set, val_set, times, t_start, out, mesh);
}

}  // namespace kpmap::apps::detail
