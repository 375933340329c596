// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief The training loop over a mesh: each global batch sharded over "data"
/// (every rank works on the samples of the batch it holds), the gradient summed
/// over it, the same optimizer update on every rank of a "data" group; the
/// parameters replicated over "data" (train.sharding = "replicated"), or the
/// optimizer's state, the gradients and the parameters themselves sharded over
/// it (ZeRO 1, 2 and 3), and a layer's parameters split over "model" (tensor
/// parallelism); evaluation after every epoch, checkpoints it restarts from bit
/// for bit, stop signals, a hang watchdog and fault injection.
///
/// A Trainer drives any model with the interface of Sequential (and of
/// LinearModel): `value_type`, `memory_space`, `Params`, `params()`,
/// `grads()`, `exec()`, `loss_and_gradient(...)`, `evaluate(...)` and
/// `for_each_named(tree, f)`, and `Exec` and `StepLoss` (the step's loss on the
/// device: SumStepLoss or MeanStepLoss). What the run prints and keeps
/// besides checkpoints is the application's: it gets an EpochReport after
/// every epoch.
///
/// A step is quiet: it allocates nothing, fences no more than the model's
/// collectives need and copies nothing to the host; its loss is added to
/// the epoch's sums on the device (train/epoch_sums.hpp).

#include <kpmap/base/error.hpp>
#include <kpmap/collectives/checked.hpp>
#include <kpmap/collectives/collectives.hpp>
#include <kpmap/io/checkpoint.hpp>
#include <kpmap/run/control.hpp>
#include <kpmap/run/output.hpp>
#include <kpmap/run/output_keys.hpp>
#include <kpmap/run/phases.hpp>
#include <kpmap/tools/profiling.hpp>
#include <kpmap/train/batches.hpp>
#include <kpmap/train/data.hpp>
#include <kpmap/train/epoch_sums.hpp>
#include <kpmap/train/loop.hpp>
#include <kpmap/train/model.hpp>
#include <kpmap/train/optimizers/optimizer.hpp>
#include <kpmap/train/position.hpp>
#include <kpmap/train/report.hpp>
#include <kpmap/train/saved_arrays.hpp>
#include <kpmap/train/sharding.hpp>
#include <kpmap/train/step_log.hpp>
#include <kpmap/transport/host.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

namespace kpmap::train {

/// \brief How a Trainer runs: its loop, and where its checkpoints go.
struct TrainerConfig : LoopConfig {
  /// Where checkpoints go (created if missing), every how many epochs (0:
  /// only at the end), and how many are kept.
  OutputConfig output{"."};
  bool checkpoints = true;    ///< false: write none (nothing to restart from)
  checkpoint::Metadata meta;  ///< app, deck and decomposition stamped on every checkpoint
};

template <class Model>
class Trainer {
 public:
  using T = typename Model::value_type;
  using M = typename Model::memory_space;
  using P = typename Model::Params;
  using Exec = typename Model::Exec;
  using StepLoss = typename Model::StepLoss;

  /// \brief Trains `model` data-parallel over `axis`.
  Trainer(Model& model, const OptimizerConfig& optimizer, TrainerConfig config, AxisRef axis)
      : Trainer(model, optimizer, std::move(config), axis, axis) {}
  /// \brief Trains `model` data-parallel over `axis`, on a mesh whose ranks
  /// are `all` (`axis` and the axes the model's layers are split over, such
  /// as "model": tensor parallelism): batches are split and gradients summed
  /// over `axis`, checkpoints and run control span `all`.
  Trainer(Model& model, const OptimizerConfig& optimizer, TrainerConfig config, AxisRef axis,
          AxisRef all)
      : model_(model),
        opt_(config.sharding != Sharding::replicated
                 ? Optimizer<T, M, P>(optimizer, model.params(), axis)
                 : Optimizer<T, M, P>(optimizer, model.params())),
        c_(std::move(config)),
        axis_(axis),
        all_(all),
        first_of_data_index_(kpmap::transport::first_at_index(axis->index(), all->comm())) {
    check_mesh();
    // From here on the config says the mesh the axes make.
    c_.mesh_data = axis_->size();
    c_.mesh_model = all_->size() / axis_->size();
    // The arrays' names and shapes, which the checkpoints keep whatever the
    // sharding (the parameters are not all here once sharded), and where a
    // layer split over a mesh axis keeps its block of each.
    arrays_ = saved_arrays(model_);
    if (c_.sharding == Sharding::gradients || c_.sharding == Sharding::parameters) {
      if constexpr (shards) {
        if (c_.sharding == Sharding::parameters) {
          model_.shard_parameters(axis_);
        } else {
          model_.shard_gradients(axis_);
        }
      } else {
        throw Error(std::string("kpmap::train::Trainer: this model keeps its gradient and "
                                "parameters whole (train.sharding = \"") +
                    word_of(c_.sharding) + "\")");
      }
    }
  }

