// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief The shape of one sample and one rank's rows of a data set: what
/// the layers, the losses and the models read.
///
/// Sharding: the training rows [0, train) and the validation rows
/// [train, samples) of the global data set are each split over the axis in
/// blocks (BlockPartition), so every rank holds a balanced part of both.

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>

namespace kpmap::train {

/// \brief The shape of one sample: an image (height x width x channels,
/// NHWC), or a flat vector of `channels` features (height = width = 1).
struct Shape {
  std::size_t height = 1;
  std::size_t width = 1;
  std::size_t channels = 1;
  bool image = false;

  static Shape flat(std::size_t features) { return {1, 1, features, false}; }
  static Shape hwc(std::size_t h, std::size_t w, std::size_t c) { return {h, w, c, true}; }
  std::size_t size() const { return height * width * channels; }
  /// "28x28x1 image" or "784 features".
  std::string str() const {
    if (!image) return std::to_string(channels) + " features";
    return std::to_string(height) + "x" + std::to_string(width) + "x" + std::to_string(channels) +
           " image";
  }
  bool operator==(const Shape& o) const {
    return height == o.height && width == o.width && channels == o.channels && image == o.image;
  }
};

/// \brief One rank's rows of a data set: features (rows x F, row-major) and
/// targets (rows; a class index stored as T for classification), plus where
/// the rows lie in the global set.
template <class T, class M = Kokkos::DefaultExecutionSpace::memory_space>
struct Shard {
  Kokkos::View<T**, Kokkos::LayoutRight, M> x;
  Kokkos::View<T*, M> y;
  std::size_t global_rows = 0;  ///< rows of the whole (train or validation) set
  std::size_t begin = 0;        ///< first global row held here
  std::size_t rows() const { return x.extent(0); }
};

}  // namespace kpmap::train
