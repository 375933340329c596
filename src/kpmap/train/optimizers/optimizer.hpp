// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Optimizers for replicated parameters, by name: each registers
/// itself with its own deck keys (the library's: gd and sgd, momentum, Adam,
/// in optimizers/). Replicated, every rank applies the same update to the
/// same values with the same reduced gradient, so the replicas stay
/// identical without any communication; sharded (Optimizer's second
/// constructor), each rank updates its part and the parts are all-gathered.
///
/// Adding an optimizer is one file: a class template `R<T, M>` derived from
/// UpdateRule<T, M> and its registration (name, description, keys, state
/// arrays). In optimizers/ that is a KPMAP_TRAIN_BUILTIN_OPTIMIZER line in
/// its header; in a program's own file, KPMAP_TRAIN_REGISTER_OPTIMIZER. An
/// update element by element is shorter still: a device function of (step,
/// parameter, gradient, state...) registered with
/// KPMAP_TRAIN_REGISTER_ELEMENT_OPTIMIZER (the library writes the kernel).

#include <kpmap/base/detail/view_utils.hpp>
#include <kpmap/base/error.hpp>
#include <kpmap/base/policy.hpp>
#include <kpmap/collectives/gathers.hpp>
#include <kpmap/deck/deck.hpp>
#include <kpmap/deck/registry.hpp>
#include <kpmap/spmd/pmap.hpp>
#include <kpmap/tools/profiling.hpp>
#include <kpmap/train/model.hpp>
#include <kpmap/train/optimizers/registry.hpp>
#include <kpmap/train/types.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kpmap::train {

/// \brief Which optimizer, its own keys, and the learning rate's schedule.
struct OptimizerConfig {
  enum class Schedule { constant, cosine, step };
  /// The names 0.1.0's enum gave, for one release: `kind = Kind::adam` still
  /// compiles, with a warning; write `kind = "adam"`.
  struct Kind {
    [[deprecated("write kind = \"gd\"")]] static constexpr const char* gd = "gd";
    [[deprecated("write kind = \"sgd\"")]] static constexpr const char* sgd = "sgd";
    [[deprecated("write kind = \"momentum\"")]] static constexpr const char* momentum = "momentum";
    [[deprecated("write kind = \"adam\"")]] static constexpr const char* adam = "adam";
  };
  /// A registered optimizer: "gd", "sgd", "momentum", "adam" or a program's own.
  std::string kind = "gd";
  /// Its own keys that are set, by name (e.g. {"beta1", 0.8}); the rest take
  /// the defaults its registration declares.
  deck::Values keys;
  double learning_rate = 0.01;  ///< the peak rate (after warm-up, before decay)
  long long warmup_steps = 0;   ///< the rate climbs linearly to learning_rate over these
  Schedule schedule = Schedule::constant;
  /// cosine: steps after the warm-up over which the rate falls to 0 (half a
  /// cosine period; constant 0 after); step: steps between decays.
  long long decay_steps = 0;
  double decay_factor = 0.1;  ///< step: the rate is multiplied by this every decay_steps

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

/// \brief The registration of `config.kind` and the values of its keys
/// (`config.keys` over its defaults). \throws Error for an unregistered
/// kind, or a key it does not declare.
std::pair<const OptimizerInfo*, deck::Settings> optimizer_settings(const OptimizerConfig& config);

/// \brief An optimizer over the parameter tree `P` (LinearParams or
/// FlatParams): the update rule of `config.kind`, and its state arrays in
/// the shapes of the parameters.
///
/// Replicated (the default), every rank keeps all the state and applies the
/// whole update. Sharded over an axis (ZeRO stage 1, `train.sharding =
/// "optimizer"`), the parameters are seen laid end to end in for_each_view
/// order and split evenly over the axis' ranks: rank r keeps the state of
/// elements [owned().first, owned().second) alone and updates only those,
/// and one all-gather per View of the tree then gives every rank all the
/// updated values. The rule is elementwise, so the parameters are bit for
/// bit those of a replicated run.
template <class T, class M, class P>
class Optimizer {
 public:
  static_assert(detail::IsValueType<T, M>::value,
                "kpmap::train optimizers are built for double and float in the default memory "
                "space: see KPMAP_TRAIN_FOR_EACH_VALUE_TYPE");
  /// \brief A state array kind ("m") and its arrays, one per View of P: the
  /// part of that View this rank keeps (all of it when replicated).
  using State = std::pair<std::string, std::vector<Kokkos::View<T*, M>>>;

