// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief What ReLU and Tanh share: an elementwise function whose derivative
/// is known from its output (so backward needs nothing else), applied in
/// place when the model gives its input and output the same storage (the
/// layer then costs no extra memory), or from `in` to `out` when they differ.

#include <kpmap/train/layers/layer.hpp>

namespace kpmap::train {

namespace detail {
// `in` and `out` may be the same storage (each element read before it is written).
template <class T, class M, class Op>
struct ElementwiseForward {
  Kokkos::View<const T**, Kokkos::LayoutRight, M> in;
  Kokkos::View<T**, Kokkos::LayoutRight, M> out;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const {
    out.data()[i] = Op::value(in.data()[i]);
  }
};
// din = dout * slope, din and dout possibly the same storage.
template <class T, class M, class Op>
struct ElementwiseBackward {
  Kokkos::View<const T**, Kokkos::LayoutRight, M> out;
  Kokkos::View<const T**, Kokkos::LayoutRight, M> dout;
  Kokkos::View<T**, Kokkos::LayoutRight, M> din;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const {
    din.data()[i] = dout.data()[i] * Op::slope_from_output(out.data()[i]);
  }
};
}  // namespace detail

/// \brief A layer y = Op::value(x), elementwise: in place where `in` and
/// `out` (`dout` and `din`) are the same storage, as the model gives them.
/// `Op` gives `value(x)` and `slope_from_output(y)` = dy/dx.
template <class T, class M, class Op>
class Elementwise : public Layer<T, M> {
  using Base = Layer<T, M>;

 public:
  using typename Base::Batch;
  using typename Base::Exec;

  explicit Elementwise(Shape input) : Base(input) {}
  std::string type() const override { return Op::name; }
  Shape output_shape() const override { return this->input_; }
  bool in_place() const override { return true; }
  void forward(const Exec& exec, const Batch& in, const Batch& out) override {
    Kokkos::parallel_for("kpmap::train::activation::forward",
                         Kokkos::RangePolicy<Exec>(exec, 0, in.size()),
                         detail::ElementwiseForward<T, M, Op>{in, out});
  }
  void backward(const Exec& exec, const Batch&, const Batch& out, const Batch& dout,
                const Batch& din) override {
    if (din.data() == nullptr) return;
    Kokkos::parallel_for("kpmap::train::activation::backward",
                         Kokkos::RangePolicy<Exec>(exec, 0, dout.size()),
                         detail::ElementwiseBackward<T, M, Op>{out, dout, din});
  }
};

}  // namespace kpmap::train
