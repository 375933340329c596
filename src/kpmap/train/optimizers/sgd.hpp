// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Gradient descent, p -= lr g: full-batch (gd) or on minibatches (sgd).

#include <kpmap/base/policy.hpp>
#include <kpmap/train/optimizers/optimizer.hpp>

namespace kpmap::train {

namespace detail {
template <class T, class M>
struct PlainStep {
  kpmap::detail::flat_view_t<T, M> p;
  kpmap::detail::flat_view_t<const T, M> g;
  T lr;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const { p(i) -= lr * g(i); }
};
}  // namespace detail

template <class T, class M>
class GradientDescent final : public UpdateRule<T, M> {
 public:
  using typename UpdateRule<T, M>::Exec;
  using typename UpdateRule<T, M>::Flat;
  using typename UpdateRule<T, M>::ConstFlat;
  void apply(const Exec& exec, long long, T lr, const Flat& p, const ConstFlat& g,
             const Flat*) const override {
    kpmap::parallel_for_elements("kpmap::train::optimizer::step", exec, p.size(),
                                 detail::PlainStep<T, M>{p, g, lr});
  }
};

KPMAP_TRAIN_BUILTIN_OPTIMIZER(gd, GradientDescent,
                              {"gd",
                               "full-batch gradient descent (train.batch_size = 0)",
                               deck::Schema("gd"),
                               {},
                               /*full_batch=*/true})
KPMAP_TRAIN_BUILTIN_OPTIMIZER(sgd, GradientDescent, {"sgd", "plain minibatch steps, p -= lr g"})

}  // namespace kpmap::train
