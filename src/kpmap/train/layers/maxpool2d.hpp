// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Max pooling over size x size windows. Where a window holds equal
/// maxima, the first in row-major order takes the gradient (as in PyTorch).

#include <kpmap/base/policy.hpp>
#include <kpmap/train/layers/pooling.hpp>
#include <kpmap/train/layers/registry.hpp>

#include <cstdint>
#include <type_traits>

namespace kpmap::train {

namespace detail {
/// Channels a pooling thread handles together: the window loop goes
/// outside, a short fixed-length channel loop inside (contiguous, vectorizable).
inline constexpr std::size_t pool_lanes = 16;

/// One thread per output pixel: each channel's window maximum and where it
/// was (then max(that, 0) if `relu`).
template <class T, class M>
struct MaxPoolForward {
  Kokkos::View<const T**, Kokkos::LayoutRight, M> in;
  Kokkos::View<T**, Kokkos::LayoutRight, M> out;
  Kokkos::View<std::uint16_t*, M> where;
  PoolGeometry g;
  bool relu;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t op) const {
    const T* x = in.data() + g.corner(op);
    for (std::size_t c0 = 0; c0 < g.c; c0 += pool_lanes) {
      if (g.c - c0 >= pool_lanes) {
        window<pool_lanes>(x, op, c0);  // a fixed-length loop: whole vector registers
      } else {
        window<1>(x, op, c0, g.c - c0);
      }
    }
  }
  // Channels [c0, c0 + lanes * reps) of output pixel `op`, `lanes` at a time.
  template <std::size_t lanes>
  KOKKOS_INLINE_FUNCTION void window(const T* x, std::size_t op, std::size_t c0,
                                     std::size_t reps = 1) const {
    for (std::size_t r = 0; r < reps; ++r, c0 += lanes) {
      T best[lanes];
      // The window position, as wide as T (compare and select vectorise
      // together), and float for a 16-bit T, which holds integers exactly only to 2048.
      using Position = std::conditional_t<(sizeof(T) >= sizeof(float)), T, float>;
      Position at[lanes];
      for (std::size_t j = 0; j < lanes; ++j) {
        best[j] = x[c0 + j];
        at[j] = Position(0);
      }
      for (std::size_t dy = 0; dy < g.p; ++dy) {
        for (std::size_t dx = 0; dx < g.p; ++dx) {
          const T* v = x + g.at(dy, dx) + c0;
          const auto here = static_cast<Position>(dy * g.p + dx);  // < 2^16: exact
          KPMAP_VECTOR_LANES
          for (std::size_t j = 0; j < lanes; ++j) {
            // Strictly greater: a tie keeps the first maximum.
            const T vj = v[j], bj = best[j];
            const bool greater = vj > bj;
            at[j] = greater ? here : at[j];
            best[j] = greater ? vj : bj;
          }
        }
      }
      for (std::size_t j = 0; j < lanes; ++j) {
        out.data()[op * g.c + c0 + j] = relu && !(best[j] > T(0)) ? T(0) : best[j];
        where(op * g.c + c0 + j) = static_cast<std::uint16_t>(at[j]);
      }
    }
  }
};

/// One thread per output pixel: each window's gradient goes to its maximum,
/// zeros to the rest (windows do not overlap, so no two threads meet); with
/// `relu`, only where the output is positive.
template <class T, class M>
struct MaxPoolBackward {
  Kokkos::View<const T**, Kokkos::LayoutRight, M> dout;
  Kokkos::View<T**, Kokkos::LayoutRight, M> din;
  Kokkos::View<const std::uint16_t*, M> where;
  PoolGeometry g;
  Kokkos::View<const T**, Kokkos::LayoutRight, M> out;
  bool relu;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t op) const {
    T* d = din.data() + g.corner(op);
    const T* grad = dout.data() + op * g.c;
    const std::uint16_t* at = where.data() + op * g.c;
    const T* y = out.data() + op * g.c;
    for (std::size_t dy = 0; dy < g.p; ++dy) {
      for (std::size_t dx = 0; dx < g.p; ++dx) {
        T* dst = d + g.at(dy, dx);
        const auto here = static_cast<std::uint16_t>(dy * g.p + dx);
        for (std::size_t ch = 0; ch < g.c; ++ch) {
          dst[ch] = at[ch] == here && (!relu || y[ch] > T(0)) ? grad[ch] : T(0);
        }
      }
    }
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
  /// From its deck keys: size.
  MaxPool2D(Shape input, const deck::Settings& keys)
      : MaxPool2D(input, static_cast<std::size_t>(keys.integer("size"))) {}
  void reserve(std::size_t capacity) override {
    where_ = Kokkos::View<std::uint16_t*, M>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::train::maxpool2d::where"),
        capacity * this->output_shape().size());
  }
  double work_bytes_per_sample() const override {
    return double(this->output_shape().size()) * sizeof(std::uint16_t);
  }
  /// relu(maxpool(x)) = maxpool(relu(x)), and the gradients agree too: a
  /// window whose maximum is not positive passes none either way.
  bool absorb_relu() override {
    relu_ = true;
    return true;
  }
  /// \brief What a layer that computes this one's output itself
  /// (absorb_next) needs: the windows, where each maximum was (window
  /// position dy size + dx, per output), and whether a ReLU comes first.
  const PoolGeometry& geometry() const { return this->g_; }
  const Kokkos::View<std::uint16_t*, M>& where() const { return where_; }
  bool relu() const { return relu_; }

  void forward(const Exec& exec, const Batch& in, const Batch& out) override {
    Kokkos::parallel_for("kpmap::train::maxpool2d::forward",
                         Kokkos::RangePolicy<Exec>(exec, 0, out.size() / this->g_.c),
                         detail::MaxPoolForward<T, M>{in, out, where_, this->g_, relu_});
  }
  void backward(const Exec& exec, const Batch&, const Batch& out, const Batch& dout,
                const Batch& din) override {
    if (din.data() == nullptr) return;
    if (this->g_.edges()) Kokkos::deep_copy(exec, din, T(0));  // the cut-off rows and columns
    Kokkos::parallel_for("kpmap::train::maxpool2d::backward",
                         Kokkos::RangePolicy<Exec>(exec, 0, dout.size() / this->g_.c),
                         detail::MaxPoolBackward<T, M>{dout, din, where_, this->g_, out, relu_});
  }

 private:
  Kokkos::View<std::uint16_t*, M> where_;
  bool relu_ = false;  // applies the ReLU before it (absorb_relu)
};

KPMAP_TRAIN_BUILTIN_LAYER(maxpool2d, MaxPool2D,
                          {"maxpool2d", "the largest value of each window, per channel",
                           deck::Schema("maxpool2d")
                               .integer("size", 2, {1, 255}, "pixels",
                                        "size x size windows, stride size")})

}  // namespace kpmap::train
