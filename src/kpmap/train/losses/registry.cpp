// SPDX-License-Identifier: BSD-3-Clause
// The loss registry: every registration (the built-ins of this folder and a
// program's own), in order, with its factories per type.

#include <kpmap/train/losses/loss.hpp>

namespace kpmap::train {

namespace detail {
// Defined in the generated builtin_losses.cpp: calls the registration of
// every header of train/losses/ that holds a KPMAP_TRAIN_BUILTIN_LOSS line.
void register_builtin_losses();
}  // namespace detail

deck::Registry<LossInfo>& loss_registry() {
  static deck::Registry<LossInfo> all("loss", "kpmap::train::register_loss",
                                      &detail::register_builtin_losses);
  return all;
}

}  // namespace kpmap::train
