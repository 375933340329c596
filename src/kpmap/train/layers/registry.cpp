// SPDX-License-Identifier: BSD-3-Clause
// The layer registry: every registration (the built-ins of this folder and a
// program's own), in order, with its factories per value type and memory space.

#include <kpmap/train/layers/registry.hpp>

#include <kpmap/base/error.hpp>

namespace kpmap::train {

namespace detail {
// Defined in the generated builtin_layers.cpp: calls the registration of
// every header of train/layers/ that holds a KPMAP_TRAIN_BUILTIN_LAYER line.
void register_builtin_layers();
}  // namespace detail

deck::Registry<LayerInfo>& layer_registry() {
  static deck::Registry<LayerInfo> all("layer", "kpmap::train::register_layer",
                                       &detail::register_builtin_layers);
  return all;
}

namespace detail {

void add_layer(LayerInfo info) {
  const auto refuse = [&](const std::string& what) {
    throw Error("kpmap::train::register_layer: layer '" + info.name + "' " + what);
  };
  if (info.keys.find("type") != nullptr) refuse("declares a key 'type', which is the deck's");
  for (const std::string& r : info.required) {
    if (info.keys.find(r) == nullptr) {
      refuse("requires key '" + r + "', which it does not declare");
    }
  }
  layer_registry().add(std::move(info));
}

}  // namespace detail

}  // namespace kpmap::train