  /// TrainerConfig's mesh (train.mesh) is the one the axes make: `axis`
  /// is "data", `all` is data x model. Where the config says nothing (0,
  /// its default) the axes decide; a config that asks for another mesh, a
  /// model axis the axes do not give above all (it would train a split
  /// model as if whole), is refused, naming the field to set.
  void check_mesh() const {
    const int data = axis_->size(), all = all_->size();
    const int model = all % data == 0 ? all / data : 0;
    const bool model_differs = c_.mesh_model != 0 && c_.mesh_model != model;
    const bool data_differs = c_.mesh_data != 0 && c_.mesh_data != data;
    if (model == 0 || model_differs || data_differs) {
      const std::string fix =
          model == 0 ? std::string(
                           "pass mesh.axis(\"data\") and mesh.axis(\"devices\") of one "
                           "kpmap::Mesh")
          : model_differs ? "set TrainerConfig::mesh_model = " + std::to_string(model) +
                                " (or leave it at 0, its default: the axes decide)"
                          : "set TrainerConfig::mesh_data = " + std::to_string(data) +
                                " (or leave it at 0, its default)";
      throw InputError(
          "kpmap::train::Trainer: TrainerConfig asks for a mesh of " +
              (c_.mesh_data != 0 ? std::to_string(c_.mesh_data) : std::string("all")) + " data x " +
              (c_.mesh_model != 0 ? std::to_string(c_.mesh_model) : std::string("any")) +
              " model ranks (mesh_data, mesh_model), but the Trainer was given axis '" +
              axis_->name() + "' of " + std::to_string(data) + " ranks within " +
              std::to_string(all) + " ranks in all (a mesh of " + std::to_string(data) + " x " +
              std::to_string(model) + "): " + fix +
              ". For a model split over \"model\": build kpmap::Mesh mesh({{\"data\", D}, "
              "{\"model\", M}}), the model's layers under kpmap::UseMesh(mesh), and pass "
              "mesh.axis(\"data\"), mesh.axis(\"devices\") to the Trainer",
          ErrorScope::all_ranks);
    }
  }

  const Optimizer<T, M, P>& optimizer() const { return opt_; }
  /// \brief Bytes this rank holds of parameters, gradients and optimizer
  /// state: all of each when replicated, its part of the optimizer's state
  /// when that is sharded (largest_state_bytes: the most any rank holds).
  StateBytes state_bytes() const {
    StateBytes b;
    const auto bytes = [](const auto& v) {
      return v.span() * sizeof(typename std::decay_t<decltype(v)>::value_type);
    };
    model_.params().for_each_view([&](const auto& v) { b.parameters += bytes(v); });
    model_.grads().for_each_view([&](const auto& v) { b.gradients += bytes(v); });
    if constexpr (shards) {
      if (model_.gradients_sharded()) b.gradients = bytes(model_.gradient_part());
      if (model_.parameters_sharded()) b.parameters = bytes(model_.parameter_part());
    }
    for (const auto& kind : opt_.state()) {
      for (const auto& v : kind.second) b.optimizer += bytes(v);
    }
    return b;
  }
  /// \brief Bytes of the work buffers a sharded model writes each layer's
  /// gradient into and gathers each layer's parameters into (two of each,
  /// the size of the largest layers): none when they are whole.
  std::size_t work_buffer_bytes() const {
    std::size_t b = 0;
    if constexpr (shards) {
      if (model_.gradients_sharded()) b += model_.gradient_bucket_bytes();
      if (model_.parameters_sharded()) b += model_.parameter_bucket_bytes();
    }
    return b;
  }
  /// \brief The most bytes of each kind that any rank holds (uneven parts
  /// differ by an element). Collective over the axis.
  StateBytes largest_state_bytes() const {
    const StateBytes mine = state_bytes();
    std::uint64_t b[3] = {mine.parameters, mine.gradients, mine.optimizer};
    kpmap::pmax(b, 3, *all_);
    return {static_cast<std::size_t>(b[0]), static_cast<std::size_t>(b[1]),
            static_cast<std::size_t>(b[2])};
  }
  /// \brief What each rank keeps of the training state.
  Sharding sharding() const { return c_.sharding; }
  /// \brief Seconds spent so far: compute (steps, updates, evaluation),
  /// collectives (waiting on the gradient's reduction) and checkpoint (written
  /// and read); `times += trainer.times()` adds them to a run's report.
  const PhaseTimes& times() const { return times_; }
  const TrainPosition& position() const { return at_; }

