// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief The losses a model is trained on, by name: each registers itself
/// with its own deck keys (the library's: mean squared error on one output,
/// softmax cross-entropy on class scores, in losses/). A loss computes the
/// output delta of a batch and its (loss, correct) sums in one parallel
/// reduction. Also: a step's figures on the device, and the gather of a
/// batch's rows from a shard.
///
/// Adding a loss is one file: a class template `L<C, M, A>` derived from
/// LossFunction<C, M, A> and its registration (name, description, keys,
/// whether its targets are class indices, how many outputs it reads). In
/// losses/ that is a KPMAP_TRAIN_BUILTIN_LOSS line in its header; in a
/// program's own file, KPMAP_TRAIN_REGISTER_LOSS. A loss on one output is
/// shorter still: a device function of (prediction, target) that returns the
/// loss and its derivative, registered with KPMAP_TRAIN_REGISTER_ELEMENT_LOSS
/// (the library writes the reduction).

#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/deck/deck.hpp>
#include <kpmap/deck/registry.hpp>
#include <kpmap/train/shard.hpp>
#include <kpmap/train/types.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kpmap::train {

/// \brief A loss by its registered name, with those of its own keys that
/// are set (the rest take their defaults): `Loss::mse`,
/// `Loss::cross_entropy`, `Loss{"huber", {{"delta", 0.5}}}`.
struct Loss {
  Loss() = default;
  Loss(std::string name_, deck::Values keys_ = {})
      : name(std::move(name_)), keys(std::move(keys_)) {}
  std::string name;
  deck::Values keys;
  static const Loss mse;            ///< mean squared error on one output
  static const Loss cross_entropy;  ///< softmax cross-entropy on a score per class
};
inline const Loss Loss::mse{"mse"};
inline const Loss Loss::cross_entropy{"cross_entropy"};

/// \brief A loss for a model computing in C, in memory space M, with
/// targets (and the loss's own arithmetic) in A (the parameters' type:
/// float under mixed precision): what a registered loss implements.
template <class C, class M, class A = C>
class LossFunction {
 public:
  using Exec = typename M::execution_space;
  using Scores = Kokkos::View<const C**, Kokkos::LayoutRight, M>;
  using Targets = Kokkos::View<const A*, M>;
  using Deltas = Kokkos::View<C**, Kokkos::LayoutRight, M>;
  using Sums = Kokkos::View<double*, M>;
  virtual ~LossFunction() = default;
  /// \brief For each row k of the outputs z (targets y(k)): delta(k, :) =
  /// scale dL_k / dz(k, :), and `sums` = (the sum of the rows' losses, the
  /// number of rows predicted right: 0 for a loss whose targets are not
  /// classes), as one parallel reduction enqueued on `exec` that allocates
  /// nothing.
  virtual void delta_and_sums(const Exec& exec, const Scores& z, const Targets& y,
                              const Deltas& delta, A scale, const Sums& sums) const = 0;
};

/// \brief A loss as its registration declares it.
struct LossInfo {
  LossInfo(std::string name_, std::string description_, bool classification_, std::size_t outputs_,
           deck::Schema keys_ = deck::Schema("loss"))
      : name(std::move(name_)),
        description(std::move(description_)),
        classification(classification_),
        outputs(outputs_),
        keys(std::move(keys_)) {}

  std::string name;         ///< the deck's `model.loss` (letters, digits, '_')
  std::string description;  ///< a few words, for --help-deck
  /// Whether the targets are class indices 0 .. classes-1 (data.classes;
  /// accuracy and the confusion matrix are reported): the model's outputs
  /// are then one score per class.
  bool classification = false;
  /// The outputs it reads per sample (mse: 1); 0 for one per class.
  std::size_t outputs = 1;
  /// Its own deck keys, each with a default, read from [model] (`delta` is
  /// `model.delta`) for this loss only.
  deck::Schema keys;
};

template <class C, class M, class A>
using LossFactory = std::unique_ptr<LossFunction<C, M, A>> (*)(const deck::Settings&);

/// \brief The registry of losses: every registration (the built-ins of
/// train/losses/ and a program's own), in order; `model.loss`'s choices and
/// the losses' own keys under [model].
deck::Registry<LossInfo>& loss_registry();

/// \brief Every registered loss, in registration order.
inline std::vector<const LossInfo*> registered_losses() { return loss_registry().all(); }

/// \brief The registration of loss `name`. \throws Error for none, naming
/// the registered ones.
inline const LossInfo& loss_info(const std::string& name) { return loss_registry().at(name); }

