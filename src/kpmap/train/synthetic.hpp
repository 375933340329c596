// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief kpmap-train's generated data sets (regression, classification,
/// images), each sample a pure function of its global index and the seed, so
/// a set is the same at any rank count, and one rank's rows of one.

#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/spmd/pmap.hpp>
#include <kpmap/train/random.hpp>
#include <kpmap/train/shard.hpp>
#include <kpmap/train/types.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

namespace kpmap::train {

/// \brief The seeds' regression set: X ~ N(0, 1), y = X w_true + b_true +
/// noise * N(0, 1), with w_true, b_true ~ N(0, 1). Every number is drawn from
/// (seed, stream, global index), so any sample can be regenerated anywhere.
struct SyntheticRegression {
  std::size_t samples = 0;
  std::size_t features = 0;
  std::uint64_t seed = 0;
  double noise = 0.1;

  KOKKOS_INLINE_FUNCTION double x(std::size_t i, std::size_t j) const {
    return CounterRng{seed}.normal(i * features + j, stream::features);
  }
  KOKKOS_INLINE_FUNCTION double true_w(std::size_t j) const {
    return CounterRng{seed}.normal(j, stream::truth);
  }
  KOKKOS_INLINE_FUNCTION double true_b() const {
    return CounterRng{seed}.normal(features, stream::truth);
  }
  KOKKOS_INLINE_FUNCTION double y(std::size_t i) const {
    double s = true_b() + noise * CounterRng{seed}.normal(i, stream::noise);
    for (std::size_t j = 0; j < features; ++j) s += x(i, j) * true_w(j);
    return s;
  }
};

/// \brief A classification set with a nonlinear teacher: X ~ N(0, 1) and the
/// label of sample i is argmax_c of tanh(X V)_c-weighted scores of a fixed
/// random two-layer network (V: F x C, U: C x C), so a linear model cannot fit
/// it exactly and a small MLP can. Labels are stored as 0, 1, ..., classes-1.
struct SyntheticClassification {
  std::size_t samples = 0;
  std::size_t features = 0;
  std::size_t classes = 2;
  std::uint64_t seed = 0;

  KOKKOS_INLINE_FUNCTION double x(std::size_t i, std::size_t j) const {
    return CounterRng{seed}.normal(i * features + j, stream::features);
  }
  KOKKOS_INLINE_FUNCTION double y(std::size_t i) const {
    std::size_t best = 0;
    double best_score = -1e300;
    for (std::size_t c = 0; c < classes; ++c) {
      double score = 0.0;
      for (std::size_t k = 0; k < classes; ++k) {
        double h = 0.0;
        for (std::size_t j = 0; j < features; ++j) {
          h += x(i, j) * CounterRng{seed}.normal(j * classes + k, stream::class_truth);
        }
        const double u =
            CounterRng{seed}.normal(features * classes + k * classes + c, stream::class_truth);
        using namespace kpmap::detail;
        score += math::tanh(h) * u;
      }
      if (score > best_score) {
        best_score = score;
        best = c;
      }
    }
    return static_cast<double>(best);
  }
};

/// \brief Small images for tests and demos that need no download: class c
/// is a plane wave of its own spatial frequency (c mod 3 + 1 periods across,
/// c / 3 periods down) at a random phase per sample, plus Gaussian noise,
/// on every channel. A linear model on the pixels cannot tell the classes
/// apart (the phase moves the wave); convolutions and pooling can. Pixel
/// values lie around [0, 1]; x(i, j) uses NHWC order, j = (y W + x) C + c.
struct SyntheticImages {
  std::size_t samples = 0;
  std::size_t height = 12, width = 12, channels = 1;
  std::size_t classes = 4;
  std::uint64_t seed = 0;
  double noise = 0.1;
  std::size_t features = height * width * channels;  ///< for generate_shard

  SyntheticImages() = default;
  SyntheticImages(std::size_t n, std::size_t h, std::size_t w, std::size_t c, std::size_t k,
                  std::uint64_t s, double sigma)
      : samples(n),
        height(h),
        width(w),
        channels(c),
        classes(k),
        seed(s),
        noise(sigma),
        features(h * w * c) {}

