// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Where a training run stands (TrainPosition), and where a
/// checkpoint stands as the Trainer restarts from it: read from the file's
/// int64 attributes (train_seed, epoch, batch, optimizer_steps), or from the
/// text record in rng_state that checkpoints written before those
/// attributes hold, checked against itself and against the run that would
/// continue it (check_resumable, check_resumed_epoch).

#include <kpmap/io/checkpoint.hpp>
#include <kpmap/train/loop.hpp>

#include <cstddef>
#include <string>

namespace kpmap::train {

/// \brief Where a run stands: `epoch` epochs done, then `step` steps of the
/// next one, whose (loss, correct) sums so far, weighted by batch size, are
/// given (a run stopped mid-epoch continues from there bit for bit).
struct TrainPosition {
  long long epoch = 0;
  long long step = 0;
  double loss_sum = 0, correct_sum = 0;
};

/// \brief A checkpoint's position: the deck's train.seed, epochs done,
/// optimizer steps taken of the next epoch (the file's attribute `batch`),
/// and optimizer steps in all.
struct SavedPosition {
  long long seed = 0, epoch = 0, step_in_epoch = 0, optimizer_steps = 0;
};

/// \brief The position of checkpoint `r` (file `file`); `deck_seed` where a
/// file written before the seed was kept has none. \throws InputError (all
/// ranks) naming the file when the position is missing, no number, beyond
/// train.max_steps' largest value, or at odds with itself.
SavedPosition read_position(const checkpoint::Reader& r, const std::string& file,
                            long long deck_seed);

/// \brief Refuses to continue from position `saved` of checkpoint `file`
/// under the loop `loop`: a position inside an epoch under another
/// train.seed (the rest of the epoch would follow another order), or one
/// with nothing left to do (train.epochs done, train.max_steps taken).
/// \throws InputError (all ranks) naming the file.
void check_resumable(const SavedPosition& saved, const std::string& file, const LoopConfig& loop);

/// \brief Refuses to resume epoch `epoch` (from 0) after step `step` of it
/// (checkpoint `file`) where this run's epoch has only `batches` steps
/// (train.batch_size changed). \throws InputError (all ranks).
void check_resumed_epoch(long long epoch, long long step, std::size_t batches,
                         const std::string& file);

}  // namespace kpmap::train
