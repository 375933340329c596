// SPDX-License-Identifier: BSD-3-Clause
// kpmap-train with model.precision = "float".

#include <kpmap/apps/train/run.hpp>

namespace kpmap::apps::detail {

int train_float(kpmap::train::TrainConfig c, const kpmap::deck::Deck& deck, const RunOptions& opts,
                const kpmap::Runtime& rt) {
  return train_in<float>(std::move(c), deck, opts, rt);
}

}  // namespace kpmap::apps::detail
