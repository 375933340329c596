// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief What every model (Sequential, Linear) shares with the Trainer and
/// the optimizers: its parameters as one flat tree, a micro-batch's place
/// in its step, what an evaluation returns, and the kernel that casts
/// parameters and gradients between a model's types.

#include <kpmap/train/losses/loss.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace kpmap::train {

/// \brief A model's parameters, or its gradient, or an optimizer's moments:
/// one contiguous View (a tree of one leaf for collectives and optimizers).
/// Sequential::for_each_slice names the layers' arrays within it.
template <class T, class M = Kokkos::DefaultExecutionSpace::memory_space>
struct FlatParams {
  using memory_space = M;
  Kokkos::View<T*, M> all;
  template <class F>
  void for_each_view(F&& f) const {
    f(all);
  }
  /// The tree over flat Views of the leaves' sizes (an optimizer's moments).
  static FlatParams unflatten(const std::vector<Kokkos::View<T*, M>>& leaves) {
    return {leaves.at(0)};
  }
};

/// \brief Parameters of the linear model (replicated on every rank), or a
/// gradient of the same shape.
template <class T, class M = Kokkos::DefaultExecutionSpace::memory_space>
struct LinearParams {
  using memory_space = M;  ///< where every View of the tree lives
  Kokkos::View<T*, M> w;
  Kokkos::View<T, M> b;

  LinearParams() = default;
  LinearParams(const std::string& label, std::size_t features)
      : w(label + ".w", features), b(label + ".b") {}

  /// Visits every View of the tree (collectives and optimizers use this).
  template <class F>
  void for_each_view(F&& f) const {
    f(w);
    f(b);
  }
  /// Names of the Views, in for_each_view order (checkpoint datasets).
  static std::vector<std::string> names() { return {"w", "b"}; }
  /// The tree over flat Views of the leaves' sizes (an optimizer's moments).
  static LinearParams unflatten(const std::vector<Kokkos::View<T*, M>>& leaves) {
    LinearParams p;
    p.w = leaves.at(0);
    p.b = Kokkos::View<T, M>(leaves.at(1).data());
    return p;
  }
};

/// \brief Where a call of Sequential::loss_and_gradient sits in a step made
/// of micro-batches (gradient accumulation): the first overwrites the
/// gradient, later ones add to it, and the last reduces it over the ranks.
struct MicroBatch {
  bool first = true;
  bool last = true;
};

/// \brief Loss, accuracy and (cross-entropy) the confusion matrix of a data
/// set, over all ranks.
struct Evaluation : BatchStats {
  std::size_t classes = 0;
  std::vector<double> confusion;  ///< classes x classes, row = true label, column = predicted
};

namespace detail {
/// to(i) = from(i) * scale, converted to `to`'s type (beta = 1: added to
/// what `to` holds). Casts parameters down to the compute type and
/// gradients up to the master type, and adds a micro-batch's gradient part.
template <class To, class From, class M>
struct CastScaled {
  Kokkos::View<To*, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> to;
  Kokkos::View<const From*, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> from;
  To scale;
  bool add;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const {
    const To v = static_cast<To>(from(i)) * scale;
    to(i) = add ? to(i) + v : v;
  }
};
}  // namespace detail

}  // namespace kpmap::train
