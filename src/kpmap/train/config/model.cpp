// SPDX-License-Identifier: BSD-3-Clause
// kpmap-train's [model] section: its keys and their reader, and the layer
// specs of model.layers (sequential) or model.hidden (mlp).
#include <kpmap/train/config/sections.hpp>

#include <kpmap/base/error.hpp>

#include <string>
#include <vector>

namespace kpmap::train::detail {

using deck::Deck;

void declare_model_keys(deck::Schema& s) {
  using deck::Range;
  s.string("model.kind", "linear", {"linear", "mlp", "sequential"},
           "linear: y ~ X w + b; mlp: dense layers with an activation; sequential: the "
           "layers of model.layers");
  s.integer_list("model.hidden", std::vector<long long>{32, 32}, Range{1, 1 << 20}, "",
                 "mlp: widths of the hidden layers (empty list: softmax/linear regression)");
  deck::Registry<LayerInfo>& layers = layer_registry();
  s.string("model.layers.#.type", std::nullopt, layers.names(),
           "sequential: one layer (model.layers = [{ type = ... }, ...], first to last): " +
               layers.described());
  layers.merge_keys(s, "model.layers.#.");
  s.string("model.activation", "relu", {"relu", "tanh"}, "mlp: activation of the hidden layers");
  s.string("model.tensor_parallel", "none", {"none", "auto"},
           "mlp: auto pairs the hidden layers over the mesh axis \"model\" (train.mesh), the "
           "first of each pair split by column, the second by row (Megatron-LM), an unpaired "
           "last one whole; none: every layer whole");
  deck::Registry<LossInfo>& losses = loss_registry();
  s.string("model.loss", "mse", losses.names(), "the loss (" + losses.described() + ")");
  losses.merge_keys(s, "model.", "model.loss");
  s.string("model.precision", "double", {"double", "float", "mixed"},
           "scalar type of data, parameters and arithmetic; mixed (mlp, sequential): "
           "parameters, gradient reduction and optimizer in float, forward and backward in "
           "16-bit half_t (a Kokkos built for CUDA, HIP or SYCL)");
  s.real("model.loss_scale", 1024, Range{1, 16777216}, "",
         "mixed: factor of the loss gradient, divided out before the reduction, so small "
         "gradients do not flush to zero in 16 bits (a power of two rounds nothing)");
  // When each key takes effect: a key given where it would do nothing is
  // refused (Schema::when).
  s.when("model.hidden", "model.kind", {"mlp"})
      .when("model.activation", "model.kind", {"mlp"})
      .when("model.tensor_parallel", "model.kind", {"mlp"})
      .when("model.loss_scale", "model.precision", {"mixed"});
}

ModelConfig read_model(const Deck& d) {
  ModelConfig m;
  m.kind = d.string("model.kind");
  m.activation = d.string("model.activation");
  m.loss = d.string("model.loss");
  // Its own keys (a key only other losses read was refused as the deck was read).
  m.loss_keys = loss_registry().own_keys(d, "model.", m.loss);
  m.precision = d.string("model.precision");
  m.loss_scale = d.real("model.loss_scale");
  for (long long w : d.integer_list("model.hidden")) m.hidden.push_back(std::size_t(w));
  m.tensor_parallel = d.string("model.tensor_parallel") == "auto";
  return m;
}

void read_layers(const Deck& d, TrainConfig& c) {
  const std::vector<int> at = d.indices("model.layers");
  if (c.model.kind != "sequential") {
    if (!at.empty()) {
      // Cites the first layer's line and names the list (Deck::bad would name the layer).
      throw kpmap::InputError(d.where("model.layers.1") +
                                  "key 'model.layers': layers are read "
                                  "for model.kind = \"sequential\", and model.kind is \"" +
                                  c.model.kind + "\"",
                              kpmap::ErrorScope::all_ranks);
    }
    if (c.model.kind == "mlp") {
      std::vector<std::size_t> widths{c.data.input.size()};
      widths.insert(widths.end(), c.model.hidden.begin(), c.model.hidden.end());
      const std::size_t outputs = loss_info(c.model.loss).outputs;
      widths.push_back(c.data.classification ? c.data.classes : outputs > 0 ? outputs : 1);
      c.model.layers = mlp_specs(widths, c.model.activation);
      if (c.model.tensor_parallel) {
        // Hidden layers 2k and 2k + 1 (of the dense layers, the last being the output) pair up.
        const std::size_t pairs = c.model.hidden.size() / 2;
        std::size_t dense = 0;
        for (auto& spec : c.model.layers) {
          if (spec.type != "dense") continue;
          if (dense < 2 * pairs) spec.keys["parallel"] = std::string(dense % 2 ? "row" : "column");
          ++dense;
        }
      }
      if (c.data.input.image) c.model.layers.insert(c.model.layers.begin(), LayerSpec{"flatten"});
    }
  } else if (at.empty()) {
    throw d.bad("model.layers", "model.kind = \"sequential\" needs its layers");
  }
  if (c.model.kind == "linear") return;
  for (std::size_t n = 0; n < at.size(); ++n) {
    if (at[n] != static_cast<int>(n) + 1) {
      throw d.bad("model.layers." + std::to_string(at[n]) + ".type",
                  "layers are numbered 1, 2, 3, ... without gaps (first to last), model.layers." +
                      std::to_string(n + 1) + " is missing");
    }
  }
  // Each layer's own keys (its registration's); a key only other types
  // declare is refused where the deck gives it a value other than its
  // default (a resolved deck, deck.toml, writes every key's), one it
  // requires where the deck does not give it.
  for (int i : at) {
    const std::string k = "model.layers." + std::to_string(i) + ".";
    LayerSpec s{d.string(k + "type")};
    const LayerInfo& mine = *find_layer(s.type);  // the schema's choices
    std::string reads;
    for (const deck::Key& key : mine.keys.keys()) reads += ", " + key.path;
    for (const LayerInfo* other : registered_layers()) {
      for (const deck::Key& key : other->keys.keys()) {
        if (d.given(k + key.path) && mine.keys.find(key.path) == nullptr &&
            d.value(k + key.path) != *key.fallback) {
          throw d.bad(k + key.path, "a " + s.type + " layer has no " + key.path +
                                        ", it would have no effect (a " + s.type + " layer reads " +
                                        (reads.empty() ? "only its type" : "type" + reads) + ")");
        }
      }
    }
    for (const std::string& key : mine.required) {
      if (!d.given(k + key)) {
        // A key the deck lacks has no line: the layer's table's is cited.
        throw kpmap::InputError(d.where(k.substr(0, k.size() - 1)) + "key '" + k + key + "': a " +
                                    s.type + " layer needs " + key,
                                kpmap::ErrorScope::all_ranks);
      }
    }
    for (const deck::Key& key : mine.keys.keys()) s.keys[key.path] = d.value(k + key.path);
    c.model.layers.push_back(s);
  }
}

}  // namespace kpmap::train::detail
