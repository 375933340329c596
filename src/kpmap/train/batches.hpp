// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief An epoch's batches: a reproducible shuffle of the training rows
/// (the same at any rank count), and which of this rank's rows go into
/// which global batch.

#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/base/detail/mpi_util.hpp>
#include <kpmap/base/error.hpp>
#include <kpmap/spmd/pmap.hpp>
#include <kpmap/train/loop.hpp>
#include <kpmap/train/random.hpp>

#include <Kokkos_Core.hpp>
#include <Kokkos_Sort.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>

namespace kpmap::train {

/// \brief A reproducible permutation of [0, n) for each (seed, epoch): a
/// balanced Feistel network keyed by Philox, with cycle walking to stay in
/// range. position(i) is where sample i falls in the epoch's order; it is a
/// pure function, so every rank agrees on the order whatever the rank count.
struct EpochOrder {
  std::uint64_t seed = 0;
  std::uint64_t epoch = 0;
  std::uint64_t n = 1;

  KOKKOS_INLINE_FUNCTION std::uint64_t position(std::uint64_t i) const {
    int bits = 2;
    while ((std::uint64_t(1) << bits) < n) bits += 2;
    std::uint64_t y = encrypt(i, bits / 2);
    while (y >= n) y = encrypt(y, bits / 2);
    return y;
  }

 private:
  KOKKOS_INLINE_FUNCTION std::uint64_t encrypt(std::uint64_t v, int half) const {
    const std::uint64_t mask = (std::uint64_t(1) << half) - 1;
    std::uint64_t l = v >> half;
    std::uint64_t r = v & mask;
    for (std::uint32_t round = 0; round < 4; ++round) {
      const auto b = CounterRng{seed}.bits(r | (epoch << 32), stream::shuffle + 16 * round);
      const std::uint64_t f = ((std::uint64_t(b[0]) << 32) | b[1]) & mask;
      const std::uint64_t next = l ^ f;
      l = r;
      r = next;
    }
    return (l << half) | r;
  }
};

/// \brief Which local rows go into which global batch in one epoch, with
/// the order in memory space M (the model's).
///
/// Batch k holds the samples at positions [k B, min((k+1) B, n)) of the
/// epoch's order. Each rank works on the samples of batch k that it holds
/// (no data moves between ranks); the gradient is scaled by the global batch
/// size, so the sum over ranks is the mean over the whole batch, however
/// unevenly its samples fall on the ranks. The last, partial batch is used.
template <class M = Kokkos::DefaultExecutionSpace::memory_space>
struct BatchPlan {
  std::size_t batch = 0;             ///< global batch size B (n for full batch)
  std::size_t batches = 0;           ///< ceil(n / B)
  std::size_t global_rows = 0;       ///< n
  bool identity = true;              ///< full batch, unshuffled: rows in storage order
  std::vector<std::size_t> offsets;  ///< local rows of batch k: order[offsets[k], offsets[k+1])
  Kokkos::View<std::uint32_t*, M> order;

  /// \brief Samples in global batch k (the same on every rank).
  std::size_t global_size(std::size_t k) const {
    const std::size_t end = (k + 1) * batch < global_rows ? (k + 1) * batch : global_rows;
    return end - k * batch;
  }
  std::size_t local_size(std::size_t k) const { return offsets[k + 1] - offsets[k]; }
};

namespace detail {

/// key(i) = (the batch of local row i) << 32 | i: sorted, the keys list the
/// rows batch by batch, in storage order within a batch.
template <class M>
struct BatchKeys {
  Kokkos::View<std::uint64_t*, M> key;
  EpochOrder order;
  std::uint64_t begin, batch;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const {
    key(i) = (order.position(begin + i) / batch) << 32 | std::uint64_t(i);
  }
};

/// Sorts `v` in place on `exec` (Kokkos 4: on the instance; 3.4 sorts on
/// the space's default instance, between fences).
template <class Exec, class V>
void sort_on(const Exec& exec, const V& v) {
#if KOKKOS_VERSION >= 40000
  Kokkos::sort(exec, v);
#else
  kpmap::detail::fence(exec, "kpmap::train: keys ready to sort");
  Kokkos::sort(v);
  kpmap::detail::fence(Exec(), "kpmap::train: keys sorted");
#endif
}

/// From the sorted keys: order(j) = the row of key j, and first(k) = the
/// first j of batch k (the batches before key j's, back to key j-1's, start
/// at j; those after the last key's start at the end).
template <class M>
struct SplitKeys {
  Kokkos::View<const std::uint64_t*, M> key;
  Kokkos::View<std::uint32_t*, M> order;
  Kokkos::View<std::uint64_t*, M> first;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t j) const {
    order(j) = static_cast<std::uint32_t>(key(j));
    const std::uint64_t b = key(j) >> 32;
    const std::uint64_t from = j == 0 ? 0 : (key(j - 1) >> 32) + 1;
    for (std::uint64_t k = from; k <= b; ++k) first(k) = j;
    if (j + 1 == key.extent(0)) {
      for (std::uint64_t k = b + 1; k < first.extent(0); ++k) first(k) = key.extent(0);
    }
  }
};

}  // namespace detail

