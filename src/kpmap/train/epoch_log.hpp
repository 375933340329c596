// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief train::EpochLog: what a training run reports after each epoch, on
/// rank 0 (as sim::TimeLoop writes its history.csv and its progress lines):
/// a row of history.csv (continued after a restart) and, at the first
/// epoch, every `every` epochs and at the last, a progress line with the losses, the accuracy,
/// the samples per second and an ETA.
///
///   kpmap::train::EpochLog log(out, first_epoch, epochs, restarted, classes, held_out, root,
///                              every, last);
///   trainer.fit(train, val, [&](const kpmap::train::EpochReport& r) { log(r); });
///   log.finish();  // the last epoch's line, where a signal ended the run early

#include <kpmap/run/output.hpp>
#include <kpmap/run/output_keys.hpp>
#include <kpmap/train/report.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

namespace kpmap::train {

class EpochLog {
 public:
  /// \brief On rank 0 (`root`), opens `out`/history.csv: appended to from
  /// `first_epoch` when `restarted`. `classes`: a classifier (accuracy columns);
  /// `held_out`: a validation or test set is evaluated. A progress line
  /// after the run's first epoch, every `every` epochs (0: none at all) and
  /// at epoch `last` (0: `epochs`), the
  /// run's planned end, which its ETA counts to.
  EpochLog(const std::filesystem::path& out, long long first_epoch, long long epochs,
           bool restarted, bool classes, bool held_out, bool root, long long every = 1,
           long long last = 0)
      : table_(out / run_file::history,
               "epoch,train_loss,val_loss,accuracy,samples_per_second,wall_s,train_accuracy",
               restarted ? first_epoch : -1, root),
        progress_(first_epoch, last > 0 ? last : epochs),
        first_(first_epoch),
        epochs_(epochs),
        last_(last > 0 ? last : epochs),
        every_(every),
        classes_(classes),
        held_out_(held_out),
        root_(root) {}

  /// \brief The accuracy a run reports: the held-out set's where there is one.
  double accuracy(const EpochReport& r) const {
    return held_out_ && classes_ ? r.held_out.accuracy : r.train_accuracy;
  }

  /// \brief Writes epoch `r`'s row and progress line (rank 0). NaN (an empty
  /// CSV cell) where there is no held-out set or no accuracy.
  void operator()(const EpochReport& r) {
    if (!root_) return;
    const double nan = std::nan("");
    const double rate = double(r.samples) / r.seconds;
    table_.row(std::to_string(r.epoch) + ',' + csv_number(r.train_loss) + ',' +
               csv_number(held_out_ ? r.held_out.loss : nan) + ',' + csv_number(accuracy(r)) + ',' +
               csv_number(rate) + ',' + csv_number(progress_.elapsed()) + ',' +
               csv_number(classes_ ? r.train_accuracy : nan));
    char val[48] = "";
    if (held_out_) std::snprintf(val, sizeof val, "  val_loss %.6e", r.held_out.loss);
    char line[320];
    std::snprintf(line, sizeof line,
                  "epoch %lld/%lld  train_loss %.6e%s%s  %.4g samples/s  elapsed %s  ETA %s\n",
                  r.epoch, epochs_, r.train_loss, val,
                  classes_ ? ("  accuracy " + std::to_string(accuracy(r))).c_str() : "", rate,
                  Progress::format(progress_.elapsed()).c_str(),
                  Progress::format(progress_.eta(r.epoch)).c_str());
    pending_ = line;
    if (every_ > 0 && (r.epoch % every_ == 0 || r.epoch == first_ + 1 || r.epoch >= last_)) {
      finish();
    }
  }

  /// \brief Prints the newest epoch's line where its cadence skipped it: a
  /// run ended by a signal still shows where it stopped (rank 0).
  void finish() {
    if (!root_ || pending_.empty() || every_ == 0) return;
    std::fputs(pending_.c_str(), stdout);
    std::fflush(stdout);
    pending_.clear();
  }

 private:
  CsvTable table_;
  Progress progress_;
  long long first_, epochs_, last_, every_;
  bool classes_, held_out_, root_;
  std::string pending_;  ///< the newest epoch's line, until printed
};

}  // namespace kpmap::train
