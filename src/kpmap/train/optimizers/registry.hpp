// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief What an optimizer is to the library: an update rule of one
/// parameter array (UpdateRule, or an elementwise device function that
/// ElementOptimizer turns into one), and its registration by name with its
/// own deck keys and state arrays. optimizer.hpp's Optimizer builds the
/// registered rule a deck names and applies it to a model's parameters.

#include <kpmap/base/detail/view_utils.hpp>
#include <kpmap/base/error.hpp>
#include <kpmap/base/policy.hpp>
#include <kpmap/collectives/gathers.hpp>
#include <kpmap/deck/deck.hpp>
#include <kpmap/deck/registry.hpp>
#include <kpmap/spmd/pmap.hpp>
#include <kpmap/tools/profiling.hpp>
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

/// \brief A parameter array (or its gradient) seen as one dimension, as an
/// update rule gets it: UpdateRule<T, M>::Flat is FlatView<T, M>.
template <class T, class M>
using FlatView = kpmap::detail::flat_view_t<T, M>;

/// \brief An optimizer's update of one parameter array, for values T in
/// memory space M: what a registered optimizer implements.
template <class T, class M>
class UpdateRule {
 public:
  using Exec = typename M::execution_space;
  using Flat = FlatView<T, M>;
  using ConstFlat = FlatView<const T, M>;
  virtual ~UpdateRule() = default;
  /// \brief p -= update(g), enqueued on `exec` (one kernel, not waited for,
  /// allocating nothing). `state` points at the array's state arrays, one
  /// for each name of the registration's `state`, each of p's size (zero
  /// at the start); `t` is the update's number (1, 2, ...) and `lr` its
  /// learning rate.
  virtual void apply(const Exec& exec, long long t, T lr, const Flat& p, const ConstFlat& g,
                     const Flat* state) const = 0;
};

/// \brief An optimizer as its registration declares it.
struct OptimizerInfo {
  OptimizerInfo(std::string name_, std::string description_,
                deck::Schema keys_ = deck::Schema("optimizer"),
                std::vector<std::string> state_ = {}, bool full_batch_ = false,
                std::vector<std::string> never_negative_ = {})
      : name(std::move(name_)),
        description(std::move(description_)),
        keys(std::move(keys_)),
        state(std::move(state_)),
        full_batch(full_batch_),
        never_negative(std::move(never_negative_)) {}

  std::string name;         ///< the deck's `optimizer.kind` (letters, digits, '_')
  std::string description;  ///< a few words, for --help-deck
  /// Its own deck keys, each with a default, read from [optimizer] (`beta1`
  /// is `optimizer.beta1`) for this kind only: a deck that gives one another
  /// value under another kind is refused.
  deck::Schema keys;
  /// The names of its state arrays, each the size of the parameters
  /// (momentum's velocity "m"; Adam's moments "m", "v"): checkpoints hold
  /// them as optimizer.NAME.PARAMETER, and the memory estimate counts them.
  std::vector<std::string> state;
  /// Whether it takes whole-batch steps only (gd: train.batch_size = 0).
  bool full_batch = false;
  /// Of `state`, the arrays that are never negative (Adam's second moment
  /// "v", a running mean of squares): a restart refuses a checkpoint that
  /// holds a negative value in one, which would train into NaN.
  std::vector<std::string> never_negative;
};

template <class T, class M>
using UpdateRuleFactory = std::unique_ptr<UpdateRule<T, M>> (*)(const deck::Settings&);

/// \brief The registry of optimizers: every registration (the built-ins of
/// train/optimizers/ and a program's own), in order; `optimizer.kind`'s
/// choices and the optimizers' own keys under [optimizer].
deck::Registry<OptimizerInfo>& optimizer_registry();

/// \brief Every registered optimizer, in registration order.
inline std::vector<const OptimizerInfo*> registered_optimizers() {
  return optimizer_registry().all();
}

