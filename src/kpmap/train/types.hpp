// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief The value types and memory spaces the registered pieces of
/// training (layers, losses, optimizers) are built for, once each, when they
/// register: a program can build them by name for any of these.

#include <kpmap/base/detail/kokkos_compat.hpp>

#include <Kokkos_Core.hpp>

#include <type_traits>

// half_t is a type of its own only where it is 16 bits (else it is float).
#if defined(KOKKOS_HALF_T_IS_FLOAT) && !KOKKOS_HALF_T_IS_FLOAT
#define KPMAP_TRAIN_HALF_(X) X(::kpmap::detail::half, Kokkos::DefaultExecutionSpace::memory_space)
#else
#define KPMAP_TRAIN_HALF_(X)
#endif

/// \brief Expands X(T, M) for every type of parameters and memory space an
/// optimizer is built for: double and float in the default memory space
/// (where models live; add a line here to train in another).
#define KPMAP_TRAIN_FOR_EACH_VALUE_TYPE(X)               \
  X(double, Kokkos::DefaultExecutionSpace::memory_space) \
  X(float, Kokkos::DefaultExecutionSpace::memory_space)

/// \brief Expands X(T, M) for every compute type and memory space a layer is
/// built for: those of KPMAP_TRAIN_FOR_EACH_VALUE_TYPE, and 16-bit half_t in
/// the default memory space where it exists (mixed precision).
#define KPMAP_TRAIN_FOR_EACH_LAYER_TYPE(X) \
  KPMAP_TRAIN_FOR_EACH_VALUE_TYPE(X)       \
  KPMAP_TRAIN_HALF_(X)

// half_t outputs with float targets: mixed precision's loss.
#if defined(KOKKOS_HALF_T_IS_FLOAT) && !KOKKOS_HALF_T_IS_FLOAT
#define KPMAP_TRAIN_HALF_LOSS_(X) \
  X(::kpmap::detail::half, Kokkos::DefaultExecutionSpace::memory_space, float)
#else
#define KPMAP_TRAIN_HALF_LOSS_(X)
#endif

/// \brief Expands X(C, M, A) for every output type C, memory space M and
/// target type A a loss is built for: double and float outputs with targets
/// of their type, float outputs with double targets (a double model
/// computing in float), and 16-bit half_t outputs with float targets where
/// half_t exists.
#define KPMAP_TRAIN_FOR_EACH_LOSS_TYPE(X)                        \
  X(double, Kokkos::DefaultExecutionSpace::memory_space, double) \
  X(float, Kokkos::DefaultExecutionSpace::memory_space, float)   \
  X(float, Kokkos::DefaultExecutionSpace::memory_space, double)  \
  KPMAP_TRAIN_HALF_LOSS_(X)

// float parameters computing in half_t: mixed precision's model.
#if defined(KOKKOS_HALF_T_IS_FLOAT) && !KOKKOS_HALF_T_IS_FLOAT
#define KPMAP_TRAIN_HALF_MODEL_(X) \
  X(float, Kokkos::DefaultExecutionSpace::memory_space, ::kpmap::detail::half)
#else
#define KPMAP_TRAIN_HALF_MODEL_(X)
#endif

/// \brief Expands X(T, M, C) for every parameter type T, memory space M and
/// compute type C a model (Sequential<T, M, C>) is built for, once, in
/// kpmap's library (train/instances/): double and float computing in their
/// own type, and float computing in 16-bit half_t where half_t exists
/// (model.precision = "mixed"). Another that its layers and loss are built
/// for (double computing in float) is compiled where it is used, from
/// train/sequential_def.hpp.
#define KPMAP_TRAIN_FOR_EACH_MODEL_TYPE(X)                       \
  X(double, Kokkos::DefaultExecutionSpace::memory_space, double) \
  X(float, Kokkos::DefaultExecutionSpace::memory_space, float)   \
  KPMAP_TRAIN_HALF_MODEL_(X)

namespace kpmap::train::detail {
template <class C, class M, class A>
struct IsLossType : std::false_type {};
#define KPMAP_TRAIN_LOSS_TYPE_(C, M, A) \
  template <>                           \
  struct IsLossType<C, M, A> : std::true_type {};
KPMAP_TRAIN_FOR_EACH_LOSS_TYPE(KPMAP_TRAIN_LOSS_TYPE_)
#undef KPMAP_TRAIN_LOSS_TYPE_
template <class T, class M>
struct IsValueType : std::false_type {};
template <class T, class M>
struct IsLayerType : std::false_type {};
#define KPMAP_TRAIN_VALUE_TYPE_(T, M) \
  template <>                         \
  struct IsValueType<T, M> : std::true_type {};
#define KPMAP_TRAIN_LAYER_TYPE_(T, M) \
  template <>                         \
  struct IsLayerType<T, M> : std::true_type {};
KPMAP_TRAIN_FOR_EACH_VALUE_TYPE(KPMAP_TRAIN_VALUE_TYPE_)
KPMAP_TRAIN_FOR_EACH_LAYER_TYPE(KPMAP_TRAIN_LAYER_TYPE_)
#undef KPMAP_TRAIN_VALUE_TYPE_
#undef KPMAP_TRAIN_LAYER_TYPE_
}  // namespace kpmap::train::detail
