#pragma once
/// \file
/// \brief Dense (fully connected) layer: out = in W^T + b, W is units x inputs.

#include <kpmap/base/detail/blas.hpp>
#include <kpmap/train/layers/registry.hpp>
#include <kpmap/train/layers/weighted.hpp>

namespace kpmap::train {

/// \brief A fully connected layer on flat inputs (put a Flatten before it
/// when its input is an image).
template <class T, class M = Kokkos::DefaultExecutionSpace::memory_space>
class Dense final : public Weighted<T, M> {
  using Base = Weighted<T, M>;

 public:
  using typename Layer<T, M>::Batch;
  using typename Layer<T, M>::Exec;

  Dense(Shape input, std::size_t units) : Base(input, units, input.size(), units) {
    if (input.image) {
      throw ShapeError("dense: its input is a " + input.str() +
                       "; put a { type = \"flatten\" } layer before it");
    }
    if (units == 0) throw ShapeError("dense: units must be at least 1");
  }
  /// From its deck keys: units.
  Dense(Shape input, const deck::Settings& keys)
      : Dense(input, static_cast<std::size_t>(keys.integer("units"))) {}

  std::string type() const override { return "dense"; }
  std::string describe() const override { return "dense " + std::to_string(this->outputs_); }
  Shape output_shape() const override { return Shape::flat(this->outputs_); }
  void reserve(std::size_t capacity) override { this->reserve_rows(capacity); }

  void forward(const Exec& exec, const Batch& in, const Batch& out) override {
    kpmap::detail::gemm(exec, "N", "T", T(1), in, this->w_, T(0), out);
    this->add_bias(exec, out.data(), out.extent(0));
  }
  void backward(const Exec& exec, const Batch& in, const Batch&, const Batch& dout,
                const Batch& din) override {
    // dW = dout^T in; db = dout^T 1; din = dout W.
    kpmap::detail::gemm(exec, "T", "N", T(1), dout, in, this->grad_beta_, this->dw_);
    this->bias_gradient(exec, dout);
    if (din.data() != nullptr) kpmap::detail::gemm(exec, "N", "N", T(1), dout, this->w_, T(0), din);
  }
  double work_bytes_per_sample() const override { return sizeof(T); }
  double forward_flops() const override { return double(this->outputs_) * double(this->fan_in_); }
};

KPMAP_TRAIN_BUILTIN_LAYER(dense, Dense,
                          {"dense",
                           "fully connected, out = in W^T + b",
                           deck::Schema("dense").integer("units", 0, {0, 1 << 24}, "", "outputs"),
                           {"units"}})

}  // namespace kpmap::train
