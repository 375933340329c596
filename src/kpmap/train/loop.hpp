// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief The training loop's length, batch and seed: a deck's [train]
/// section, and what a Trainer runs by (train/trainer.hpp).

#include <kpmap/base/words.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

namespace kpmap::train {

/// \brief What each rank keeps of the training state (train.sharding), as
/// DeepSpeed's ZeRO stages name it.
enum class Sharding {
  replicated,  ///< every rank keeps all of the parameters, gradient and optimizer state
  optimizer,   ///< the optimizer's state split evenly over the ranks (ZeRO stage 1)
  gradients,   ///< ... and the reduced gradient too, reduce-scattered (ZeRO stage 2)
  parameters,  ///< ... and the parameters, each layer's gathered when used (ZeRO stage 3, FSDP)
};

}  // namespace kpmap::train

/// \brief The deck's words of kpmap::train::Sharding (train.sharding).
template <>
struct kpmap::EnumWords<kpmap::train::Sharding> {
  using S = kpmap::train::Sharding;
  static constexpr std::pair<S, const char*> list[] = {{S::replicated, "replicated"},
                                                       {S::optimizer, "optimizer"},
                                                       {S::gradients, "gradients"},
                                                       {S::parameters, "parameters"}};
};

namespace kpmap::train {

/// \brief How long a training loop runs, over which batches.
struct LoopConfig {
  long long epochs = 1;
  std::size_t batch = 0;       ///< global batch (all ranks); 0: the whole training set
  std::uint64_t seed = 0;      ///< of the shuffle (the initial weights are the model's)
  std::size_t accumulate = 1;  ///< micro-batches per step
  long long max_steps = 0;     ///< end after this many steps in all (0: no limit)
  /// Rank 0 prints the step's figures, and writes them to steps.csv, every N
  /// steps (0: never; -1, the deck's default: step_log_cadence chooses).
  long long log_every = 0;
  Sharding sharding = Sharding::replicated;  ///< what each rank keeps of the training state
  /// The ranks as a mesh of "data" x "model" (train.mesh): batches split over
  /// "data", layers split over "model" (tensor parallelism). 0 data ranks:
  /// all the ranks that "model" leaves. 0 model ranks (a Trainer's default):
  /// the mesh its axes make; a deck always says (train.mesh.model, 1 unset).
  int mesh_data = 0;
  int mesh_model = 0;
};

/// \brief The batch rule, in one place: the global batch a loop over `rows`
/// rows takes when the deck (LoopConfig::batch) says `batch`: every row when
/// it is 0 ("the whole set") or at least the set, else `batch`.
inline std::size_t global_batch(std::size_t batch, std::size_t rows) {
  return batch == 0 || batch >= rows ? rows : batch;
}

/// \brief Rows of one batch a rank may hold, which its work arrays are sized
/// for: its own `local` rows when `batch` is 0 (each rank's part of the
/// whole set is its block), else up to the whole global batch (a shuffled
/// batch may fall on one rank).
inline std::size_t batch_rows_held(std::size_t batch, std::size_t rows, std::size_t local) {
  return batch == 0 ? local : std::min(batch, rows);
}

/// \brief Optimizer steps in an epoch of `rows` rows in global batches of
/// `batch` (0: the whole set in one).
inline std::size_t steps_per_epoch(std::size_t rows, std::size_t batch) {
  const std::size_t b = global_batch(batch, rows);
  return b == 0 ? 1 : (rows + b - 1) / b;
}

/// \brief The epochs a run that starts at epoch `first` (0-based: epochs
/// done) plans to train: to c.epochs, fewer where c.max_steps ends it first
/// (an epoch cut short counts).
inline long long planned_epochs(const LoopConfig& c, long long first, std::size_t per_epoch) {
  const long long left = c.epochs - first;
  if (c.max_steps <= 0 || per_epoch == 0) return left;
  const auto per = static_cast<long long>(per_epoch);
  return std::min(left, (c.max_steps + per - 1) / per);
}

/// \brief c.log_every resolved: the deck's value where it gave one (>= 0),
/// else (-1) a step line where the run plans fewer than 10 epochs (whose
/// lines alone say little), at the cadence that gives about 16 lines with
/// the epoch lines: every ceil(S / (16 - E))th of its S planned steps in E
/// epochs; 0 (the epoch lines only) from 10 epochs on.
inline long long step_log_cadence(const LoopConfig& c, long long first, std::size_t per_epoch) {
  if (c.log_every >= 0) return c.log_every;
  const long long epochs = planned_epochs(c, first, per_epoch);
  if (epochs >= 10 || epochs <= 0) return 0;
  long long steps = epochs * static_cast<long long>(per_epoch);
  if (c.max_steps > 0) steps = std::min(steps, c.max_steps);
  const long long lines = 16 - epochs;
  return std::max(1LL, (steps + lines - 1) / lines);
}

}  // namespace kpmap::train
