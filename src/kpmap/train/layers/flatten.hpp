#pragma once
/// \file
/// \brief Flatten: an image becomes a vector of height x width x channels
/// features, in NHWC order. The storage is shared, so it moves no data.

#include <kpmap/train/layers/layer.hpp>
#include <kpmap/train/layers/registry.hpp>

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
  void forward(const Exec&, const Batch&, const Batch&) override {}
  void backward(const Exec&, const Batch&, const Batch&, const Batch&, const Batch&) override {}
};

KPMAP_TRAIN_BUILTIN_LAYER(flatten, Flatten,
                          {"flatten",
                           "an image as height x width x channels features (moves no data)"})

}  // namespace kpmap::train
