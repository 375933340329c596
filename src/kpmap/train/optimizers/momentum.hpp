// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief SGD with momentum: v = momentum v + g; p -= lr v.

#include <kpmap/base/policy.hpp>
#include <kpmap/train/optimizers/optimizer.hpp>

namespace kpmap::train {

namespace detail {
template <class T, class M>
struct MomentumStep {
  FlatView<T, M> p;
  FlatView<const T, M> g;
  FlatView<T, M> v;
  T lr, mu;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const {
    v(i) = mu * v(i) + g(i);
    p(i) -= lr * v(i);
  }
};
}  // namespace detail

template <class T, class M>
class Momentum final : public UpdateRule<T, M> {
 public:
  using typename UpdateRule<T, M>::Exec;
  using typename UpdateRule<T, M>::Flat;
  using typename UpdateRule<T, M>::ConstFlat;
  explicit Momentum(const deck::Settings& keys) : mu_(static_cast<T>(keys.real("momentum"))) {}
  void apply(const Exec& exec, long long, T lr, const Flat& p, const ConstFlat& g,
             const Flat* state) const override {
    kpmap::parallel_for_elements("kpmap::train::optimizer::step", exec, p.size(),
                                 detail::MomentumStep<T, M>{p, g, state[0], lr, mu_});
  }

 private:
  T mu_;
};

// Its velocity is the state "m" (checkpoints: optimizer.m.*).
KPMAP_TRAIN_BUILTIN_OPTIMIZER(
    momentum, Momentum,
    {"momentum",
     "SGD with momentum, v = momentum v + g, p -= lr v",
     deck::Schema("momentum").real("momentum", 0.9, {0, 1}, "", "v = momentum v + g"),
     {"m"}})

}  // namespace kpmap::train