  /// \brief Replicated: every rank keeps all the state.
  Optimizer(const OptimizerConfig& config, const P& params) : Optimizer(config, params, nullptr) {}
  /// \brief Sharded over `shard_over`: each of its ranks keeps its even part
  /// of the state. Collective over the axis in step().
  Optimizer(const OptimizerConfig& config, const P& params, AxisRef shard_over)
      : Optimizer(config, params, &*shard_over) {}

  /// \brief p -= update(g), for every View of the trees, enqueued on `exec`
  /// (not waited for) when replicated: every rank does the same with the
  /// same gradient. Sharded, each rank updates its part and the parts are
  /// all-gathered (collective; `exec` is fenced).
  template <class Exec>
  void step(const Exec& exec, const P& params, const P& grads);

  /// \brief As step(), from this rank's part of the gradient alone: elements
  /// [owned().first, owned().second) of the gradient laid end to end, summed
  /// over the ranks (ZeRO stage 2: what a reduce-scatter gives each rank).
  template <class Exec>
  void step_from_part(const Exec& exec, const P& params, const Kokkos::View<const T*, M>& part);

  /// \brief As step_from_part(), on this rank's part of the parameters
  /// alone, which is all it keeps (ZeRO stage 3): nothing is gathered, and
  /// nothing waited for.
  template <class Exec>
  void step_part(const Exec& exec, const Kokkos::View<T*, M>& params,
                 const Kokkos::View<const T*, M>& part);

  /// \brief step() on the default instance of M's execution space.
  void step(const P& params, const P& grads) { step(typename M::execution_space(), params, grads); }

  /// \brief Updates taken so far (Adam's t).
  long long steps() const { return steps_; }
  void set_steps(long long s) { steps_ = s; }
  /// \brief The state arrays (for checkpoints), by the names the
  /// optimizer's registration gives them; none for a rule that keeps none.
  const std::vector<State>& state() const { return state_; }
  /// \brief Whether state kind `k` (of state()) is never negative
  /// (OptimizerInfo::never_negative).
  bool never_negative(std::size_t k) const { return never_negative_.at(k); }
  /// \brief Each state kind's part on this rank as one array: elements
  /// [owned().first, owned().second) of the parameters laid end to end.
  const std::vector<Kokkos::View<T*, M>>& owned_state() const { return owned_state_; }
  /// \brief The elements of the parameters laid end to end whose state this
  /// rank keeps and which it updates: all of them when replicated.
  std::pair<std::size_t, std::size_t> owned() const { return owned_; }
  /// \brief Whether the state is split over an axis (train.sharding = "optimizer").
  bool sharded() const { return axis_ != nullptr; }

 private:
  using Flat = kpmap::detail::flat_view_t<T, M>;
  using ConstFlat = kpmap::detail::flat_view_t<const T, M>;
  // This rank's elements [begin, end) of one View of the tree (of `size`),
  // where they lie in the rank's part of the whole, and every rank's count
  // of them, in rank order (the all-gather's blocks).
  struct Part {
    std::size_t size = 0, begin = 0, end = 0, within_owned = 0;
    std::vector<std::size_t> counts;
  };

  // Flat handles over the Views of `tree` (the parameters or the gradient),
  // into `out`, whose capacity stays: no allocation after the first step.
  // \throws Error when the tree is not the one the optimizer was built for.
  template <class F>
  void flatten(const P& tree, std::vector<F>& out, const char* what) const {
    out.clear();
    tree.for_each_view([&](const auto& v) { out.emplace_back(v.data(), v.size()); });
    bool fits = out.size() == parts_.size();
    for (std::size_t t = 0; fits && t < out.size(); ++t) fits = out[t].size() == parts_[t].size;
    if (!fits) {
      throw Error(std::string("kpmap::train::Optimizer: the ") + what + " tree has " +
                  std::to_string(out.size()) + " Views; the optimizer was built for " +
                  std::to_string(parts_.size()) + " of other sizes");
    }
  }

