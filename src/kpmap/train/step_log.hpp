// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief The training loop's step log: every N optimizer steps, rank 0
/// prints the step's loss, accuracy and samples/s and adds the row to
/// steps.csv in the output folder (continued after a restart, which drops
/// the rows of the steps it takes again).

#include <kpmap/run/output.hpp>
#include <kpmap/run/output_keys.hpp>
#include <kpmap/train/losses/loss.hpp>

#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>

namespace kpmap::train {

class StepLog {
 public:
  /// \brief A log of every `every` steps (0: none) into `dir`/steps.csv.
  /// `restarted`: the run goes on from a checkpoint taken after
  /// `steps_before` steps, whose later rows go. A new run that logs nothing
  /// removes an earlier run's steps.csv (the run's own file, a regular one),
  /// which would be drawn as this run's. `t0`: when the run started (MPI_Wtime).
  StepLog(const std::filesystem::path& dir, long long every, bool restarted, long long steps_before,
          bool root, double t0)
      : every_(every), root_(root), t0_(t0), last_(t0) {
    if (every > 0 || restarted) {
      table_.emplace(dir / run_file::steps,
                     "step,epoch,batch,batches,loss,accuracy,samples_per_second,wall_s",
                     restarted ? steps_before : -1, root);
    } else if (root) {
      const auto old = dir / run_file::steps;
      std::error_code ec;
      if (std::filesystem::is_regular_file(std::filesystem::symlink_status(old, ec))) {
        std::filesystem::remove(old, ec);
      }
    }
  }

  /// \brief Counts a step done; whether the step `steps` (the optimizer's
  /// count) is one to log.
  bool count(long long steps) {
    ++since_;
    return every_ > 0 && steps % every_ == 0;
  }

  /// \brief Rank 0 prints and records step `steps`: step k (0-based) of
  /// `batches` of epoch `epoch` (0-based), in global batches of `batch`
  /// samples, whose figures are `f`; `now` is MPI_Wtime. The rate is over
  /// the steps since the last line.
  void line(long long steps, long long epoch, std::size_t k, std::size_t batches, std::size_t batch,
            const BatchStats& f, double now) {
    if (root_) {
      const double rate =
          static_cast<double>(since_ * static_cast<long long>(batch)) / (now - last_);
      std::printf("step %lld  epoch %lld  %zu/%zu  loss %.6e  accuracy %.6f  %.4g samples/s\n",
                  steps, epoch + 1, k + 1, batches, f.loss, f.accuracy, rate);
      std::fflush(stdout);
      table_->row(std::to_string(steps) + ',' + std::to_string(epoch + 1) + ',' +
                  std::to_string(k + 1) + ',' + std::to_string(batches) + ',' + csv_number(f.loss) +
                  ',' + csv_number(f.accuracy) + ',' + csv_number(rate) + ',' +
                  csv_number(now - t0_));
    }
    last_ = now;
    since_ = 0;
  }

 private:
  long long every_;
  bool root_;
  double t0_, last_;
  long long since_ = 0;
  std::optional<CsvTable> table_;
};

}  // namespace kpmap::train
