// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Softmax cross-entropy on a score per class: L = log sum exp(z) -
/// z(label), with the row's prediction (the largest score) counted right
/// when it is the label.

#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/train/losses/loss.hpp>

namespace kpmap::train {

namespace detail {
/// One thread per row: the softmax of its scores (shifted by their
/// maximum), its delta p - onehot(label), its loss and whether it is right.
/// Scores and delta in C; the softmax, the loss and the labels in A.
template <class C, class M, class A>
struct CrossEntropyDelta {
  using value_type = double[];  // (sum of losses, number correct)
  unsigned value_count = 2;
  Kokkos::View<const C**, Kokkos::LayoutRight, M> z;
  Kokkos::View<const A*, M> y;
  Kokkos::View<C**, Kokkos::LayoutRight, M> delta;
  A scale;
  KOKKOS_INLINE_FUNCTION A score(std::size_t k, std::size_t o) const {
    return static_cast<A>(z(k, o));
  }
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t k, double* stats) const {
    using namespace kpmap::detail;
    const std::size_t c = z.extent(1);
    std::size_t best = 0;
    A zmax = score(k, 0);
    for (std::size_t o = 1; o < c; ++o) {
      if (score(k, o) > zmax) {
        zmax = score(k, o);
        best = o;
      }
    }
    A sum = 0;
    for (std::size_t o = 0; o < c; ++o) sum += math::exp(score(k, o) - zmax);
    const auto label = static_cast<std::size_t>(y(k));
    for (std::size_t o = 0; o < c; ++o) {
      const A p = math::exp(score(k, o) - zmax) / sum;
      delta(k, o) = static_cast<C>(scale * (p - (o == label ? A(1) : A(0))));
    }
    stats[0] += static_cast<double>(math::log(sum) - (score(k, label) - zmax));
    stats[1] += best == label ? 1.0 : 0.0;
  }
};
}  // namespace detail

template <class C, class M, class A>
class CrossEntropy final : public LossFunction<C, M, A> {
  using Base = LossFunction<C, M, A>;

 public:
  void delta_and_sums(const typename Base::Exec& exec, const typename Base::Scores& z,
                      const typename Base::Targets& y, const typename Base::Deltas& delta, A scale,
                      const typename Base::Sums& sums) const override {
    Kokkos::parallel_reduce("kpmap::train::sequential::output_delta",
                            Kokkos::RangePolicy<typename Base::Exec>(exec, 0, z.extent(0)),
                            detail::CrossEntropyDelta<C, M, A>{2, z, y, delta, scale}, sums);
  }
};

KPMAP_TRAIN_BUILTIN_LOSS(cross_entropy, CrossEntropy,
                         {"cross_entropy",
                          "softmax cross-entropy on a score per class "
                          "(classification)",
                          /*classification=*/true, /*outputs=*/0})

}  // namespace kpmap::train
