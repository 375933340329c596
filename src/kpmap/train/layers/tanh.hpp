#pragma once
/// \file
/// \brief Tanh: tanh(x), slope 1 - y^2 from the output y.

#include <kpmap/detail/kokkos_compat.hpp>
#include <kpmap/train/layers/activation.hpp>

namespace kpmap::train {

template <class T>
struct TanhOp {
  static constexpr const char* name = "tanh";
  KOKKOS_INLINE_FUNCTION static T value(T x) { return kpmap::detail::math::tanh(x); }
  KOKKOS_INLINE_FUNCTION static T slope_from_output(T y) { return T(1) - y * y; }
};

template <class T, class M = Kokkos::DefaultExecutionSpace::memory_space>
using Tanh = Elementwise<T, M, TanhOp<T>>;

}  // namespace kpmap::train
