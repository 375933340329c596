// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief The layers a deck can name: each registers itself, with its own
/// deck keys, and build_layers() makes a chain of them by name.
///
/// Adding a layer is one file: a class template `L<T, M>` derived from
/// Layer<T, M>, constructed from its input Shape and, when it has deck keys,
/// a `const deck::Settings&` holding them; and its registration (its name, a
/// description, its keys). In this folder that is a KPMAP_TRAIN_BUILTIN_LAYER
/// line in the layer's header; in a program's own file,
/// KPMAP_TRAIN_REGISTER_LAYER (examples/10_custom_layer.cpp). Either way its
/// keys become `model.layers.N.<key>` in kpmap-train's deck, checked, listed
/// by --help-deck and refused under another layer type.

#include <kpmap/base/error.hpp>
#include <kpmap/deck/deck.hpp>
#include <kpmap/deck/registry.hpp>
#include <kpmap/train/layers/layer.hpp>
#include <kpmap/train/types.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kpmap::train {

/// \brief A layer type as its registration declares it.
struct LayerInfo {
  LayerInfo(std::string name_, std::string description_, deck::Schema keys_ = deck::Schema("layer"),
            std::vector<std::string> required_ = {})
      : name(std::move(name_)),
        description(std::move(description_)),
        keys(std::move(keys_)),
        required(std::move(required_)) {}

  std::string name;         ///< the deck's `model.layers.N.type` (letters, digits, '_')
  std::string description;  ///< a few words, for --help-deck
  /// Its own deck keys, each with a default, read from its entry of
  /// model.layers (`slope` is `model.layers.N.slope`) for this type only: a
  /// deck that gives one to a layer of another type is refused. Keys that
  /// several types declare alike (pooling's `size`) are shared.
  deck::Schema keys;
  /// Keys of `keys` a deck must give for this type (dense's `units`).
  std::vector<std::string> required;
};

/// \brief A layer as a deck or a program describes it: its type and the
/// values of those of its own keys that are set (the others take their
/// declared defaults).
struct LayerSpec {
  LayerSpec() = default;
  /// `LayerSpec{"dense", {{"units", 10}}}`, `LayerSpec{"relu"}`; in code the
  /// typed helpers say the same with each key a member: `dense(10)`.
  LayerSpec(std::string type_, deck::Values keys_ = {})
      : type(std::move(type_)), keys(std::move(keys_)) {}
  std::string type;   ///< a registered name
  deck::Values keys;  ///< its own keys that are set, by name
};

template <class T, class M>
using LayerFactory = std::unique_ptr<Layer<T, M>> (*)(const Shape&, const deck::Settings&);

/// \brief The registry of layer types: every registration (the built-ins of
/// train/layers/ and a program's own), in order (the library's own first);
/// `model.layers.N.type`'s choices and the layers' own keys.
deck::Registry<LayerInfo>& layer_registry();

namespace detail {
/// \brief Adds a registration: a layer's own checks (no key `type`, every
/// required key declared), then the registry's.
void add_layer(LayerInfo info);
}  // namespace detail

/// \brief Every registered layer type, in registration order (the library's
/// own first).
inline std::vector<const LayerInfo*> registered_layers() { return layer_registry().all(); }

/// \brief The registration of layer type `name`, or nullptr for none.
inline const LayerInfo* find_layer(const std::string& name) { return layer_registry().find(name); }

/// \brief Registers layer L (a class template `L<T, M>` derived from
/// Layer<T, M>, constructed from `(const Shape&, const deck::Settings&)`,
/// or from `(const Shape&)` alone when it has no keys; built here for every
/// type of KPMAP_TRAIN_FOR_EACH_LAYER_TYPE) under `info.name`, for decks,
/// --help-deck and build_layers(). Call it before the deck is read: from
/// main(), or at namespace scope with KPMAP_TRAIN_REGISTER_LAYER in the
/// program's own source file. Returns true. \throws Error for a name
/// registered already, a key without a default, a required key it does not
/// declare, or a key another layer declares otherwise.
template <template <class, class> class L>
bool register_layer(LayerInfo info) {
  const std::string name = info.name;
  detail::add_layer(std::move(info));
#define KPMAP_TRAIN_ADD_FACTORY_(T, M)                                                         \
  layer_registry().add_factory<LayerFactory<T, M>>(                                            \
      name, [](const Shape& in, const deck::Settings& s) -> std::unique_ptr<Layer<T, M>> {     \
        if constexpr (std::is_constructible_v<L<T, M>, const Shape&, const deck::Settings&>) { \
          return std::make_unique<L<T, M>>(in, s);                                             \
        } else {                                                                               \
          (void)s;                                                                             \
          return std::make_unique<L<T, M>>(in);                                                \
        }                                                                                      \
      });
  KPMAP_TRAIN_FOR_EACH_LAYER_TYPE(KPMAP_TRAIN_ADD_FACTORY_)
#undef KPMAP_TRAIN_ADD_FACTORY_
  return true;
}

/// \brief The deck names of every layer type.
inline std::vector<std::string> layer_types() { return layer_registry().names(); }

