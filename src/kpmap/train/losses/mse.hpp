// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Mean squared error on one output: L = (z - y)^2.

#include <kpmap/train/losses/loss.hpp>

namespace kpmap::train {

namespace detail {
/// One thread per row: its delta and its squared error.
template <class C, class M, class A>
struct MseDelta {
  using value_type = double[];  // (sum of losses, number correct)
  unsigned value_count = 2;
  Kokkos::View<const C**, Kokkos::LayoutRight, M> z;
  Kokkos::View<const A*, M> y;
  Kokkos::View<C**, Kokkos::LayoutRight, M> delta;
  A scale;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t k, double* stats) const {
    const A r = static_cast<A>(z(k, 0)) - y(k);
    delta(k, 0) = static_cast<C>(2 * scale * r);
    stats[0] += static_cast<double>(r) * static_cast<double>(r);
  }
};
}  // namespace detail

template <class C, class M, class A>
class MeanSquaredError final : public LossFunction<C, M, A> {
  using Base = LossFunction<C, M, A>;

 public:
  void delta_and_sums(const typename Base::Exec& exec, const typename Base::Scores& z,
                      const typename Base::Targets& y, const typename Base::Deltas& delta, A scale,
                      const typename Base::Sums& sums) const override {
    Kokkos::parallel_reduce("kpmap::train::sequential::output_delta",
                            Kokkos::RangePolicy<typename Base::Exec>(exec, 0, z.extent(0)),
                            detail::MseDelta<C, M, A>{2, z, y, delta, scale}, sums);
  }
};

KPMAP_TRAIN_BUILTIN_LOSS(mse, MeanSquaredError,
                         {"mse", "mean squared error on one output (regression)",
                          /*classification=*/false, /*outputs=*/1})

}  // namespace kpmap::train
