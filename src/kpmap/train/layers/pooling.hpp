#pragma once
/// \file
/// \brief What MaxPool2D and AvgPool2D share: non-overlapping size x size
/// windows (stride = size) over each channel, whole windows only (rows and
/// columns left over at the bottom and right edge are dropped, and get a
/// zero gradient), as in Keras and PyTorch by default.

#include <kpmap/train/layers/layer.hpp>

namespace kpmap::train {

/// \brief Window geometry of a pooling layer, copied into its kernels.
struct PoolGeometry {
  std::size_t h = 0, w = 0, c = 0;  ///< input
  std::size_t oh = 0, ow = 0;       ///< output
  std::size_t p = 1;                ///< window size = stride

  /// Flat NHWC index of input (s, oy p + dy, ox p + dx, ch) from output index o.
  KOKKOS_INLINE_FUNCTION std::size_t input_of(std::size_t o, std::size_t dy, std::size_t dx) const {
    const std::size_t ch = o % c;
    const std::size_t ox = (o / c) % ow;
    const std::size_t oy = (o / (c * ow)) % oh;
    const std::size_t s = o / (c * ow * oh);
    return ((s * h + oy * p + dy) * w + ox * p + dx) * c + ch;
  }
  /// Output index whose window holds input index i, or -1 (cut off at the edge);
  /// `offset` gets i's place in the window (dy p + dx).
  KOKKOS_INLINE_FUNCTION long long output_of(std::size_t i, std::size_t& offset) const {
    const std::size_t ch = i % c;
    const std::size_t x = (i / c) % w;
    const std::size_t y = (i / (c * w)) % h;
    const std::size_t s = i / (c * w * h);
    if (y / p >= oh || x / p >= ow) return -1;
    offset = (y % p) * p + x % p;
    return static_cast<long long>(((s * oh + y / p) * ow + x / p) * c + ch);
  }
};

/// \brief The part of a pooling layer that does not depend on the reduction.
template <class T, class M>
class Pool2D : public Layer<T, M> {
  using Base = Layer<T, M>;

 public:
  Pool2D(Shape input, std::size_t size, const char* name) : Base(input), name_(name) {
    if (!input.image) {
      throw ShapeError(std::string(name) + ": its input is " + input.str() + ", not an image");
    }
    if (size == 0) throw ShapeError(std::string(name) + ": size must be at least 1");
    if (size > input.height || size > input.width) {
      throw ShapeError(std::string(name) + ": a " + std::to_string(size) + "x" +
                       std::to_string(size) + " window does not fit its " + input.str() + " input");
    }
    g_ = {input.height, input.width, input.channels, input.height / size, input.width / size, size};
  }
  std::string type() const override { return name_; }
  std::string describe() const override {
    return name_ + " " + std::to_string(g_.p) + "x" + std::to_string(g_.p);
  }
  Shape output_shape() const override { return Shape::hwc(g_.oh, g_.ow, g_.c); }

 protected:
  PoolGeometry g_;
  std::string name_;
};

}  // namespace kpmap::train
