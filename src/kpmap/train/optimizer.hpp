#pragma once
/// \file
/// \brief Optimizers for replicated parameters: gradient descent, SGD with
/// momentum, and Adam (bias-corrected). Every rank applies the same update
/// to the same values with the same reduced gradient, so the replicas stay
/// identical without any communication.

#include <kpmap/detail/view_utils.hpp>
#include <kpmap/error.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace kpmap::train {

/// \brief Which update rule, its constants, and the learning rate's schedule.
struct OptimizerConfig {
  enum class Kind { gd, sgd, momentum, adam };
  enum class Schedule { constant, cosine, step };
  Kind kind = Kind::gd;
  double learning_rate = 0.01;  ///< the peak rate (after warm-up, before decay)
  long long warmup_steps = 0;   ///< the rate climbs linearly to learning_rate over these
  Schedule schedule = Schedule::constant;
  /// cosine: steps after the warm-up over which the rate falls to 0 (half a
  /// cosine period; constant 0 after); step: steps between decays.
  long long decay_steps = 0;
  double decay_factor = 0.1;  ///< step: the rate is multiplied by this every decay_steps
  double momentum = 0.9;      ///< momentum: v = momentum v + g; p -= lr v
  double beta1 = 0.9;         ///< adam
  double beta2 = 0.999;       ///< adam
  double epsilon = 1e-8;      ///< adam

  /// \brief The learning rate of update number `t` (1, 2, ...).
  double rate(long long t) const {
    if (warmup_steps > 0 && t <= warmup_steps) {
      return learning_rate * static_cast<double>(t) / static_cast<double>(warmup_steps);
    }
    const long long s = t - warmup_steps;  // steps after the warm-up, 1, 2, ...
    if (schedule == Schedule::cosine && decay_steps > 0) {
      const double progress =
          std::min(1.0, static_cast<double>(s) / static_cast<double>(decay_steps));
      return learning_rate * 0.5 * (1.0 + std::cos(3.141592653589793 * progress));
    }
    if (schedule == Schedule::step && decay_steps > 0) {
      return learning_rate * std::pow(decay_factor, static_cast<double>(s / decay_steps));
    }
    return learning_rate;
  }
};

/// \brief "constant", "cosine" or "step". \throws Error otherwise.
inline OptimizerConfig::Schedule schedule_kind(const std::string& name) {
  if (name == "constant") return OptimizerConfig::Schedule::constant;
  if (name == "cosine") return OptimizerConfig::Schedule::cosine;
  if (name == "step") return OptimizerConfig::Schedule::step;
  throw Error("unknown learning-rate schedule '" + name + "'");
}

/// \brief "gd", "sgd", "momentum" or "adam". \throws Error otherwise.
inline OptimizerConfig::Kind optimizer_kind(const std::string& name) {
  if (name == "gd") return OptimizerConfig::Kind::gd;
  if (name == "sgd") return OptimizerConfig::Kind::sgd;
  if (name == "momentum") return OptimizerConfig::Kind::momentum;
  if (name == "adam") return OptimizerConfig::Kind::adam;
  throw Error("unknown optimizer '" + name + "'");
}

namespace detail {
/// The three update rules the kinds come to (gd and sgd differ only in batches).
enum class UpdateRule { plain, momentum, adam };

template <class T, class M>
struct OptimizerKernel {
  kpmap::detail::flat_view_t<T, M> p;
  kpmap::detail::flat_view_t<const T, M> g;
  kpmap::detail::flat_view_t<T, M> m;  // momentum velocity or Adam's first moment
  kpmap::detail::flat_view_t<T, M> v;  // Adam's second moment
  UpdateRule rule;
  T lr, mu, beta1, beta2, eps, c1, c2;  // c1, c2: Adam's bias corrections
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const {
    if (rule == UpdateRule::plain) {
      p(i) -= lr * g(i);
    } else if (rule == UpdateRule::momentum) {
      m(i) = mu * m(i) + g(i);
      p(i) -= lr * m(i);
    } else {
      m(i) = beta1 * m(i) + (T(1) - beta1) * g(i);
      v(i) = beta2 * v(i) + (T(1) - beta2) * g(i) * g(i);
      using namespace kpmap::detail;
      p(i) -= lr * (m(i) / c1) / (math::sqrt(v(i) / c2) + eps);
    }
  }
};
}  // namespace detail