  KOKKOS_INLINE_FUNCTION double label(std::size_t i) const {
    return static_cast<double>(CounterRng{seed}.bits(i, stream::image_label)[0] % classes);
  }
  KOKKOS_INLINE_FUNCTION double x(std::size_t i, std::size_t j) const {
    const auto c = static_cast<std::size_t>(label(i));
    const std::size_t px = (j / channels) % width;
    const std::size_t py = j / (channels * width);
    const double two_pi = 6.283185307179586;
    const double phase = two_pi * CounterRng{seed}.uniform(i, stream::image_phase);
    const double fx = static_cast<double>(c % 3 + 1) / static_cast<double>(width);
    const double fy = static_cast<double>(c / 3) / static_cast<double>(height);
    using namespace kpmap::detail;
    const double wave =
        math::sin(two_pi * (fx * static_cast<double>(px) + fy * static_cast<double>(py)) + phase);
    return 0.5 + 0.4 * wave +
           noise * CounterRng{seed}.normal(i * features + j, stream::image_noise);
  }
  KOKKOS_INLINE_FUNCTION double y(std::size_t i) const { return label(i); }
};

namespace detail {
/// Kernel of generate_shard: rows [offset + begin, offset + begin + n) of a generator.
template <class T, class M, class Gen>
struct GenerateRows {
  Kokkos::View<T**, Kokkos::LayoutRight, M> x;
  Kokkos::View<T*, M> y;
  Gen gen;
  std::size_t first;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const {
    for (std::size_t j = 0; j < x.extent(1); ++j) x(i, j) = static_cast<T>(gen.x(first + i, j));
    y(i) = static_cast<T>(gen.y(first + i));
  }
};
}  // namespace detail

/// \brief This rank's block of the global rows [offset, offset + rows) of a
/// generator (SyntheticRegression or SyntheticClassification). Collective only
/// in that every rank must call it with the same arguments.
template <class T, class M, class Gen>
Shard<T, M> generate_shard(const Gen& gen, std::size_t offset, std::size_t rows, AxisRef axis) {
  using Exec = typename M::execution_space;
  const BlockPartition part(rows, axis);
  Shard<T, M> s;
  s.global_rows = rows;
  s.begin = part.begin(axis->index());
  const std::size_t n = part.count(axis->index());
  s.x = Kokkos::View<T**, Kokkos::LayoutRight, M>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::train::x"), n, gen.features);
  s.y = Kokkos::View<T*, M>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::train::y"), n);
  Kokkos::parallel_for("kpmap::train::generate", Kokkos::RangePolicy<Exec>(0, n),
                       detail::GenerateRows<T, M, Gen>{s.x, s.y, gen, offset + s.begin});
  kpmap::detail::fence(Exec(), "kpmap::train::generate: rows ready");
  return s;
}

// Compiled once, in kpmap's library (train/instances/data.cpp), for each
// value type and generator.
#define KPMAP_TRAIN_SYNTHETIC_INSTANCES(PREFIX, T, M)                        \
  PREFIX template Shard<T, M> generate_shard<T, M, SyntheticRegression>(     \
      const SyntheticRegression&, std::size_t, std::size_t, AxisRef);        \
  PREFIX template Shard<T, M> generate_shard<T, M, SyntheticClassification>( \
      const SyntheticClassification&, std::size_t, std::size_t, AxisRef);    \
  PREFIX template Shard<T, M> generate_shard<T, M, SyntheticImages>(         \
      const SyntheticImages&, std::size_t, std::size_t, AxisRef);
#define KPMAP_TRAIN_EXTERN_SYNTHETIC_(T, M) KPMAP_TRAIN_SYNTHETIC_INSTANCES(extern, T, M)
KPMAP_TRAIN_FOR_EACH_VALUE_TYPE(KPMAP_TRAIN_EXTERN_SYNTHETIC_)
#undef KPMAP_TRAIN_EXTERN_SYNTHETIC_

}  // namespace kpmap::train