/// \brief Builds `specs` in order, each for the previous one's output shape
/// (the first for `input`). \throws ShapeError naming the layer (1-based),
/// its type and both shapes when one does not fit, or its type when no layer
/// is registered under it; Error for a key its type does not declare.
template <class T, class M = Kokkos::DefaultExecutionSpace::memory_space>
std::vector<std::unique_ptr<Layer<T, M>>> build_layers(const Shape& input,
                                                       const std::vector<LayerSpec>& specs) {
  static_assert(detail::IsLayerType<T, M>::value,
                "kpmap::train layers are built for double and float (and a 16-bit half_t) in "
                "the default memory space: see KPMAP_TRAIN_FOR_EACH_LAYER_TYPE");
  std::vector<std::unique_ptr<Layer<T, M>>> layers;
  Shape shape = input;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const std::string at = "layer " + std::to_string(i + 1);
    const LayerInfo* info = find_layer(specs[i].type);
    if (info == nullptr) {
      std::string known;
      for (const auto& n : layer_types()) known += (known.empty() ? "" : ", ") + n;
      throw ShapeError(at + ": unknown type '" + specs[i].type + "' (registered: " + known + ")",
                       i + 1);
    }
    deck::Settings settings;
    try {
      settings = deck::Settings(info->keys, specs[i].keys);
    } catch (const Error& e) {
      throw Error(at + " (" + specs[i].type + "): " + e.what());
    }
    try {
      layers.push_back(layer_registry().factory<LayerFactory<T, M>>(info->name)(shape, settings));
    } catch (const ShapeError& e) {
      throw ShapeError(at + " (" + e.what() + ")", i + 1);
    }
    shape = layers.back()->output_shape();
  }
  return layers;
}

// -- the built-in layers, typed: each the LayerSpec of its string form ---------------
//
// Flax writes nnx.Linear(784, 10); kpmap code writes dense(10) (the input
// width comes from the layer before), conv2d(32, 3).padding("same"),
// maxpool2d(2). Each key is a member, so a mistyped one is a compile error
// (decks name the same keys, and an unknown one there gets a did-you-mean).

/// \brief dense: `units` outputs; `.parallel("column" | "row")` splits it over "model".
struct DenseSpec : LayerSpec {
  explicit DenseSpec(long long units) : LayerSpec("dense", {{"units", units}}) {}
  DenseSpec parallel(const std::string& how) const {
    DenseSpec s = *this;
    s.keys["parallel"] = how;
    return s;
  }
};
/// \brief conv2d: `filters` output channels, a kernel x kernel window;
/// `.stride(n)`, `.padding("same" | "valid")`.
struct Conv2DSpec : LayerSpec {
  Conv2DSpec(long long filters, long long kernel)
      : LayerSpec("conv2d", {{"filters", filters}, {"kernel", kernel}}) {}
  Conv2DSpec stride(long long n) const {
    Conv2DSpec s = *this;
    s.keys["stride"] = n;
    return s;
  }
  Conv2DSpec padding(const std::string& how) const {
    Conv2DSpec s = *this;
    s.keys["padding"] = how;
    return s;
  }
};

inline DenseSpec dense(long long units) { return DenseSpec(units); }
inline Conv2DSpec conv2d(long long filters, long long kernel = 3) {
  return Conv2DSpec(filters, kernel);
}
/// \brief maxpool2d and avgpool2d: size x size windows, stride size.
inline LayerSpec maxpool2d(long long size = 2) { return LayerSpec("maxpool2d", {{"size", size}}); }
inline LayerSpec avgpool2d(long long size = 2) { return LayerSpec("avgpool2d", {{"size", size}}); }
inline LayerSpec flatten() { return LayerSpec("flatten"); }
inline LayerSpec relu() { return LayerSpec("relu"); }
inline LayerSpec tanh() { return LayerSpec("tanh"); }

/// \brief A multilayer perceptron as layers: dense(widths[1]), activation,
/// ..., dense(widths.back()), for inputs of widths[0] features.
inline std::vector<LayerSpec> mlp_specs(const std::vector<std::size_t>& widths,
                                        const std::string& activation) {
  std::vector<LayerSpec> specs;
  for (std::size_t l = 1; l < widths.size(); ++l) {
    specs.push_back(dense(static_cast<long long>(widths[l])));
    if (l + 1 < widths.size()) specs.push_back(LayerSpec{activation, {}});
  }
  return specs;
}

}  // namespace kpmap::train

/// \brief At namespace scope in a program's source file: registers layer
/// template L (an unqualified name) with a LayerInfo before main() runs, as
/// register_layer<L>(info) (deck/registry.hpp, KPMAP_REGISTER_PIECE).
#define KPMAP_TRAIN_REGISTER_LAYER(L, ...) \
  KPMAP_REGISTER_PIECE(::kpmap::train::register_layer, L, __VA_ARGS__)

/// \brief In a layer header of src/kpmap/train/layers/ (namespace
/// kpmap::train, at its end): the registration of the built-in layer `name`,
/// which the build finds and calls from the registry (a generated
/// builtin_layers.cpp; deck/registry.hpp, KPMAP_BUILTIN_PIECE).
#define KPMAP_TRAIN_BUILTIN_LAYER(name, L, ...) \
  KPMAP_BUILTIN_PIECE(::kpmap::train::register_layer, name, L, __VA_ARGS__)
