#pragma once
/// \file
/// \brief The layers a deck can name, and building a chain of them.
///
/// Adding a layer: write its header in this folder (a class derived from
/// Layer), include it here, and add one line to `registry()` with its deck
/// name and how it is built from a LayerSpec.

#include <kpmap/train/layers/avgpool2d.hpp>
#include <kpmap/train/layers/conv2d.hpp>
#include <kpmap/train/layers/dense.hpp>
#include <kpmap/train/layers/flatten.hpp>
#include <kpmap/train/layers/layer.hpp>
#include <kpmap/train/layers/maxpool2d.hpp>
#include <kpmap/train/layers/relu.hpp>
#include <kpmap/train/layers/tanh.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kpmap::train {

/// \brief A layer as a deck describes it; each type reads the fields it needs.
struct LayerSpec {
  std::string type;         ///< a registry name
  std::size_t units = 0;    ///< dense
  std::size_t filters = 0;  ///< conv2d
  std::size_t kernel = 3;   ///< conv2d: kernel x kernel window
  std::size_t stride = 1;   ///< conv2d
  bool same = false;        ///< conv2d: padding "same" (else "valid")
  std::size_t size = 2;     ///< maxpool2d, avgpool2d: window and stride
};

template <class T, class M>
using LayerFactory = std::unique_ptr<Layer<T, M>> (*)(const LayerSpec&, const Shape&);

/// \brief Deck name -> how to build the layer for an input shape.
template <class T, class M = Kokkos::DefaultExecutionSpace::memory_space>
const std::vector<std::pair<std::string, LayerFactory<T, M>>>& registry() {
  using P = std::unique_ptr<Layer<T, M>>;
  using S = const LayerSpec&;
  using I = const Shape&;
  static const std::vector<std::pair<std::string, LayerFactory<T, M>>> table{
      {"dense", [](S s, I in) -> P { return std::make_unique<Dense<T, M>>(in, s.units); }},
      {"conv2d",
       [](S s, I in) -> P {
         return std::make_unique<Conv2D<T, M>>(in, s.filters, s.kernel, s.stride, s.same);
       }},
      {"maxpool2d", [](S s, I in) -> P { return std::make_unique<MaxPool2D<T, M>>(in, s.size); }},
      {"avgpool2d", [](S s, I in) -> P { return std::make_unique<AvgPool2D<T, M>>(in, s.size); }},
      {"relu", [](S, I in) -> P { return std::make_unique<ReLU<T, M>>(in); }},
      {"tanh", [](S, I in) -> P { return std::make_unique<Tanh<T, M>>(in); }},
      {"flatten", [](S, I in) -> P { return std::make_unique<Flatten<T, M>>(in); }},
  };
  return table;
}

/// \brief The deck names of every layer type.
inline std::vector<std::string> layer_types() {
  std::vector<std::string> names;
  for (const auto& entry : registry<double>()) names.push_back(entry.first);
  return names;
}

/// \brief Builds `specs` in order, each for the previous one's output shape
/// (the first for `input`). \throws ShapeError naming the layer (1-based),
/// its type and both shapes when one does not fit.
template <class T, class M = Kokkos::DefaultExecutionSpace::memory_space>
std::vector<std::unique_ptr<Layer<T, M>>> build_layers(const Shape& input,
                                                       const std::vector<LayerSpec>& specs) {
  std::vector<std::unique_ptr<Layer<T, M>>> layers;
  Shape shape = input;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const auto& table = registry<T, M>();
    auto it = std::find_if(table.begin(), table.end(),
                           [&](const auto& e) { return e.first == specs[i].type; });
    if (it == table.end()) {
      throw ShapeError("layer " + std::to_string(i + 1) + ": unknown type '" + specs[i].type + "'",
                       i + 1);
    }
    try {
      layers.push_back(it->second(specs[i], shape));
    } catch (const ShapeError& e) {
      throw ShapeError("layer " + std::to_string(i + 1) + " (" + e.what() + ")", i + 1);
    }
    shape = layers.back()->output_shape();
  }
  return layers;
}

/// \brief A multilayer perceptron as layers: dense(widths[1]), activation,
/// ..., dense(widths.back()), for inputs of widths[0] features.
inline std::vector<LayerSpec> mlp_specs(const std::vector<std::size_t>& widths,
                                        const std::string& activation) {
  std::vector<LayerSpec> specs;
  for (std::size_t l = 1; l < widths.size(); ++l) {
    LayerSpec d;
    d.type = "dense";
    d.units = widths[l];
    specs.push_back(d);
    if (l + 1 < widths.size()) specs.push_back(LayerSpec{activation});
  }
  return specs;
}

}  // namespace kpmap::train