  // The update of this rank's part of every View of `params`, from the
  // gradient of view t's part at grad_of(t); then, sharded, the all-gather.
  template <class Exec, class GradOf>
  void update(const Exec& exec, const P& params, GradOf&& grad_of) {
    auto& ps = params_flat_;
    flatten(params, ps, "parameter");
    apply(
        exec, [&](std::size_t t) { return ps[t].data() + parts_[t].begin; }, grad_of);
    if (axis_ != nullptr) {
      const ProfilingRegion region("kpmap::train::gather_updates");
      for (std::size_t t = 0; t < ps.size(); ++t) {
        if (parts_[t].size > 0) all_gather_inplace(exec, ps[t], parts_[t].counts, *axis_);
      }
    }
  }

  // The rule's update of this rank's part of View t of the tree, at
  // param_of(t), from its gradient at grad_of(t), for every t.
  template <class Exec, class ParamOf, class GradOf>
  void apply(const Exec& exec, ParamOf&& param_of, GradOf&& grad_of) {
    kpmap::detail::require_kernel_ready<Exec, M>();
    const std::size_t kinds = state_.size();
    ++steps_;
    const T lr = static_cast<T>(config_.rate(steps_));
    for (std::size_t t = 0; t < parts_.size(); ++t) {
      const Part& part = parts_[t];
      if (part.end == part.begin) continue;
      const std::size_t n = part.end - part.begin;
      rule_->apply(exec, steps_, lr, Flat(param_of(t), n), ConstFlat(grad_of(t), n),
                   kinds > 0 ? &flat_state_[t * kinds] : nullptr);
    }
  }

  Optimizer(const OptimizerConfig& config, const P& params, const Axis* axis);

  OptimizerConfig config_;
  const Axis* axis_ = nullptr;  // the axis the state is split over, or none
  std::unique_ptr<UpdateRule<T, M>> rule_;
  long long steps_ = 0;
  std::pair<std::size_t, std::size_t> owned_;
  std::vector<Part> parts_;  // one per View of the tree
  std::vector<Kokkos::View<T*, M>> owned_state_;
  std::vector<State> state_;
  std::vector<bool> never_negative_;  // one per state kind
  std::vector<Flat> flat_state_;
  std::vector<Flat> params_flat_;
  std::vector<ConstFlat> grads_flat_;
};

/// \brief PREFIX (extern, or nothing) template: the Optimizer of values T in
/// M over parameter trees TREE<T, M>, with its steps on M's execution space.
#define KPMAP_TRAIN_OPTIMIZER_INSTANCE(PREFIX, T, M, TREE)                                      \
  PREFIX template class Optimizer<T, M, TREE<T, M>>;                                            \
  PREFIX template void Optimizer<T, M, TREE<T, M>>::step(const M::execution_space&,             \
                                                         const TREE<T, M>&, const TREE<T, M>&); \
  PREFIX template void Optimizer<T, M, TREE<T, M>>::step_from_part(                             \
      const M::execution_space&, const TREE<T, M>&, const Kokkos::View<const T*, M>&);          \
  PREFIX template void Optimizer<T, M, TREE<T, M>>::step_part(                                  \
      const M::execution_space&, const Kokkos::View<T*, M>&, const Kokkos::View<const T*, M>&);

// Compiled once, in kpmap's library (train/instances/, from
// train/optimizers/optimizer_def.hpp), over both models' parameter trees.
#define KPMAP_TRAIN_EXTERN_OPTIMIZERS_(T, M)               \
  KPMAP_TRAIN_OPTIMIZER_INSTANCE(extern, T, M, FlatParams) \
  KPMAP_TRAIN_OPTIMIZER_INSTANCE(extern, T, M, LinearParams)
KPMAP_TRAIN_FOR_EACH_VALUE_TYPE(KPMAP_TRAIN_EXTERN_OPTIMIZERS_)
#undef KPMAP_TRAIN_EXTERN_OPTIMIZERS_

}  // namespace kpmap::train

// The members' definitions, so that an Optimizer over a tree of a program's
// own links from this header alone; the library's own trees (above, extern)
// are still compiled once, in kpmap's library, not in the program's files.
#include <kpmap/train/optimizers/optimizer_def.hpp>