  /// \brief Continues from a checkpoint: parameters, optimizer state and
  /// position. Collective. \throws InputError naming the file when it does
  /// not fit this model or run.
  void restart(const std::string& file) {
    const double t0 = MPI_Wtime();
    checkpoint::Reader r(file, all_->comm(), c_.meta.app);
    // The optimizer's arrays that are never negative (Adam's second moment):
    // a negative value is a damaged file, and would train into NaN.
    std::vector<std::string> never_negative;
    for (std::size_t k = 0; k < opt_.state().size(); ++k) {
      if (opt_.never_negative(k))
        never_negative.push_back("optimizer." + opt_.state()[k].first + ".");
    }
    for_each_saved(
        [&](const std::string& name, const auto& v, const checkpoint::Block& block, bool) {
          const bool positive_part =
              std::any_of(never_negative.begin(), never_negative.end(),
                          [&](const std::string& prefix) { return name.rfind(prefix, 0) == 0; });
          r.read(model_.exec(), name, v, block,
                 positive_part ? checkpoint::Reader::Values::non_negative
                               : checkpoint::Reader::Values::finite);
        });
    const SavedPosition saved = read_position(r, file, static_cast<long long>(c_.seed));
    check_resumable(saved, file, c_);
    opt_.set_steps(saved.optimizer_steps);
    at_ = {};
    at_.epoch = saved.epoch;
    at_.step = saved.step_in_epoch;
    if (at_.step > 0) {
      Kokkos::View<double*, Kokkos::HostSpace> sums("kpmap::train::epoch_sums", 2);
      r.read_replicated(Kokkos::DefaultHostExecutionSpace(), "progress.epoch_sums", sums);
      at_.loss_sum = sums(0);
      at_.correct_sum = sums(1);
    }
    restart_file_ = file;
    times_.add(Phase::checkpoint, MPI_Wtime() - t0);
  }

