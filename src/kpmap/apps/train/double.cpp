// SPDX-License-Identifier: BSD-3-Clause
// kpmap-train with model.precision = "double".

#include <kpmap/apps/train/run.hpp>

namespace kpmap::apps::detail {

int train_double(kpmap::train::TrainConfig c, const kpmap::deck::Deck& deck, const RunOptions& opts,
                 const kpmap::Runtime& rt) {
  return train_in<double>(std::move(c), deck, opts, rt);
}

}  // namespace kpmap::apps::detail
