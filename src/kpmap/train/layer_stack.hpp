// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief A stack of layers before it is a model: whether it chains from the
/// data's shape to what the loss reads, what it holds (parameters, work
/// arrays per sample), and which layers run fused into another. The deck's
/// reader checks and sizes a stack with these before anything is
/// allocated; Sequential builds on them.

#include <kpmap/base/error.hpp>
#include <kpmap/train/layers/layer.hpp>
#include <kpmap/train/losses/loss.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace kpmap::train {

template <class C, class M>
using LayerStack = std::vector<std::unique_ptr<Layer<C, M>>>;

/// \brief Parameters of `layers`, without building the model.
template <class C, class M>
std::size_t stack_parameter_count(const LayerStack<C, M>& layers) {
  std::size_t n = 0;
  for (const auto& layer : layers) {
    for (const auto& p : layer->parameters()) n += p.size();
  }
  return n;
}

/// \brief Throws ShapeError unless `layers` chain from `input` and end in
/// what `loss` needs (allocates nothing).
template <class C, class M>
void check_stack(const Shape& input, const LayerStack<C, M>& layers, const Loss& loss) {
  if (layers.empty()) throw ShapeError("a model needs at least one layer");
  if (stack_parameter_count(layers) == 0) {
    throw ShapeError("the model has no layer with parameters to train");
  }
  Shape shape = input;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    if (!(layers[l]->input_shape() == shape)) {
      throw ShapeError("layer " + std::to_string(l + 1) + " (" + layers[l]->type() +
                           ") was built for a " + layers[l]->input_shape().str() +
                           " input but receives a " + shape.str(),
                       l + 1);
    }
    shape = layers[l]->output_shape();
  }
  const Shape out = shape;
  if (out.image) {
    throw ShapeError("the model's output is a " + out.str() +
                         "; end it with { type = \"flatten\" } and a dense layer",
                     layers.size());
  }
  const LossInfo& info = loss_info(loss.name);
  if (info.outputs > 0 && out.channels != info.outputs) {
    throw ShapeError(loss.name + " reads " + std::to_string(info.outputs) + " output" +
                         (info.outputs > 1 ? "s" : "") + ", and the last layer gives " + out.str(),
                     layers.size());
  }
  if (info.outputs == 0 && out.channels < 2) {
    throw ShapeError(loss.name +
                         " needs a score per class (at least 2), and the last layer "
                         "gives " +
                         out.str(),
                     layers.size());
  }
}

/// \brief Bytes of work arrays per sample of capacity: activations, their
/// gradients and the layers' own (convolution patches, say).
template <class C, class M>
double stack_work_bytes_per_sample(const Shape& input, const LayerStack<C, M>& layers) {
  double b = 2.0 * sizeof(C) * double(input.size());
  for (const auto& layer : layers) {
    b += layer->work_bytes_per_sample();
    if (!layer->in_place()) b += 2.0 * sizeof(C) * double(layer->output_shape().size());
  }
  return b;
}

/// \brief Which layers run inside another: `absorbed[l]`, a layer another
/// applies (a ReLU the next layer applies itself, or a layer whose output
/// an earlier one computes), which runs no passes of its own; `ends[l]`,
/// the activation layer l writes (l + 1, or past the layers it absorbs).
struct StackFusion {
  std::vector<bool> absorbed;
  std::vector<std::size_t> ends;
};

template <class C, class M>
StackFusion fuse_stack(const LayerStack<C, M>& layers) {
  StackFusion f;
  f.absorbed.assign(layers.size(), false);
  for (std::size_t l = 0; l + 1 < layers.size(); ++l) {
    if (layers[l]->type() == "relu" && layers[l]->in_place()) {
      f.absorbed[l] = layers[l + 1]->absorb_relu();
    }
  }
  // A layer that computes the next one's output itself (a first
  // convolution and its max pooling) writes that layer's output.
  f.ends.resize(layers.size());
  for (std::size_t l = 0; l < layers.size(); ++l) {
    f.ends[l] = l + 1;
    if (f.absorbed[l]) continue;
    std::size_t next = l + 1;
    while (next < layers.size() && f.absorbed[next]) ++next;
    if (next < layers.size() && layers[l]->absorb_next(*layers[next], l > 0)) {
      for (std::size_t k = l + 1; k <= next; ++k) f.absorbed[k] = true;
      f.ends[l] = next + 1;
    }
  }
  return f;
}

/// \brief One line per layer: what it is, its shapes and parameter count.
template <class C, class M>
std::vector<std::string> stack_summary(const LayerStack<C, M>& layers) {
  std::vector<std::string> lines;
  for (const auto& layer : layers) {
    std::size_t n = 0;
    for (const auto& p : layer->parameters()) n += p.size();
    lines.push_back(layer->describe() + ": " + layer->input_shape().str() + " -> " +
                    layer->output_shape().str() + ", " + std::to_string(n) + " parameters");
  }
  return lines;
}

/// \brief Multiply-adds of one sample's forward pass.
template <class C, class M>
double stack_forward_flops(const LayerStack<C, M>& layers) {
  double f = 0;
  for (const auto& layer : layers) f += layer->forward_flops();
  return f;
}

/// \brief The stack's work arrays for batches of up to `capacity` samples:
/// acts[l] is layer l's input, acts[L] the output; deltas[l] the gradient of
/// acts[l] (none for the input). An in-place layer shares both with the
/// layer before it; arrays inside a fused span (StackFusion::ends) are never
/// used: none. Each layer reserves its own work arrays.
template <class C, class M>
struct StackArrays {
  using Batch = typename Layer<C, M>::Batch;
  std::vector<Batch> acts, deltas;

  StackArrays(const Shape& input, const LayerStack<C, M>& layers, const StackFusion& fusion,
              std::size_t capacity) {
    const auto allocate = [capacity](const char* label, const Shape& s) {
      return Batch(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), capacity,
                   s.size());
    };
    acts.push_back(allocate("kpmap::train::sequential::input", input));
    deltas.push_back(Batch());
    std::size_t skip_to = 0;  // acts[k] for k < skip_to lie inside a fused span
    for (std::size_t l = 0; l < layers.size(); ++l) {
      const auto& layer = layers[l];
      skip_to = std::max(skip_to, fusion.ends[l]);
      if (layer->in_place()) {
        acts.push_back(acts.back());
        deltas.push_back(deltas.back());
      } else if (l + 1 < skip_to) {
        acts.push_back(Batch());
        deltas.push_back(Batch());
      } else {
        acts.push_back(allocate("kpmap::train::sequential::activation", layer->output_shape()));
        deltas.push_back(allocate("kpmap::train::sequential::delta", layer->output_shape()));
      }
      layer->reserve(capacity);
    }
  }
};

}  // namespace kpmap::train
