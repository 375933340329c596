// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/train/position.hpp>

#include <kpmap/base/error.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

namespace kpmap::train {

namespace {

// The most optimizer steps a checkpoint may count (train.max_steps' largest value).
constexpr long long max_optimizer_steps = checkpoint::max_step;

// The text record holds "key=value" fields separated by single spaces, each
// of train.seed, epoch, batch and optimizer_steps at most once; `damaged`
// throws naming the first that is not.
template <class Damaged>
void check_record(const std::string& state, Damaged&& damaged) {
  static const std::array<std::string_view, 4> known = {"train.seed", "epoch", "batch",
                                                        "optimizer_steps"};
  std::array<bool, 4> seen{};
  std::size_t start = 0;
  while (start < state.size()) {
    std::size_t stop = state.find(' ', start);
    if (stop == std::string::npos) stop = state.size();
    const std::string_view item(state.data() + start, stop - start);
    const std::size_t eq = item.find('=');
    const auto it = std::find(known.begin(), known.end(), item.substr(0, eq));
    if (eq == std::string_view::npos || it == known.end()) {
      damaged("has an unknown field '" + std::string(item) + "'");
    }
    const auto k = static_cast<std::size_t>(it - known.begin());
    if (seen[k]) damaged("gives " + std::string(known[k]) + " twice");
    seen[k] = true;
    start = stop + 1;
  }
}

// The whole number after "key=" in `state` (fallback without one): the
// position as checkpoints before the typed attributes wrote it.
// `damaged(what)` throws when it is not a whole number.
template <class Damaged>
long long field_of(const std::string& state, const std::string& key, long long fallback,
                   Damaged&& damaged) {
  std::size_t at = state.find(key + "=");
  while (at != std::string::npos && at > 0 && state[at - 1] != ' ') {
    at = state.find(key + "=", at + 1);  // "batch=" is not "xbatch="
  }
  if (at == std::string::npos) return fallback;
  const char* first = state.c_str() + at + key.size() + 1;
  const char* end = state.c_str() + state.size();
  const char* stop = std::find(first, end, ' ');
  long long v = 0;
  const auto [ptr, ec] = std::from_chars(first, stop, v);
  if (ec != std::errc() || ptr != stop) damaged("has a value of " + key + " that is no number");
  return v;
}

}  // namespace

SavedPosition read_position(const checkpoint::Reader& r, const std::string& file,
                            long long deck_seed) {
  const long long step = r.metadata().step;
  const std::string& text = r.metadata().rng_state;
  const bool typed = r.integer("optimizer_steps").has_value();
  const std::string where = typed ? "the training position (attributes train_seed, epoch, "
                                    "batch, optimizer_steps)"
                                  : "attribute rng_state ('" + text + "')";
  auto damaged = [&](const std::string& what) {
    throw InputError("restart file " + file + ": " + where + " " + what + " (a damaged file?)",
                     ErrorScope::all_ranks);
  };
  auto field = [&](const char* typed_name, const char* text_name, long long fallback) {
    if (typed) return static_cast<long long>(r.integer(typed_name).value_or(fallback));
    return field_of(text, text_name, fallback, damaged);
  };
  if (!typed) check_record(text, damaged);
  SavedPosition p;
  p.optimizer_steps = field("optimizer_steps", "optimizer_steps", -1);
  if (p.optimizer_steps < 0) damaged("has no optimizer state (optimizer_steps)");
  p.epoch = step;
  p.step_in_epoch = field("batch", "batch", 0);
  // The position is stored twice (attribute step, and the position's epoch)
  // and bounds the step count: every epoch has a step at least.
  if (field("epoch", "epoch", step) != step) {
    damaged("gives another epoch than attribute step (" + std::to_string(step) + ")");
  }
  if (p.step_in_epoch < 0) damaged("gives a negative batch position");
  if (p.step_in_epoch > max_optimizer_steps) {  // before epoch + step, which would wrap
    damaged("gives batch position " + std::to_string(p.step_in_epoch) + ", more than " +
            std::to_string(max_optimizer_steps) + " (train.max_steps' largest value)");
  }
  // No run takes more steps than train.max_steps allows (1e15): a count
  // beyond that would overflow as the run goes on.
  if (p.optimizer_steps > max_optimizer_steps) {
    damaged("counts " + std::to_string(p.optimizer_steps) + " optimizer steps, more than " +
            std::to_string(max_optimizer_steps) + " (train.max_steps' largest value)");
  }
  if (p.optimizer_steps < p.epoch + p.step_in_epoch) {
    damaged("counts " + std::to_string(p.optimizer_steps) + " optimizer steps, fewer than epoch " +
            std::to_string(p.epoch) + " and batch " + std::to_string(p.step_in_epoch) + " took");
  }
  p.seed = field("train_seed", "train.seed", deck_seed);
  if (p.seed < 0)
    damaged("gives train.seed " + std::to_string(p.seed) + ", which is never negative");
  return p;
}

void check_resumable(const SavedPosition& saved, const std::string& file, const LoopConfig& loop) {
  if (saved.step_in_epoch > 0 && static_cast<std::uint64_t>(saved.seed) != loop.seed) {
    throw InputError("restart file " + file + " stopped in the middle of epoch " +
                         std::to_string(saved.epoch + 1) +
                         " with train.seed = " + std::to_string(saved.seed) +
                         ", and the deck gives " + std::to_string(loop.seed) +
                         ": the rest of the epoch would follow another order; restart it "
                         "with its own seed",
                     ErrorScope::all_ranks);
  }
  if (saved.epoch >= loop.epochs) {
    throw InputError("restart file " + file + " is at epoch " + std::to_string(saved.epoch) +
                         ", train.epochs is " + std::to_string(loop.epochs) +
                         ": nothing left to do",
                     ErrorScope::all_ranks);
  }
  if (loop.max_steps > 0 && saved.optimizer_steps >= loop.max_steps) {
    throw InputError("restart file " + file + " has taken " +
                         std::to_string(saved.optimizer_steps) + " optimizer steps, " +
                         "train.max_steps is " + std::to_string(loop.max_steps) +
                         ": nothing left to do",
                     ErrorScope::all_ranks);
  }
}

void check_resumed_epoch(long long epoch, long long step, std::size_t batches,
                         const std::string& file) {
  if (static_cast<std::size_t>(step) < batches) return;
  throw InputError("restart file " + file + " stopped after step " + std::to_string(step) +
                       " of epoch " + std::to_string(epoch + 1) + ", but this deck's epoch has " +
                       std::to_string(batches) +
                       " steps (was train.batch_size changed?); restart a mid-epoch checkpoint "
                       "with its own deck, or from a checkpoint taken at an epoch's end",
                   ErrorScope::all_ranks);
}

}  // namespace kpmap::train