/// \brief The registration of optimizer `name`, or nullptr for none.
inline const OptimizerInfo* find_optimizer(const std::string& name) {
  return optimizer_registry().find(name);
}

/// \brief Registers optimizer R (a class template `R<T, M>` derived from
/// UpdateRule<T, M>, constructed from `const deck::Settings&`, or by default
/// when it has no keys; built here for every type of
/// KPMAP_TRAIN_FOR_EACH_VALUE_TYPE) under `info.name`, for decks,
/// --help-deck and Optimizer. Call it before the deck is read: from main(),
/// or at namespace scope with KPMAP_TRAIN_REGISTER_OPTIMIZER in the
/// program's own source file. Returns true. \throws Error for a name
/// registered already, a key without a default, or a key another optimizer
/// declares otherwise.
template <template <class, class> class R>
bool register_optimizer(OptimizerInfo info) {
  const std::string name = info.name;
  optimizer_registry().add(std::move(info));
#define KPMAP_TRAIN_ADD_RULE_(T, M)                                              \
  optimizer_registry().add_factory<UpdateRuleFactory<T, M>>(                     \
      name, [](const deck::Settings& s) -> std::unique_ptr<UpdateRule<T, M>> {   \
        if constexpr (std::is_constructible_v<R<T, M>, const deck::Settings&>) { \
          return std::make_unique<R<T, M>>(s);                                   \
        } else {                                                                 \
          (void)s;                                                               \
          return std::make_unique<R<T, M>>();                                    \
        }                                                                        \
      });
  KPMAP_TRAIN_FOR_EACH_VALUE_TYPE(KPMAP_TRAIN_ADD_RULE_)
#undef KPMAP_TRAIN_ADD_RULE_
  return true;
}

/// \brief What a per-element update gets besides its element: the learning
/// rate and the update's number t (1, 2, ...; Adam's bias correction).
template <class T>
struct ElementStep {
  T lr;
  long long t;
};

namespace detail {
template <std::size_t, class U>
using repeat_t = U;
template <class F, class T, std::size_t... I>
constexpr bool element_update_takes(std::index_sequence<I...>) {
  return std::is_invocable_v<const F&, ElementStep<T>, T&, T, repeat_t<I, T&>...>;
}
/// How many state arrays F's update takes (0 to 4), or -1 when it has no
/// such call.
template <class F, class T>
constexpr int element_state_count() {
  if constexpr (element_update_takes<F, T>(std::make_index_sequence<0>{})) return 0;
  if constexpr (element_update_takes<F, T>(std::make_index_sequence<1>{})) return 1;
  if constexpr (element_update_takes<F, T>(std::make_index_sequence<2>{})) return 2;
  if constexpr (element_update_takes<F, T>(std::make_index_sequence<3>{})) return 3;
  if constexpr (element_update_takes<F, T>(std::make_index_sequence<4>{})) return 4;
  return -1;
}
/// One update of element i: f(step, p(i), g(i), s0(i), ...).
template <class F, class T, class M, int N>
struct ElementUpdate {
  F f;
  FlatView<T, M> p;
  FlatView<const T, M> g;
  FlatView<T, M> s0, s1, s2, s3;
  ElementStep<T> step;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const {
    if constexpr (N == 0) {
      f(step, p(i), g(i));
    } else if constexpr (N == 1) {
      f(step, p(i), g(i), s0(i));
    } else if constexpr (N == 2) {
      f(step, p(i), g(i), s0(i), s1(i));
    } else if constexpr (N == 3) {
      f(step, p(i), g(i), s0(i), s1(i), s2(i));
    } else {
      f(step, p(i), g(i), s0(i), s1(i), s2(i), s3(i));
    }
  }
};
}  // namespace detail