/// \brief The loss `loss` names, for outputs in C and targets in A, with its
/// keys (`loss.keys` over its defaults). \throws Error for an unregistered
/// loss or a key it does not declare.
template <class C, class M, class A>
std::unique_ptr<LossFunction<C, M, A>> make_loss(const Loss& loss) {
  static_assert(detail::IsLossType<C, M, A>::value,
                "kpmap::train losses are built for double and float outputs (and 16-bit "
                "half_t) in the default memory space: see KPMAP_TRAIN_FOR_EACH_LOSS_TYPE");
  const LossInfo& info = loss_info(loss.name);
  deck::Settings settings;
  try {
    settings = deck::Settings(info.keys, loss.keys);
  } catch (const Error& e) {
    throw Error("kpmap::train: loss " + loss.name + ": " + e.what());
  }
  return loss_registry().factory<LossFactory<C, M, A>>(info.name)(settings);
}

/// \brief Registers loss L (a class template `L<C, M, A>` derived from
/// LossFunction<C, M, A>, constructed from `const deck::Settings&`, or by
/// default when it has no keys; built here for every type of
/// KPMAP_TRAIN_FOR_EACH_LOSS_TYPE) under `info.name`, for decks, --help-deck
/// and Sequential. Call it before the deck is read: from main(), or at
/// namespace scope with KPMAP_TRAIN_REGISTER_LOSS. Returns true.
/// \throws Error as register_layer does.
template <template <class, class, class> class L>
bool register_loss(LossInfo info) {
  const std::string name = info.name;
  loss_registry().add(std::move(info));
#define KPMAP_TRAIN_ADD_LOSS_(C, M, A)                                              \
  loss_registry().add_factory<LossFactory<C, M, A>>(                                \
      name, [](const deck::Settings& s) -> std::unique_ptr<LossFunction<C, M, A>> { \
        if constexpr (std::is_constructible_v<L<C, M, A>, const deck::Settings&>) { \
          return std::make_unique<L<C, M, A>>(s);                                   \
        } else {                                                                    \
          (void)s;                                                                  \
          return std::make_unique<L<C, M, A>>();                                    \
        }                                                                           \
      });
  KPMAP_TRAIN_FOR_EACH_LOSS_TYPE(KPMAP_TRAIN_ADD_LOSS_)
#undef KPMAP_TRAIN_ADD_LOSS_
  return true;
}

/// \brief A per-element loss's value for one sample and its derivative by
/// the prediction.
template <class A>
struct LossValue {
  A value;
  A gradient;
};

namespace detail {
/// One thread per row: the element function's loss and derivative.
template <class F, class C, class M, class A>
struct ElementLossKernel {
  using value_type = double[];  // (sum of losses, number correct)
  unsigned value_count = 2;
  F f;
  Kokkos::View<const C**, Kokkos::LayoutRight, M> z;
  Kokkos::View<const A*, M> y;
  Kokkos::View<C**, Kokkos::LayoutRight, M> delta;
  A scale;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t k, double* stats) const {
    const LossValue<A> l = f(static_cast<A>(z(k, 0)), y(k));
    delta(k, 0) = static_cast<C>(scale * l.gradient);
    stats[0] += static_cast<double>(l.value);
  }
};
}  // namespace detail

/// \brief The loss of a device function F of one output's (prediction,
/// target): F has `template <class A> KOKKOS_FUNCTION LossValue<A>
/// operator()(A z, A y) const`, and a constructor from `const
/// deck::Settings&` where the loss has keys (else a default one). Registered
/// with register_element_loss<F> (KPMAP_TRAIN_REGISTER_ELEMENT_LOSS).
template <class F>
struct ElementLoss {
  template <class C, class M, class A>
  class Of final : public LossFunction<C, M, A> {
    using Base = LossFunction<C, M, A>;

   public:
    explicit Of(const deck::Settings& keys) : f_(deck::from_settings<F>(keys)) {}
    void delta_and_sums(const typename Base::Exec& exec, const typename Base::Scores& z,
                        const typename Base::Targets& y, const typename Base::Deltas& delta,
                        A scale, const typename Base::Sums& sums) const override {
      Kokkos::parallel_reduce("kpmap::train::sequential::output_delta",
                              Kokkos::RangePolicy<typename Base::Exec>(exec, 0, z.extent(0)),
                              detail::ElementLossKernel<F, C, M, A>{2, f_, z, y, delta, scale},
                              sums);
    }

   private:
    F f_;
  };
};

/// \brief Registers the per-element loss F (see ElementLoss) under
/// `info.name`, as register_loss does. \throws Error for a registration of
/// class targets or of other than one output (a per-element loss reads one).
template <class F>
bool register_element_loss(LossInfo info) {
  if (info.classification || info.outputs != 1) {
    throw Error("kpmap::train: loss " + info.name +
                ": a per-element loss reads one output per sample against a target of the same "
                "kind (LossInfo: classification false, outputs 1)");
  }
  return register_loss<ElementLoss<F>::template Of>(std::move(info));
}

/// \brief Loss and accuracy of a batch, over all ranks.
struct BatchStats {
  double loss = 0;      ///< mean over the batch's samples
  double accuracy = 0;  ///< fraction correct (cross-entropy only)
};

