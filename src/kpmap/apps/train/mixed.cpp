// SPDX-License-Identifier: BSD-3-Clause
// kpmap-train with model.precision = "mixed": float parameters, layers in half_t.

#include <kpmap/apps/train/run.hpp>

#include <kpmap/base/error.hpp>

namespace kpmap::apps::detail {

int train_mixed(kpmap::train::TrainConfig c, const kpmap::deck::Deck& deck, const RunOptions& opts,
                const kpmap::Runtime& rt) {
  if constexpr (kpmap::detail::has_half_type) {
    return train_in<float, kpmap::detail::half>(std::move(c), deck, opts, rt);
  } else {
    (void)c, (void)deck, (void)opts, (void)rt;
    throw kpmap::Error(
        "kpmap-train: model.precision = \"mixed\" needs a 16-bit half_t, which "
        "this Kokkos lacks");
  }
}

}  // namespace kpmap::apps::detail