/// \brief The optimizer of a device function F of one element: F has
/// `template <class T> KOKKOS_FUNCTION void operator()(ElementStep<T> step,
/// T& p, T g, T& s...) const` with one `T& s` per state array of its
/// registration (0 to 4; each starts at zero), and a constructor from `const
/// deck::Settings&` where the optimizer has keys (else a default one). The
/// library runs it over every element in one kernel. Registered with
/// register_element_optimizer<F> (KPMAP_TRAIN_REGISTER_ELEMENT_OPTIMIZER).
template <class F>
struct ElementOptimizer {
  template <class T, class M>
  class Of final : public UpdateRule<T, M> {
    static constexpr int N = detail::element_state_count<F, T>();
    static_assert(N >= 0,
                  "kpmap::train: a per-element optimizer is a device function "
                  "f(ElementStep<T> step, T& p, T g, T& s...) with 0 to 4 state arrays");

   public:
    using typename UpdateRule<T, M>::Exec;
    using typename UpdateRule<T, M>::Flat;
    using typename UpdateRule<T, M>::ConstFlat;
    explicit Of(const deck::Settings& keys) : f_(deck::from_settings<F>(keys)) {}
    void apply(const Exec& exec, long long t, T lr, const Flat& p, const ConstFlat& g,
               const Flat* state) const override {
      detail::ElementUpdate<F, T, M, N> u{f_, p, g, {}, {}, {}, {}, {lr, t}};
      Flat* s[] = {&u.s0, &u.s1, &u.s2, &u.s3};
      for (int k = 0; k < N; ++k) *s[k] = state[k];
      kpmap::parallel_for_elements("kpmap::train::optimizer::step", exec, p.size(), u);
    }

   private:
    F f_;
  };
};

/// \brief Registers the per-element optimizer F (see ElementOptimizer) under
/// `info.name`, as register_optimizer does. \throws Error when F's update
/// takes another number of state arrays than `info.state` names.
template <class F>
bool register_element_optimizer(OptimizerInfo info) {
  constexpr int n = detail::element_state_count<F, double>();
  static_assert(n >= 0,
                "kpmap::train: a per-element optimizer is a device function "
                "f(ElementStep<T> step, T& p, T g, T& s...) with 0 to 4 state arrays");
  if (static_cast<std::size_t>(n) != info.state.size()) {
    throw Error("kpmap::train: optimizer " + info.name + ": its update takes " + std::to_string(n) +
                " state array(s) and its registration names " + std::to_string(info.state.size()) +
                " (OptimizerInfo's state)");
  }
  return register_optimizer<ElementOptimizer<F>::template Of>(std::move(info));
}

}  // namespace kpmap::train

/// \brief At namespace scope in a program's source file: registers
/// optimizer template R (an unqualified name) with an OptimizerInfo before
/// main() runs, as register_optimizer<R>(info) (deck/registry.hpp,
/// KPMAP_REGISTER_PIECE).
#define KPMAP_TRAIN_REGISTER_OPTIMIZER(R, ...) \
  KPMAP_REGISTER_PIECE(::kpmap::train::register_optimizer, R, __VA_ARGS__)

/// \brief At namespace scope in a program's source file: registers the
/// per-element optimizer F (a device function of (step, p, g, state...), see
/// ElementOptimizer) with an OptimizerInfo before main() runs.
#define KPMAP_TRAIN_REGISTER_ELEMENT_OPTIMIZER(F, ...) \
  KPMAP_REGISTER_PIECE(::kpmap::train::register_element_optimizer, F, __VA_ARGS__)

/// \brief In an optimizer header of src/kpmap/train/optimizers/ (namespace
/// kpmap::train, at its end): the registration of the built-in optimizer
/// `name`, which the build finds and calls from the registry (a generated
/// builtin_optimizers.cpp), as KPMAP_TRAIN_BUILTIN_LAYER is.
#define KPMAP_TRAIN_BUILTIN_OPTIMIZER(name, R, ...) \
  KPMAP_BUILTIN_PIECE(::kpmap::train::register_optimizer, name, R, __VA_ARGS__)
