// SPDX-License-Identifier: BSD-3-Clause
// The optimizer registry: every registration (the built-ins of this folder
// and a program's own), in order, with its update rules per value type and
// memory space.

#include <kpmap/train/optimizers/optimizer.hpp>

#include <kpmap/base/error.hpp>

namespace kpmap::train {

namespace detail {
// Defined in the generated builtin_optimizers.cpp: calls the registration of
// every header of train/optimizers/ that holds a KPMAP_TRAIN_BUILTIN_OPTIMIZER line.
void register_builtin_optimizers();
}  // namespace detail

deck::Registry<OptimizerInfo>& optimizer_registry() {
  static deck::Registry<OptimizerInfo> all("optimizer", "kpmap::train::register_optimizer",
                                           &detail::register_builtin_optimizers);
  return all;
}

std::pair<const OptimizerInfo*, deck::Settings> optimizer_settings(const OptimizerConfig& config) {
  const OptimizerInfo& info = optimizer_registry().at(config.kind);
  deck::Settings settings;
  try {
    settings = deck::Settings(info.keys, config.keys);
  } catch (const Error& e) {
    throw Error("kpmap::train: optimizer " + config.kind + ": " + e.what());
  }
  return {&info, settings};
}

}  // namespace kpmap::train
