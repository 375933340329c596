#pragma once
/// \file
/// \brief Max pooling over size x size windows. Where a window holds equal
/// maxima, the first in row-major order takes the gradient (as in PyTorch).

#include <kpmap/train/layers/pooling.hpp>

#include <cstdint>

namespace kpmap::train {

namespace detail {
/// One thread per output element: the window's maximum and where it was.
template <class T, class M>
struct MaxPoolForward {
  Kokkos::View<const T**, Kokkos::LayoutRight, M> in;
  Kokkos::View<T**, Kokkos::LayoutRight, M> out;
  Kokkos::View<std::uint16_t*, M> where;
  PoolGeometry g;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t o) const {
    const T* x = in.data();
    T best = x[g.input_of(o, 0, 0)];
    std::uint16_t at = 0;
    for (std::size_t dy = 0; dy < g.p; ++dy) {
      for (std::size_t dx = 0; dx < g.p; ++dx) {
        const T v = x[g.input_of(o, dy, dx)];
        if (v > best) {
          best = v;
          at = static_cast<std::uint16_t>(dy * g.p + dx);
        }
      }
    }
    out.data()[o] = best;
    where(o) = at;
  }
};

/// One thread per input element: the output gradient if it was its window's maximum.
template <class T, class M>
struct MaxPoolBackward {
  Kokkos::View<const T**, Kokkos::LayoutRight, M> dout;
  Kokkos::View<T**, Kokkos::LayoutRight, M> din;
  Kokkos::View<const std::uint16_t*, M> where;
  PoolGeometry g;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const {
    std::size_t offset = 0;
    const long long o = g.output_of(i, offset);
    din.data()[i] = o >= 0 && where(static_cast<std::size_t>(o)) == offset
                        ? dout.data()[static_cast<std::size_t>(o)]
                        : T(0);
  }
};
}  // namespace detail

template <class T, class M = Kokkos::DefaultExecutionSpace::memory_space>
class MaxPool2D final : public Pool2D<T, M> {
  using Base = Pool2D<T, M>;

 public:
  using typename Layer<T, M>::Batch;
  using typename Layer<T, M>::Exec;

  MaxPool2D(Shape input, std::size_t size) : Base(input, size, "maxpool2d") {
    if (size > 255) throw ShapeError("maxpool2d: size must be at most 255");
  }
  void reserve(std::size_t capacity) override {
    where_ = Kokkos::View<std::uint16_t*, M>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::train::maxpool2d::where"),
        capacity * this->output_shape().size());
  }
  double work_bytes_per_sample() const override {
    return double(this->output_shape().size()) * sizeof(std::uint16_t);
  }
  void forward(const Exec& exec, const Batch& in, const Batch& out) override {
    Kokkos::parallel_for("kpmap::train::maxpool2d::forward",
                         Kokkos::RangePolicy<Exec>(exec, 0, out.size()),
                         detail::MaxPoolForward<T, M>{in, out, where_, this->g_});
  }
  void backward(const Exec& exec, const Batch&, const Batch&, const Batch& dout,
                const Batch& din) override {
    if (din.data() == nullptr) return;
    Kokkos::parallel_for("kpmap::train::maxpool2d::backward",
                         Kokkos::RangePolicy<Exec>(exec, 0, din.size()),
                         detail::MaxPoolBackward<T, M>{dout, din, where_, this->g_});
  }

 private:
  Kokkos::View<std::uint16_t*, M> where_;
};

}  // namespace kpmap::train