  /// \brief Trains from the current position to config.epochs (or
  /// max_steps, or a stop signal), evaluating `held_out` (if it has rows
  /// anywhere) after every epoch and calling `on_epoch` with the figures.
  /// Checkpoints every config.output.checkpoint_every epochs, at the end, and where
  /// a signal or max_steps stops the run. Collective over the axis.
  /// \throws Error (exit_code::diverged) when the loss stops being finite.
  FitResult fit(const Shard<T, M>& train, const Shard<T, M>& held_out,
                const std::function<void(const EpochReport&)>& on_epoch) {
    const std::size_t n = train.global_rows;
    prepare_output_dir(c_.output.dir, all_->comm());
    FitResult res;
    RunControl run(all_->comm(), c_.output.dir, c_.output.keep_last, restart_file_);
    double train_seconds = 0;
    std::size_t samples_done = 0;
    const long long first_epoch = at_.epoch;
    StepLog step_log(c_.output.dir, step_log_cadence(c_, first_epoch, steps_per_epoch(n, c_.batch)),
                     !restart_file_.empty(), opt_.steps(), all_->index() == 0, MPI_Wtime());
    for (long long epoch = first_epoch; epoch < c_.epochs; ++epoch) {
      const double t0 = MPI_Wtime();
      const auto plan = plan_epoch(model_.exec(), n, train.begin, train.rows(), c_.batch, c_.seed,
                                   static_cast<std::uint64_t>(epoch));
      kpmap::heartbeat();  // the epoch's order is progress (the watchdog's limit is per step)
      res.steps_per_epoch = plan.batches;
      const bool resumed = epoch == first_epoch && at_.step > 0;
      if (resumed) check_resumed_epoch(epoch, at_.step, plan.batches, restart_file_);
      // The epoch's (loss, correct) sums stay on the device until a log line,
      // the epoch's end or a checkpoint asks for them.
      epoch_sums_.start(model_.exec(), resumed ? at_.loss_sum : 0.0,
                        resumed ? at_.correct_sum : 0.0);
      const std::size_t first_step = resumed ? static_cast<std::size_t>(at_.step) : 0;
      const std::size_t steps_done = run_steps(train, plan, epoch, first_step, run, step_log, res);
      if (res.mid_epoch) break;  // the epoch's figures are not complete
      if (checked_mode() && !parameters_sharded()) {
        for_each_named(model_.params(), [&](const std::string& name, const auto& v) {
          kpmap::detail::verify_replicated(*axis_, name + " after the update", v);
        });
      }
      // Samples per second count the training steps, not the evaluation.
      const double epoch_seconds = MPI_Wtime() - t0;
      res.last = report_epoch(epoch, std::min(steps_done * plan.batch, n), epoch_seconds,
                              plan.batches, held_out, run);
      train_seconds += epoch_seconds;
      samples_done += res.last.samples;
      res.has_report = true;
      res.epoch = epoch + 1;
      on_epoch(res.last);
      if (res.max_steps_reached && steps_done < plan.batches) {
        save_position(run, res, epoch, steps_done, plan.batches);
        break;
      }
      const bool done = epoch + 1 == c_.epochs || res.max_steps_reached;
      res.stopped_by = run.end_step(epoch + 1, done, c_.output.checkpoint_every, [&] {
        save(run, checkpoint_file_name(epoch + 1), {epoch + 1, 0, 0.0, 0.0}, /*rotate=*/true);
      });
      if (done || res.stopped_by != 0) break;
    }
    res.checkpoint = run.last_good();
    // NaN (null in JSON) when no epoch was completed.
    res.samples_per_second = pmin(static_cast<double>(samples_done) / train_seconds, all_);
    return res;
  }

  /// \brief Calls f(dataset name, View, block, replicated) for every array a
  /// checkpoint holds (train/saved_arrays.hpp): the parameters, then the
  /// optimizer's state arrays by the names its registration gives them
  /// (optimizer.m.*, optimizer.v.* for Adam). `replicated`: every rank
  /// keeps the whole array (written once); else `block` is where this
  /// rank's View lies.
  template <class F>
  void for_each_saved(F&& f) {
    const bool copy = !first_of_data_index_;
    if (parameters_sharded()) {
      if constexpr (shards) {
        for_each_in_part(arrays_, "params.", model_.parameter_part(), opt_.owned(), copy, f);
      }
    } else {
      for_each_in_tree(model_, arrays_, "params.", model_.params(), axis_->index(), f);
    }
    for (std::size_t k = 0; k < opt_.state().size(); ++k) {
      const std::string prefix = "optimizer." + opt_.state()[k].first + ".";
      if (opt_.sharded()) {
        for_each_in_part(arrays_, prefix, opt_.owned_state()[k], opt_.owned(), copy, f);
      } else {
        for_each_in_tree(model_, arrays_, prefix, P::unflatten(opt_.state()[k].second),
                         axis_->index(), f);
      }
    }
  }

 private:
  template <class F>
  void for_each_named(const P& tree, F&& f) const {
    model_.for_each_named(tree, f);
  }

