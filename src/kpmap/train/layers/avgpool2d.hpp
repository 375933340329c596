#pragma once
/// \file
/// \brief Average pooling over size x size windows.

#include <kpmap/train/layers/pooling.hpp>

namespace kpmap::train {

namespace detail {
template <class T, class M>
struct AvgPoolForward {
  Kokkos::View<const T**, Kokkos::LayoutRight, M> in;
  Kokkos::View<T**, Kokkos::LayoutRight, M> out;
  PoolGeometry g;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t o) const {
    T sum = 0;
    for (std::size_t dy = 0; dy < g.p; ++dy) {
      for (std::size_t dx = 0; dx < g.p; ++dx) sum += in.data()[g.input_of(o, dy, dx)];
    }
    out.data()[o] = sum / static_cast<T>(g.p * g.p);
  }
};

template <class T, class M>
struct AvgPoolBackward {
  Kokkos::View<const T**, Kokkos::LayoutRight, M> dout;
  Kokkos::View<T**, Kokkos::LayoutRight, M> din;
  PoolGeometry g;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const {
    std::size_t offset = 0;
    const long long o = g.output_of(i, offset);
    din.data()[i] =
        o >= 0 ? dout.data()[static_cast<std::size_t>(o)] / static_cast<T>(g.p * g.p) : T(0);
  }
};
}  // namespace detail

template <class T, class M = Kokkos::DefaultExecutionSpace::memory_space>
class AvgPool2D final : public Pool2D<T, M> {
  using Base = Pool2D<T, M>;

 public:
  using typename Layer<T, M>::Batch;
  using typename Layer<T, M>::Exec;

  AvgPool2D(Shape input, std::size_t size) : Base(input, size, "avgpool2d") {}
  void forward(const Exec& exec, const Batch& in, const Batch& out) override {
    Kokkos::parallel_for("kpmap::train::avgpool2d::forward",
                         Kokkos::RangePolicy<Exec>(exec, 0, out.size()),
                         detail::AvgPoolForward<T, M>{in, out, this->g_});
  }
  void backward(const Exec& exec, const Batch&, const Batch&, const Batch& dout,
                const Batch& din) override {
    if (din.data() == nullptr) return;
    Kokkos::parallel_for("kpmap::train::avgpool2d::backward",
                         Kokkos::RangePolicy<Exec>(exec, 0, din.size()),
                         detail::AvgPoolBackward<T, M>{dout, din, this->g_});
  }
};

}  // namespace kpmap::train
