#pragma once
/// \file
/// \brief train::EpochLog: what a training run reports after each epoch, on
/// rank 0 (as sim::TimeLoop writes its history.csv and its progress lines):
/// a row of history.csv (continued after a restart) and a progress line with
/// the losses, the accuracy, the samples per second and an ETA.
///
///   kpmap::train::EpochLog log(out, first_epoch, epochs, restarted, classes, held_out, root);
///   trainer.fit(train, val, [&](const kpmap::train::EpochReport& r) { log(r); });

#include <kpmap/run/output.hpp>
#include <kpmap/train/trainer.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

namespace kpmap::train {

class EpochLog {
 public:
  /// \brief On rank 0 (`root`), opens `out`/history.csv: appended to from
  /// `first_epoch` when `restarted`. `classes`: a classifier (accuracy columns);
  /// `held_out`: a validation or test set is evaluated.
  EpochLog(const std::filesystem::path& out, long long first_epoch, long long epochs,
           bool restarted, bool classes, bool held_out, bool root)
      : table_(out / run_file::history,
               "epoch,train_loss,val_loss,accuracy,samples_per_second,wall_s,train_accuracy",
               restarted ? first_epoch : -1, root),
        progress_(first_epoch, epochs),
        epochs_(epochs),
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
    std::printf("epoch %lld/%lld  train_loss %.6e%s%s  %.4g samples/s  elapsed %s  ETA %s\n",
                r.epoch, epochs_, r.train_loss, val,
                classes_ ? ("  accuracy " + std::to_string(accuracy(r))).c_str() : "", rate,
                Progress::format(progress_.elapsed()).c_str(),
                Progress::format(progress_.eta(r.epoch)).c_str());
    std::fflush(stdout);
  }

 private:
  CsvTable table_;
  Progress progress_;
  long long epochs_;
  bool classes_, held_out_, root_;
};

}  // namespace kpmap::train