/// \brief The plan of one epoch for a shard of `n` global rows held from
/// global row `begin` (`local` rows). `batch` 0 means the full set, which is
/// never shuffled (the order does not change a full-batch gradient).
///
/// The order is made on `exec`'s device: each row's batch from the epoch's
/// permutation, a sort of (batch, row) keys, and the batch boundaries, which
/// come to the host in one copy (the host launches a step's kernels over
/// them). Once per epoch; allocates the order and the keys.
template <class Exec>
BatchPlan<typename Exec::memory_space> plan_epoch(const Exec& exec, std::size_t n,
                                                  std::size_t begin, std::size_t local,
                                                  std::size_t batch, std::uint64_t seed,
                                                  std::uint64_t epoch) {
  using M = typename Exec::memory_space;
  BatchPlan<M> p;
  p.global_rows = n;
  p.batch = global_batch(batch, n);
  p.identity = p.batch == n;
  p.batches = n == 0 ? 0 : steps_per_epoch(n, batch);
  p.offsets.assign(p.batches + 1, 0);
  if (p.identity) {
    if (p.batches > 0) p.offsets[1] = local;
    return p;
  }
  if (local >= (std::size_t(1) << 32)) {
    throw Error("kpmap::train::plan_epoch: " + std::to_string(local) +
                " rows on one rank; a batch order holds at most 2^32 - 1");
  }
  p.order = Kokkos::View<std::uint32_t*, M>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::train::batch_order"), local);
  if (local == 0) return p;
  Kokkos::View<std::uint64_t*, M> key(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::train::batch_keys"), local);
  Kokkos::View<std::uint64_t*, M> first(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::train::batch_first"), p.batches + 1);
  Kokkos::parallel_for("kpmap::train::batch_keys", Kokkos::RangePolicy<Exec>(exec, 0, local),
                       detail::BatchKeys<M>{key, EpochOrder{seed, epoch, n}, begin, p.batch});
  detail::sort_on(exec, key);
  Kokkos::parallel_for("kpmap::train::batch_split", Kokkos::RangePolicy<Exec>(exec, 0, local),
                       detail::SplitKeys<M>{key, p.order, first});
  auto h = Kokkos::create_mirror_view(first);
  Kokkos::deep_copy(exec, h, first);
  kpmap::detail::fence(exec, "kpmap::train::plan_epoch: the batch boundaries on the host");
  for (std::size_t k = 0; k <= p.batches; ++k) p.offsets[k] = static_cast<std::size_t>(h(k));
  return p;
}

// Compiled once, in kpmap's library (train/instances/data.cpp), for the
// default execution space (Kokkos's sort is most of it).
#define KPMAP_TRAIN_BATCHES_INSTANCES(PREFIX, Exec)                                   \
  PREFIX template BatchPlan<Exec::memory_space> plan_epoch<Exec>(                     \
      const Exec&, std::size_t, std::size_t, std::size_t, std::size_t, std::uint64_t, \
      std::uint64_t);
KPMAP_TRAIN_BATCHES_INSTANCES(extern, Kokkos::DefaultExecutionSpace)

}  // namespace kpmap::train
