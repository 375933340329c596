#pragma once
/// \file
/// \brief What ReLU and Tanh share: an elementwise function applied in place,
/// whose derivative is known from its output (so backward needs nothing
/// else, and the layer costs no extra memory).

#include <kpmap/train/layers/layer.hpp>

namespace kpmap::train {

namespace detail {
template <class T, class M, class Op>
struct ElementwiseForward {
  Kokkos::View<T**, Kokkos::LayoutRight, M> a;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const {
    a.data()[i] = Op::value(a.data()[i]);
  }
};
template <class T, class M, class Op>
struct ElementwiseBackward {
  Kokkos::View<const T**, Kokkos::LayoutRight, M> out;
  Kokkos::View<T**, Kokkos::LayoutRight, M> grad;  // dL/d(out) in, dL/d(in) out
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const {
    grad.data()[i] *= Op::slope_from_output(out.data()[i]);
  }
};
}  // namespace detail

/// \brief A layer y = Op::value(x), elementwise, in place. `Op` gives
/// `value(x)` and `slope_from_output(y)` = dy/dx.
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
  void forward(const Exec& exec, const Batch& in, const Batch&) override {
    Kokkos::parallel_for("kpmap::train::activation::forward",
                         Kokkos::RangePolicy<Exec>(exec, 0, in.size()),
                         detail::ElementwiseForward<T, M, Op>{in});
  }
  void backward(const Exec& exec, const Batch&, const Batch& out, const Batch& dout,
                const Batch& din) override {
    if (din.data() == nullptr) return;
    Kokkos::parallel_for("kpmap::train::activation::backward",
                         Kokkos::RangePolicy<Exec>(exec, 0, dout.size()),
                         detail::ElementwiseBackward<T, M, Op>{out, dout});
  }
};

}  // namespace kpmap::train
