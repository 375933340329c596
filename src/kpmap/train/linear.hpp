#pragma once
/// \file
/// \brief The seeds' linear-regression set-up and its data-parallel gradient:
/// synthetic data drawn from global sample indices, and one fused pass over
/// the local rows that gives the mean squared error and its gradient.

#include <kpmap/collectives.hpp>
#include <kpmap/pmap.hpp>
#include <kpmap/train/random.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

namespace kpmap::train {

/// \brief y = X w_true + b_true + noise * N(0, 1), X ~ N(0, 1), w_true and
/// b_true ~ N(0, 1). Every number is drawn from (seed, stream, global index):
/// stream 0 the features of sample i (index i*F + j), stream 1 the true
/// parameters (w_true_j at j, b_true at F), stream 2 the noise of sample i.
struct SyntheticRegression {
  std::size_t samples = 0;
  std::size_t features = 0;
  std::uint64_t seed = 0;
  double noise = 0.1;

  KOKKOS_INLINE_FUNCTION double x(std::size_t i, std::size_t j) const {
    return CounterRng{seed}.normal(i * features + j, 0);
  }
  KOKKOS_INLINE_FUNCTION double true_w(std::size_t j) const {
    return CounterRng{seed}.normal(j, 1);
  }
  KOKKOS_INLINE_FUNCTION double true_b() const { return CounterRng{seed}.normal(features, 1); }
  KOKKOS_INLINE_FUNCTION double y(std::size_t i) const {
    double s = true_b() + noise * CounterRng{seed}.normal(i, 2);
    for (std::size_t j = 0; j < features; ++j) s += x(i, j) * true_w(j);
    return s;
  }
};

/// \brief This rank's rows of a SyntheticRegression, split over `axis` by
/// BlockPartition: features (rows x F) and targets (rows).
template <class M = Kokkos::DefaultExecutionSpace::memory_space>
struct LocalData {
  Kokkos::View<double**, Kokkos::LayoutRight, M> x;
  Kokkos::View<double*, Kokkos::LayoutRight, M> y;
};

template <class M = Kokkos::DefaultExecutionSpace::memory_space>
LocalData<M> shard_synthetic(const SyntheticRegression& d, AxisRef axis) {
  LocalData<M> out;
  out.x = shard_generate<double, 2, M>(
      "kpmap::train::x", {d.samples, d.features}, axis,
      KOKKOS_LAMBDA(std::size_t i, std::size_t j) { return d.x(i, j); });
  out.y = shard_generate<double, 1, M>(
      "kpmap::train::y", {d.samples}, axis, KOKKOS_LAMBDA(std::size_t i) { return d.y(i); });
  return out;
}

/// \brief Parameters of the linear model y ~ X w + b (replicated on every rank).
template <class M = Kokkos::DefaultExecutionSpace::memory_space>
struct LinearParams {
  Kokkos::View<double*, M> w;
  Kokkos::View<double, M> b;
  template <class F>
  void for_each_view(F&& f) {
    f(w);
    f(b);
  }
};

/// \brief The mean squared error over all samples of every rank and its
/// gradient, in one pass over the local rows (X is read once) and one fused
/// pmean of (grad w, grad b) weighted by the local row counts, so uneven
/// shards give the global mean. Collective over `axis`.
template <class M>
double mse_and_gradient(const LocalData<M>& data, const LinearParams<M>& p, LinearParams<M>& grad,
                        AxisRef axis) {
  using Exec = typename Kokkos::View<double*, M>::execution_space;
  const auto x = data.x;
  const auto y = data.y;
  const auto w = p.w;
  const auto b = p.b;
  const std::size_t n = x.extent(0);
  const std::size_t f = x.extent(1);
  auto gw = grad.w;
  auto gb = grad.b;
  Kokkos::deep_copy(gw, 0.0);
  Kokkos::deep_copy(gb, 0.0);
  double sq = 0.0;
  if (n > 0) {
    const double inv_n = 1.0 / static_cast<double>(n);
    // One team per row would be a GPU choice; a row per iteration with
    // atomics on the F+1 gradient entries keeps X read once on any backend.
    Kokkos::parallel_reduce(
        "kpmap::train::mse_and_gradient", Kokkos::RangePolicy<Exec>(0, n),
        KOKKOS_LAMBDA(std::size_t i, double& acc) {
          double r = b() - y(i);
          for (std::size_t j = 0; j < f; ++j) r += x(i, j) * w(j);
          acc += r * r * inv_n;
          const double g = 2.0 * r * inv_n;
          for (std::size_t j = 0; j < f; ++j) Kokkos::atomic_add(&gw(j), g * x(i, j));
          Kokkos::atomic_add(&gb(), g);
        },
        sq);
  }
  const Weight rows{static_cast<double>(n)};
  pmean_inplace(grad, axis, rows);
  return pmean(sq, axis, rows);
}

}  // namespace kpmap::train
