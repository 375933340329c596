// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Flatten: an image becomes a vector of height x width x channels
/// features, in NHWC order. In a model the storage is shared, so it moves no
/// data.

#include <kpmap/train/layers/layer.hpp>
#include <kpmap/train/layers/registry.hpp>

#include <utility>

namespace kpmap::train {

template <class T, class M = Kokkos::DefaultExecutionSpace::memory_space>
class Flatten final : public Layer<T, M> {
  using Base = Layer<T, M>;

 public:
  using typename Base::Batch;
  using typename Base::Exec;

  explicit Flatten(Shape input) : Base(input) {}
  std::string type() const override { return "flatten"; }
  Shape output_shape() const override { return Shape::flat(this->input_.size()); }
  bool in_place() const override { return true; }
  // The model gives input and output the same storage: nothing moves. Given
  // buffers of their own, the values are copied, as the layer is the identity.
  void forward(const Exec& exec, const Batch& in, const Batch& out) override {
    if (out.data() != in.data()) copy_rows(exec, in, out);
  }
  void backward(const Exec& exec, const Batch&, const Batch&, const Batch& dout,
                const Batch& din) override {
    if (din.data() != nullptr && din.data() != dout.data()) copy_rows(exec, dout, din);
  }

 private:
  static void copy_rows(const Exec& exec, const Batch& from, const Batch& to) {
    const std::pair<std::size_t, std::size_t> rows(0, from.extent(0));
    Kokkos::deep_copy(exec, Kokkos::subview(to, rows, Kokkos::ALL), from);
  }
};

KPMAP_TRAIN_BUILTIN_LAYER(flatten, Flatten,
                          {"flatten",
                           "an image as height x width x channels features (moves no data)"})

}  // namespace kpmap::train
