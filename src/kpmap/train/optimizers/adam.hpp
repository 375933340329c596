// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Adam with bias correction: first and second moments of the
/// gradient, p -= lr (m / c1) / (sqrt(v / c2) + epsilon).

#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/base/policy.hpp>
#include <kpmap/train/optimizers/optimizer.hpp>

#include <cmath>

namespace kpmap::train {

namespace detail {
template <class T, class M>
struct AdamStep {
  kpmap::detail::flat_view_t<T, M> p;
  kpmap::detail::flat_view_t<const T, M> g;
  kpmap::detail::flat_view_t<T, M> m, v;
  T lr, beta1, beta2, eps, c1, c2;  // c1, c2: the bias corrections
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const {
    m(i) = beta1 * m(i) + (T(1) - beta1) * g(i);
    v(i) = beta2 * v(i) + (T(1) - beta2) * g(i) * g(i);
    using namespace kpmap::detail;
    p(i) -= lr * (m(i) / c1) / (math::sqrt(v(i) / c2) + eps);
  }
};
}  // namespace detail

template <class T, class M>
class Adam final : public UpdateRule<T, M> {
 public:
  using typename UpdateRule<T, M>::Exec;
  using typename UpdateRule<T, M>::Flat;
  using typename UpdateRule<T, M>::ConstFlat;
  explicit Adam(const deck::Settings& keys)
      : beta1_(keys.real("beta1")), beta2_(keys.real("beta2")), eps_(keys.real("epsilon")) {}
  void apply(const Exec& exec, long long t, T lr, const Flat& p, const ConstFlat& g,
             const Flat* state) const override {
    const double c1 = 1.0 - std::pow(beta1_, static_cast<double>(t));
    const double c2 = 1.0 - std::pow(beta2_, static_cast<double>(t));
    kpmap::parallel_for_elements(
        "kpmap::train::optimizer::step", exec, p.size(),
        detail::AdamStep<T, M>{p, g, state[0], state[1], lr, static_cast<T>(beta1_),
                               static_cast<T>(beta2_), static_cast<T>(eps_), static_cast<T>(c1),
                               static_cast<T>(c2)});
  }

 private:
  double beta1_, beta2_, eps_;
};

// Its moments are the states "m" and "v" (checkpoints: optimizer.m.*, optimizer.v.*).
KPMAP_TRAIN_BUILTIN_OPTIMIZER(adam, Adam,
                              {"adam",
                               "Adam with bias correction",
                               deck::Schema("adam")
                                   .real("beta1", 0.9, {0, 0.999999}, "", "first-moment decay")
                                   .real("beta2", 0.999, {0, 0.999999999}, "",
                                         "second-moment decay")
                                   .real("epsilon", 1e-8, {0, 1, /*above_min=*/true}, "",
                                         "denominator guard (above zero: 0/0 where a "
                                         "gradient stays zero)"),
                               {"m", "v"},
                               /*full_batch=*/false,
                               /*never_negative=*/{"v"}})

}  // namespace kpmap::train