/// \brief An optimizer over the parameter tree `P` (LinearParams or
/// FlatParams): its state has the shapes of the parameters.
template <class T, class M, class P>
class Optimizer {
 public:
  Optimizer(const OptimizerConfig& config, const P& params) : config_(config) {
    params.for_each_view([&](const auto& v) {
      const std::size_t n = v.size();
      const bool first = config.kind == OptimizerConfig::Kind::momentum ||
                         config.kind == OptimizerConfig::Kind::adam;
      const bool second = config.kind == OptimizerConfig::Kind::adam;
      m_.push_back(Kokkos::View<T*, M>("kpmap::train::optimizer::m", first ? n : 0));
      v_.push_back(Kokkos::View<T*, M>("kpmap::train::optimizer::v", second ? n : 0));
    });
  }

  /// \brief p -= update(g), for every View of the trees, enqueued on `exec`
  /// (not waited for). Not collective: every rank does the same with the
  /// same gradient.
  template <class Exec>
  void step(const Exec& exec, const P& params, const P& grads) {
    kpmap::detail::require_kernel_ready<Exec, M>();
    // The flat handles' vectors keep their capacity: no allocation after the first step.
    auto& ps = params_flat_;
    auto& gs = grads_flat_;
    ps.clear();
    gs.clear();
    params.for_each_view([&](const auto& v) { ps.emplace_back(v.data(), v.size()); });
    grads.for_each_view([&](const auto& v) { gs.emplace_back(v.data(), v.size()); });
    if (ps.size() != m_.size() || gs.size() != m_.size()) {
      throw Error("kpmap::train::Optimizer::step: the parameter tree has " +
                  std::to_string(ps.size()) + " Views and the gradient " +
                  std::to_string(gs.size()) + "; the optimizer was built for " +
                  std::to_string(m_.size()));
    }
    ++steps_;
    const auto& c = config_;
    using detail::UpdateRule;
    const UpdateRule rule = c.kind == OptimizerConfig::Kind::adam       ? UpdateRule::adam
                            : c.kind == OptimizerConfig::Kind::momentum ? UpdateRule::momentum
                                                                        : UpdateRule::plain;
    const double c1 = 1.0 - std::pow(c.beta1, static_cast<double>(steps_));
    const double c2 = 1.0 - std::pow(c.beta2, static_cast<double>(steps_));
    using Flat = kpmap::detail::flat_view_t<T, M>;
    for (std::size_t t = 0; t < ps.size(); ++t) {
      Kokkos::parallel_for(
          "kpmap::train::optimizer::step", Kokkos::RangePolicy<Exec>(exec, 0, ps[t].size()),
          detail::OptimizerKernel<T, M>{
              ps[t], gs[t], Flat(m_[t].data(), m_[t].size()), Flat(v_[t].data(), v_[t].size()),
              rule, static_cast<T>(c.rate(steps_)), static_cast<T>(c.momentum),
              static_cast<T>(c.beta1), static_cast<T>(c.beta2), static_cast<T>(c.epsilon),
              static_cast<T>(c1), static_cast<T>(c2)});
    }
  }

  /// \brief step() on the default instance of M's execution space.
  void step(const P& params, const P& grads) { step(typename M::execution_space(), params, grads); }

  /// \brief Updates taken so far (Adam's t).
  long long steps() const { return steps_; }
  void set_steps(long long s) { steps_ = s; }
  /// \brief The state Views (for checkpoints): first moments, then second
  /// moments, one per parameter View; empty Views where the rule keeps none.
  const std::vector<Kokkos::View<T*, M>>& first_moments() const { return m_; }
  const std::vector<Kokkos::View<T*, M>>& second_moments() const { return v_; }

 private:
  OptimizerConfig config_;
  long long steps_ = 0;
  std::vector<Kokkos::View<T*, M>> m_;
  std::vector<Kokkos::View<T*, M>> v_;
  std::vector<kpmap::detail::flat_view_t<T, M>> params_flat_;
  std::vector<kpmap::detail::flat_view_t<const T, M>> grads_flat_;
};

}  // namespace kpmap::train
