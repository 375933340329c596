// SPDX-License-Identifier: BSD-3-Clause
// kpmap-train's run in each precision the deck's model.precision names, each
// compiled in a source file of its own (the training stack is most of the
// build's time; apart, the three compile side by side).

#pragma once

#include <kpmap/apps/options.hpp>
#include <kpmap/deck/deck.hpp>
#include <kpmap/runtime/runtime.hpp>
#include <kpmap/train/config.hpp>

namespace kpmap::apps::detail {

/// model.precision = "double": data, parameters and arithmetic in double.
int train_double(kpmap::train::TrainConfig c, const kpmap::deck::Deck& deck, const RunOptions& opts,
                 const kpmap::Runtime& rt);
/// model.precision = "float".
int train_float(kpmap::train::TrainConfig c, const kpmap::deck::Deck& deck, const RunOptions& opts,
                const kpmap::Runtime& rt);
/// model.precision = "mixed": float parameters and data, layers computing in
/// 16-bit half_t (from_deck refuses "mixed" where half_t is float).
int train_mixed(kpmap::train::TrainConfig c, const kpmap::deck::Deck& deck, const RunOptions& opts,
                const kpmap::Runtime& rt);

}  // namespace kpmap::apps::detail