  // The steps of epoch `epoch` from `first` on: all of them (returns how
  // many the epoch has), or up to train.max_steps (returns the steps done,
  // res.max_steps_reached), or up to a stop signal (res.stopped_by), which
  // checkpoints the position (res.mid_epoch).
  std::size_t run_steps(const Shard<T, M>& train, const BatchPlan<M>& plan, long long epoch,
                        std::size_t first, RunControl& run, StepLog& step_log, FitResult& res) {
    for (std::size_t k = first; k < plan.batches; ++k) {
      if (run.begin_step(opt_.steps() + 1)) poison();
      const ProfilingRegion step_region("kpmap::train::step");
      const StepLoss s = step(train, plan, k);
      epoch_sums_.add(model_.exec(), s, static_cast<double>(plan.global_size(k)), k);
      {
        const ProfilingRegion region("kpmap::train::update");
        const double u0 = MPI_Wtime();
        update();
        times_.add(Phase::compute, MPI_Wtime() - u0);
      }
      if (step_log.count(opt_.steps())) {
        // Every rank reads the figures (the same on all), so that all of
        // them stop together on a loss that is not finite.
        epoch_sums_.fetch(model_.exec(), epoch, plan.batches, run.last_good_note());
        step_log.line(opt_.steps(), epoch, k, plan.batches, plan.batch, s.fetch(), MPI_Wtime());
      }
      if (c_.max_steps > 0 && opt_.steps() >= c_.max_steps) {
        res.max_steps_reached = true;
        return k + 1;
      }
      // A stop signal ends the run after this step, mid-epoch with a
      // checkpoint of the position; after an epoch's last step, the epoch's
      // end polls (RunControl::end_step).
      if (k + 1 < plan.batches && (res.stopped_by = run.poll_stop()) != 0) {
        save_position(run, res, epoch, k + 1, plan.batches);
        return k + 1;
      }
    }
    return plan.batches;
  }

  // Epoch `epoch`'s report: the training loss and accuracy over its
  // `samples` in `seconds` of steps, and the held-out set's evaluation.
  EpochReport report_epoch(long long epoch, std::size_t samples, double seconds,
                           std::size_t batches, const Shard<T, M>& held_out,
                           const RunControl& run) {
    EpochReport rep;
    rep.epoch = epoch + 1;
    rep.samples = samples;
    rep.seconds = seconds;
    const auto sums = epoch_sums_.fetch(model_.exec(), epoch, batches, run.last_good_note());
    rep.train_loss = sums.loss / static_cast<double>(rep.samples);
    rep.train_accuracy = sums.correct / static_cast<double>(rep.samples);
    if (held_out.global_rows > 0) {
      const double e0 = MPI_Wtime();
      rep.held_out = model_.evaluate(held_out, axis_);
      rep.has_held_out = true;
      times_.add(Phase::compute, MPI_Wtime() - e0);
    }
    return rep;
  }

  // Cut short after `at` of the `batches` steps of epoch `epoch` (a stop
  // signal, train.max_steps): a checkpoint of the position, which a restart
  // goes on from.
  void save_position(RunControl& run, FitResult& res, long long epoch, std::size_t at,
                     std::size_t batches) {
    const auto step_in_epoch = static_cast<long long>(at);
    res.mid_epoch = true;
    res.epoch = epoch;
    res.step = step_in_epoch;
    const auto sums = epoch_sums_.fetch(model_.exec(), epoch, batches, run.last_good_note());
    save(run, checkpoint_file_name(epoch, step_in_epoch),
         {epoch, step_in_epoch, sums.loss, sums.correct});
  }

  // One optimizer step's loss and gradient: this rank's rows of batch k, in
  // config.accumulate micro-batches, one reduction after the last.
  StepLoss step(const Shard<T, M>& data, const BatchPlan<M>& plan, std::size_t k) {
    const std::size_t first = plan.offsets[k];
    const std::size_t last = plan.offsets[k + 1];
    const std::size_t parts = c_.accumulate;
    double wait = 0;
    const double t0 = MPI_Wtime();
    StepLoss s;
    for (std::size_t m = 0; m < parts; ++m) {
      const std::size_t a = first + (last - first) * m / parts;
      const std::size_t b = first + (last - first) * (m + 1) / parts;
      s = model_.loss_and_gradient(data, plan.order, a, b, plan.global_size(k), axis_, &wait,
                                   {m == 0, m + 1 == parts});
    }
    times_.add(Phase::compute, MPI_Wtime() - t0 - wait);
    times_.add(Phase::collectives, wait);
    return s;
  }

