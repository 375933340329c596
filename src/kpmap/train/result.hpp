// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief What a kpmap-train run reports in result.json: its size, the last
/// epoch's losses and accuracy, the samples per second, a linear model's
/// parameters (with the generator's true ones), and the deck's own check of
/// the final validation loss (output.expect_val_loss).

#include <kpmap/base/version.hpp>
#include <kpmap/run/output.hpp>
#include <kpmap/train/config.hpp>
#include <kpmap/train/epoch_log.hpp>
#include <kpmap/train/linear.hpp>
#include <kpmap/train/trainer.hpp>

#include <Kokkos_Core.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <type_traits>
#include <vector>

namespace kpmap::train {

namespace detail {
/// A View's values on the host, as doubles.
template <class V>
std::vector<double> to_vector(const V& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  std::vector<double> out(h.size());
  for (std::size_t i = 0; i < h.size(); ++i) out[i] = double(h.data()[i]);
  return out;
}
}  // namespace detail

/// \brief result.json's fields (kpmap::write_result adds the run's end, its
/// checkpoint and phase times), and whether the deck's check failed.
struct TrainingResult {
  nlohmann::ordered_json json;
  bool check_failed = false;  ///< output.expect_val_loss not met: exit code 5
};

/// \brief The result of run `c` on `ranks` ranks whose fit() gave `res`;
/// `log` is its history (the accuracy it reports) and `state` the bytes of
/// training state each rank held (the most any rank held: Trainer::largest_state_bytes). Rank 0
/// (`root`) prints a linear model's parameters and the check's verdict.
template <class Model>
TrainingResult training_result(const TrainConfig& c, int ranks, const Model& model,
                               const FitResult& res, const EpochLog& log, const StateBytes& state,
                               bool root) {
  const std::size_t n_train = c.data.samples - c.data.validation;
  const bool classes = c.data.classification;
  // NaN (null in result.json) until an epoch completes.
  const double nan = std::nan("");
  const auto& r = res.last;
  TrainingResult out;
  nlohmann::ordered_json& j = out.json;
  j["app"] = "kpmap-train";
  j["kpmap_version"] = KPMAP_VERSION_STRING;
  j["deck"] = c.source;
  j["ranks"] = ranks;
  j["model"] = c.model.kind;
  j["precision"] = c.model.precision;
  j["parameters"] = model.whole_parameter_count();
  // The most that any rank holds of each (sharded parts differ by an element).
  j["state_bytes_per_rank"] = {{"sharding", word_of(c.train.sharding)},
                               {"parameters", state.parameters},
                               {"gradients", state.gradients},
                               {"optimizer", state.optimizer}};
  j["train_samples"] = n_train;
  j["validation_samples"] = c.data.validation;
  j["epochs"] = c.train.epochs;
  j["train_loss"] = res.has_report ? r.train_loss : nan;
  j["val_loss"] = res.has_report && c.data.validation > 0 ? r.held_out.loss : nan;
  j["samples_per_second"] = res.samples_per_second;
  if (classes) {
    j["accuracy"] = res.has_report ? log.accuracy(r) : nan;
    j["train_accuracy"] = res.has_report ? r.train_accuracy : nan;
    if (c.data.validation > 0) {
      // The held-out set's metrics: the test files', or the validation split's.
      j["test_accuracy"] = res.has_report ? r.held_out.accuracy : nan;
      j["test_loss"] = res.has_report ? r.held_out.loss : nan;
      j["test_set"] = c.data.test_set ? c.data.test_path : "validation split";
      j["confusion"] =
          std::vector<long long>(r.held_out.confusion.begin(), r.held_out.confusion.end());
    }
  }
  if constexpr (std::is_same_v<
                    Model, LinearModel<typename Model::value_type, typename Model::memory_space>>) {
    const auto w = detail::to_vector(model.params().w);
    const auto b = detail::to_vector(model.params().b);
    j["params"] = {{"w", w}, {"b", b[0]}};
    if (c.data.kind == DataKind::synthetic) {
      const SyntheticRegression g{c.data.samples, c.data.features, c.data.seed, c.data.noise};
      std::vector<double> tw(c.data.features);
      for (std::size_t i = 0; i < c.data.features; ++i) tw[i] = g.true_w(i);
      j["true_params"] = {{"w", tw}, {"b", g.true_b()}};
      if (root) {
        std::printf("learned w = %s  b = %.6g\n   true w = %s  b = %.6g\n",
                    kpmap::short_list(w).c_str(), b[0], kpmap::short_list(tw).c_str(), g.true_b());
      }
    }
  }
  if (!c.expect_val_loss.empty() && res.stopped_by == 0) {
    // The deck's own check: the final validation loss in [low, high].
    const double low = c.expect_val_loss[0], high = c.expect_val_loss[1];
    const double loss = res.has_report ? r.held_out.loss : nan;
    const bool passed = loss >= low && loss <= high;  // false for NaN
    out.check_failed = !passed;
    j["expect_val_loss"] = {{"low", low}, {"high", high}, {"val_loss", loss}, {"passed", passed}};
    if (root) {
      std::printf("kpmap-train: validation loss %.6g, expected in [%g, %g]: %s\n", loss, low, high,
                  passed ? "PASSED" : "FAILED");
    }
  }
  return out;
}

}  // namespace kpmap::train
