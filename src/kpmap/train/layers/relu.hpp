// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief ReLU: max(x, 0), slope 1 where the output is positive, else 0.

#include <kpmap/train/layers/activation.hpp>
#include <kpmap/train/layers/registry.hpp>

namespace kpmap::train {

template <class T>
struct ReluOp {
  static constexpr const char* name = "relu";
  KOKKOS_INLINE_FUNCTION static T value(T x) { return x > T(0) ? x : T(0); }
  KOKKOS_INLINE_FUNCTION static T slope_from_output(T y) { return y > T(0) ? T(1) : T(0); }
};

template <class T, class M = Kokkos::DefaultExecutionSpace::memory_space>
using ReLU = Elementwise<T, M, ReluOp<T>>;

KPMAP_TRAIN_BUILTIN_LAYER(relu, ReLU, {"relu", "max(x, 0), elementwise"})

}  // namespace kpmap::train