  // The optimizer's step, from the reduced gradient or this rank's part of
  // it, on the parameters or this rank's part of them.
  void update() {
    if constexpr (shards) {
      if (model_.parameters_sharded()) {
        opt_.step_part(model_.exec(), model_.parameter_part(), model_.gradient_part());
        return;
      }
      if (model_.gradients_sharded()) {
        opt_.step_from_part(model_.exec(), model_.params(), model_.gradient_part());
        return;
      }
    }
    opt_.step(model_.exec(), model_.params(), model_.grads());
  }

  // Whether the model can keep only its part of the gradient and
  // parameters (Sequential).
  static constexpr bool shards = detail::Shards<Model>::value;

  // Whether each rank keeps only its part of the parameters.
  bool parameters_sharded() const {
    if constexpr (shards) return model_.parameters_sharded();
    return false;
  }

  // KPMAP_FAULT_INJECT=R:S:nan: this rank's copy of the first parameter array
  // (sharded: its part of the parameters) turns to NaN, as a corrupted
  // replica would.
  void poison() {
    if constexpr (shards) {
      if (model_.parameters_sharded()) {
        Kokkos::deep_copy(model_.parameter_part(), std::nan(""));
        return;
      }
    }
    bool first = true;
    model_.params().for_each_view([&](const auto& v) {
      if (first) Kokkos::deep_copy(v, std::nan(""));
      first = false;
    });
  }

  // A checkpoint of the model, the optimizer and the position `at`.
  void save(RunControl& run, const std::string& name, const TrainPosition& at,
            bool rotate = false) {
    if (!c_.checkpoints) return;
    const double t0 = MPI_Wtime();
    run.checkpoint(
        name,
        "epoch " + std::to_string(at.epoch + (at.step > 0)) + " (optimizer step " +
            std::to_string(opt_.steps()) + ")",
        [&](const std::string& file) {
          checkpoint::Metadata meta = c_.meta;
          meta.step = at.epoch;
          meta.integers = {{"train_seed", static_cast<std::int64_t>(c_.seed)},
                           {"epoch", static_cast<std::int64_t>(at.epoch)},
                           {"batch", static_cast<std::int64_t>(at.step)},
                           {"optimizer_steps", static_cast<std::int64_t>(opt_.steps())}};
          checkpoint::Writer w(file, all_->comm(), meta);
          for_each_saved([&](const std::string& n, const auto& v, const checkpoint::Block& block,
                             bool replicated) {
            if (replicated) {
              w.write_replicated(model_.exec(), n, v);
            } else {
              w.write(model_.exec(), n, v, block);
            }
          });
          Kokkos::View<double*, Kokkos::HostSpace> sums("kpmap::train::epoch_sums", 2);
          sums(0) = at.loss_sum;
          sums(1) = at.correct_sum;
          w.write_replicated(Kokkos::DefaultHostExecutionSpace(), "progress.epoch_sums", sums);
          w.commit();
        },
        rotate, at.epoch);
    times_.add(Phase::checkpoint, MPI_Wtime() - t0);
  }

  Model& model_;
  Optimizer<T, M, P> opt_;
  std::vector<SavedArray> arrays_;  // in for_each_named order
  TrainerConfig c_;
  AxisRef axis_;
  AxisRef all_;  // every rank of the mesh: checkpoints, run control
  // The first rank of `all_` at this index of the data axis: of the ranks
  // that differ only on other axes (the model axis), the one that writes
  // the part of the state they all hold.
  bool first_of_data_index_;
  TrainPosition at_;
  std::string restart_file_;
  PhaseTimes times_;
  EpochSums<M> epoch_sums_;  // the current epoch's, on the device
};

}  // namespace kpmap::train
