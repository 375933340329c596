// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Tanh: tanh(x), slope 1 - y^2 from the output y.

#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/train/layers/activation.hpp>
#include <kpmap/train/layers/registry.hpp>

#include <type_traits>

namespace kpmap::train {

template <class T>
struct TanhOp {
  static constexpr const char* name = "tanh";
  /// A 16-bit T (half_t) is computed in float: Kokkos 3.4 has no tanh for it.
  using Math = std::conditional_t<std::is_floating_point_v<T>, T, float>;
  KOKKOS_INLINE_FUNCTION static T value(T x) {
    return static_cast<T>(kpmap::detail::math::tanh(static_cast<Math>(x)));
  }
  KOKKOS_INLINE_FUNCTION static T slope_from_output(T y) { return T(1) - y * y; }
};

template <class T, class M = Kokkos::DefaultExecutionSpace::memory_space>
using Tanh = Elementwise<T, M, TanhOp<T>>;

KPMAP_TRAIN_BUILTIN_LAYER(tanh, Tanh, {"tanh", "tanh(x), elementwise"})

}  // namespace kpmap::train