/// \brief A step's loss and accuracy over all ranks, left in the model's
/// memory (as a JAX step leaves its loss a device array): loss() and
/// accuracy() read them in a kernel, fetch() copies them to the host (one copy
/// and one fence of `exec`). Sequential's: the (loss, correct) sums of the
/// batch and its size. Valid until the model's next step.
template <class Exec>
struct SumStepLoss {
  using memory_space = typename Exec::memory_space;
  Exec exec;
  Kokkos::View<const double*, memory_space> sums;  ///< (sum of losses, number correct)
  double count = 1;                                ///< samples of the batch

  KOKKOS_INLINE_FUNCTION double loss() const { return sums(0) / count; }
  KOKKOS_INLINE_FUNCTION double accuracy() const { return sums(1) / count; }
  BatchStats fetch() const {
    if (sums.extent(0) == 0) return {};
    double h[2];
    Kokkos::deep_copy(exec, Kokkos::View<double*, Kokkos::HostSpace>(h, 2), sums);
    kpmap::detail::fence(exec, "kpmap::train: the step's loss on the host");
    return {h[0] / count, h[1] / count};
  }
};

/// \brief As SumStepLoss, for a model that keeps only the batch's mean loss
/// (the linear model: in its gradient's type T, beside the gradient).
template <class Exec, class T>
struct MeanStepLoss {
  using memory_space = typename Exec::memory_space;
  Exec exec;
  Kokkos::View<const T, memory_space> mean;

  KOKKOS_INLINE_FUNCTION double loss() const { return static_cast<double>(mean()); }
  KOKKOS_INLINE_FUNCTION double accuracy() const { return 0.0; }
  BatchStats fetch() const {
    if (mean.data() == nullptr) return {};
    T h{};
    Kokkos::deep_copy(exec, Kokkos::View<T, Kokkos::HostSpace>(&h), mean);
    kpmap::detail::fence(exec, "kpmap::train: the step's loss on the host");
    return {static_cast<double>(h), 0.0};
  }
};

namespace detail {

/// xb(k, :) = x(order(first + k), :) (or x(first + k, :) without an order),
/// converted to the model's compute type C; one thread per element.
template <class T, class M, class C = T>
struct GatherRows {
  Kokkos::View<const T**, Kokkos::LayoutRight, M> x;
  Kokkos::View<const T*, M> y;
  Kokkos::View<const std::uint32_t*, M> order;
  Kokkos::View<C**, Kokkos::LayoutRight, M> xb;
  Kokkos::View<T*, M> yb;
  std::size_t first;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t e) const {
    const std::size_t width = x.extent(1);
    const std::size_t k = e / width;
    const std::size_t j = e % width;
    const std::size_t i = order.extent(0) ? order(first + k) : first + k;
    xb(k, j) = static_cast<C>(x(i, j));
    if (j == 0) yb(k) = y(i);
  }
};

/// confusion(label, predicted) += 1 for each row (predicted: the argmax of
/// the scores z, in the compute type C; labels y in the parameters' type A).
template <class C, class M, class A = C>
struct CountConfusion {
  Kokkos::View<const C**, Kokkos::LayoutRight, M> z;
  Kokkos::View<const A*, M> y;
  Kokkos::View<double**, Kokkos::LayoutRight, M> confusion;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t k) const {
    std::size_t best = 0;
    for (std::size_t o = 1; o < z.extent(1); ++o) {
      if (z(k, o) > z(k, best)) best = o;
    }
    Kokkos::atomic_add(&confusion(static_cast<std::size_t>(y(k)), best), 1.0);
  }
};

}  // namespace detail
}  // namespace kpmap::train

/// \brief At namespace scope in a program's source file: registers loss
/// template L (an unqualified name) with a LossInfo before main() runs, as
/// register_loss<L>(info) (deck/registry.hpp, KPMAP_REGISTER_PIECE).
#define KPMAP_TRAIN_REGISTER_LOSS(L, ...) \
  KPMAP_REGISTER_PIECE(::kpmap::train::register_loss, L, __VA_ARGS__)

/// \brief At namespace scope in a program's source file: registers the
/// per-element loss F (a device function of (prediction, target), see
/// ElementLoss) with a LossInfo before main() runs.
#define KPMAP_TRAIN_REGISTER_ELEMENT_LOSS(F, ...) \
  KPMAP_REGISTER_PIECE(::kpmap::train::register_element_loss, F, __VA_ARGS__)

/// \brief In a loss header of src/kpmap/train/losses/ (namespace
/// kpmap::train, at its end): the registration of the built-in loss `name`,
/// which the build finds and calls from the registry (a generated
/// builtin_losses.cpp), as KPMAP_TRAIN_BUILTIN_LAYER is.
#define KPMAP_TRAIN_BUILTIN_LOSS(name, L, ...) \
  KPMAP_BUILTIN_PIECE(::kpmap::train::register_loss, name, L, __VA_ARGS__)
