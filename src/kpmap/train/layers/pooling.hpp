// SPDX-License-Identifier: BSD-3-Clause
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

  /// Flat NHWC index of channel 0 of the window's top-left input pixel, for
  /// output pixel `op` = (s oh + oy) ow + ox.
  KOKKOS_INLINE_FUNCTION std::size_t corner(std::size_t op) const {
    const std::size_t ox = op % ow;
    const std::size_t oy = (op / ow) % oh;
    const std::size_t s = op / (ow * oh);
    return ((s * h + oy * p) * w + ox * p) * c;
  }
  /// Offset of window position (dy, dx) from the corner.
  KOKKOS_INLINE_FUNCTION std::size_t at(std::size_t dy, std::size_t dx) const {
    return (dy * w + dx) * c;
  }
  /// Whether rows or columns are cut off at the bottom or right edge.
  bool edges() const { return oh * p != h || ow * p != w; }
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
