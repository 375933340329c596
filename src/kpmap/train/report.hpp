// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief What a Trainer reports: each epoch's figures, how a fit() ended,
/// and the bytes of training state a rank holds.

#include <kpmap/train/model.hpp>

#include <cstddef>
#include <string>

namespace kpmap::train {

/// \brief One epoch's figures, over all ranks.
struct EpochReport {
  long long epoch = 0;      ///< 1-based: the epoch just done (or cut short by max_steps)
  std::size_t samples = 0;  ///< training samples of its steps
  double train_loss = 0;    ///< mean over those samples
  double train_accuracy = 0;
  double seconds = 0;  ///< of the training steps (not the evaluation)
  bool has_held_out = false;
  Evaluation held_out;  ///< on the validation or test set
};

/// \brief How a fit() ended.
struct FitResult {
  int stopped_by = 0;      ///< the signal that stopped it, or 0
  bool mid_epoch = false;  ///< stopped (or cut by max_steps) inside an epoch
  long long epoch = 0;     ///< epochs completed
  long long step = 0;      ///< steps of the next epoch, when mid_epoch
  std::size_t steps_per_epoch = 0;
  bool max_steps_reached = false;
  std::string checkpoint;  ///< the newest checkpoint (or the restart file)
  double samples_per_second =
      0;                    ///< training samples of this run / training seconds, min over ranks
  bool has_report = false;  ///< an epoch was reported
  EpochReport last;         ///< the last epoch's report
};

/// \brief Bytes one rank holds of the training state, by kind: what a
/// sharded run divides among the ranks, and what a replicated one repeats.
struct StateBytes {
  std::size_t parameters = 0;  ///< the parameters (in a mixed run, their float master copy)
  std::size_t gradients = 0;   ///< their gradient
  std::size_t optimizer = 0;   ///< the optimizer's state arrays (momentum; Adam's moments)
  std::size_t total() const { return parameters + gradients + optimizer; }
};

}  // namespace kpmap::train
