// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Average pooling over size x size windows.

#include <kpmap/train/layers/pooling.hpp>
#include <kpmap/train/layers/registry.hpp>

namespace kpmap::train {

namespace detail {
/// One thread per output pixel, all its channels.
template <class T, class M>
struct AvgPoolForward {
  Kokkos::View<const T**, Kokkos::LayoutRight, M> in;
  Kokkos::View<T**, Kokkos::LayoutRight, M> out;
  PoolGeometry g;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t op) const {
    const T* x = in.data() + g.corner(op);
    for (std::size_t ch = 0; ch < g.c; ++ch) {
      T sum = 0;
      for (std::size_t dy = 0; dy < g.p; ++dy) {
        for (std::size_t dx = 0; dx < g.p; ++dx) sum += x[g.at(dy, dx) + ch];
      }
      out.data()[op * g.c + ch] = sum / static_cast<T>(g.p * g.p);
    }
  }
};

/// One thread per output pixel: its gradient, shared equally by its window.
template <class T, class M>
struct AvgPoolBackward {
  Kokkos::View<const T**, Kokkos::LayoutRight, M> dout;
  Kokkos::View<T**, Kokkos::LayoutRight, M> din;
  PoolGeometry g;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t op) const {
    T* d = din.data() + g.corner(op);
    for (std::size_t ch = 0; ch < g.c; ++ch) {
      const T share = dout.data()[op * g.c + ch] / static_cast<T>(g.p * g.p);
      for (std::size_t dy = 0; dy < g.p; ++dy) {
        for (std::size_t dx = 0; dx < g.p; ++dx) d[g.at(dy, dx) + ch] = share;
      }
    }
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
  /// From its deck keys: size.
  AvgPool2D(Shape input, const deck::Settings& keys)
      : AvgPool2D(input, static_cast<std::size_t>(keys.integer("size"))) {}
  void forward(const Exec& exec, const Batch& in, const Batch& out) override {
    Kokkos::parallel_for("kpmap::train::avgpool2d::forward",
                         Kokkos::RangePolicy<Exec>(exec, 0, out.size() / this->g_.c),
                         detail::AvgPoolForward<T, M>{in, out, this->g_});
  }
  void backward(const Exec& exec, const Batch&, const Batch&, const Batch& dout,
                const Batch& din) override {
    if (din.data() == nullptr) return;
    if (this->g_.edges()) Kokkos::deep_copy(exec, din, T(0));  // the cut-off rows and columns
    Kokkos::parallel_for("kpmap::train::avgpool2d::backward",
                         Kokkos::RangePolicy<Exec>(exec, 0, dout.size() / this->g_.c),
                         detail::AvgPoolBackward<T, M>{dout, din, this->g_});
  }
};

KPMAP_TRAIN_BUILTIN_LAYER(avgpool2d, AvgPool2D,
                          {"avgpool2d", "the mean of each window, per channel",
                           deck::Schema("avgpool2d")
                               .integer("size", 2, {1, 255}, "pixels",
                                        "size x size windows, stride size")})

}  // namespace kpmap::train
