#pragma once
/// \file
/// \brief The losses a model is trained on (mean squared error on one
/// output, softmax cross-entropy on class scores): the output delta of a
/// batch and its (loss, correct) sums in one parallel reduction, and the
/// gather of a batch's rows from a shard.

#include <kpmap/detail/kokkos_compat.hpp>
#include <kpmap/train/data.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

namespace kpmap::train {

enum class Loss { mse, cross_entropy };

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
struct SumFigures {
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

/// \brief As SumFigures, for a model that keeps only the batch's mean loss
/// (the linear model: in its gradient's type T, beside the gradient).
template <class Exec, class T>
struct MeanLossFigures {
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

/// Output delta of each row, and the batch's (loss, correct) sums, as one
/// parallel reduction. The delta is scaled by `scale`, 1 / (global batch
/// size) (times the loss scale of mixed precision), so that the sum of the
/// ranks' gradients is the batch mean's gradient. The scores z and the delta
/// are in the model's compute type C; the softmax, the loss and the labels
/// in A (the parameters' type: float under mixed precision).
template <class C, class M, class A = C>
struct OutputDelta {
  using value_type = double[];  // (sum of losses, number correct)
  unsigned value_count = 2;
  Kokkos::View<const C**, Kokkos::LayoutRight, M> z;
  Kokkos::View<const A*, M> y;
  Kokkos::View<C**, Kokkos::LayoutRight, M> delta;
  A scale;
  bool cross_entropy;
  KOKKOS_INLINE_FUNCTION A score(std::size_t k, std::size_t o) const {
    return static_cast<A>(z(k, o));
  }
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t k, double* stats) const {
    using namespace kpmap::detail;
    const std::size_t c = z.extent(1);
    if (!cross_entropy) {
      const A r = score(k, 0) - y(k);
      delta(k, 0) = static_cast<C>(2 * scale * r);
      stats[0] += static_cast<double>(r) * static_cast<double>(r);
      return;
    }
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
