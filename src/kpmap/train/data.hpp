#pragma once
/// \file
/// \brief Training data for kpmap-train: synthetic sets generated from global
/// sample indices (identical at any rank count), rows read from HDF5 by
/// hyperslab, the train/validation split, and the per-epoch batch plan.
///
/// Sharding: the training rows [0, train) and the validation rows
/// [train, samples) of the global data set are each split over the axis in
/// blocks (BlockPartition), so every rank holds a balanced part of both.

#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/base/detail/mpi_util.hpp>
#include <kpmap/base/error.hpp>
#include <kpmap/collectives/collectives.hpp>
#include <kpmap/runtime/mesh.hpp>
#include <kpmap/spmd/pmap.hpp>
#include <kpmap/train/loop.hpp>
#include <kpmap/train/random.hpp>

#include <Kokkos_Core.hpp>
#include <Kokkos_Sort.hpp>

#include <cstddef>
#include <cstdint>
#include <iomanip>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace kpmap::train {

/// \brief The shape of one sample: an image (height x width x channels,
/// NHWC), or a flat vector of `channels` features (height = width = 1).
struct Shape {
  std::size_t height = 1;
  std::size_t width = 1;
  std::size_t channels = 1;
  bool image = false;

  static Shape flat(std::size_t features) { return {1, 1, features, false}; }
  static Shape hwc(std::size_t h, std::size_t w, std::size_t c) { return {h, w, c, true}; }
  std::size_t size() const { return height * width * channels; }
  /// "28x28x1 image" or "784 features".
  std::string str() const {
    if (!image) return std::to_string(channels) + " features";
    return std::to_string(height) + "x" + std::to_string(width) + "x" + std::to_string(channels) +
           " image";
  }
  bool operator==(const Shape& o) const {
    return height == o.height && width == o.width && channels == o.channels && image == o.image;
  }
};

/// \brief Streams of the counter-based generator, one per kind of number.
namespace stream {
inline constexpr std::uint32_t features = 0;
inline constexpr std::uint32_t truth = 1;
inline constexpr std::uint32_t noise = 2;
inline constexpr std::uint32_t class_truth = 3;
inline constexpr std::uint32_t shuffle = 4;
inline constexpr std::uint32_t init = 5;
inline constexpr std::uint32_t image_label = 6;
inline constexpr std::uint32_t image_phase = 7;
inline constexpr std::uint32_t image_noise = 8;
}  // namespace stream

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

/// \brief One rank's rows of a data set: features (rows x F, row-major) and
/// targets (rows; a class index stored as T for classification), plus where
/// the rows lie in the global set.
template <class T, class M = Kokkos::DefaultExecutionSpace::memory_space>
struct Shard {
  Kokkos::View<T**, Kokkos::LayoutRight, M> x;
  Kokkos::View<T*, M> y;
  std::size_t global_rows = 0;  ///< rows of the whole (train or validation) set
  std::size_t begin = 0;        ///< first global row held here
  std::size_t rows() const { return x.extent(0); }
};

namespace detail {
/// Kernel of first_bad_label: the lowest row whose target is no class index
/// in [0, classes).
template <class T, class M>
struct FirstBadLabel {
  Kokkos::View<T*, M> y;
  double classes;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i, std::size_t& first) const {
    const double v = static_cast<double>(y(i));
    const bool index = v >= 0 && v < classes && v == static_cast<double>(static_cast<long long>(v));
    if (!index && i < first) first = i;
  }
};
}  // namespace detail

/// \brief The first of this rank's rows in `shard` whose target is no class
/// index in [0, classes), or shard.rows() when there is none; found on the
/// device of M (one reduction). Not collective.
template <class T, class M>
std::size_t first_bad_label(const Shard<T, M>& shard, std::size_t classes) {
  using Exec = typename M::execution_space;
  const std::size_t rows = shard.y.extent(0);
  std::size_t first = rows;
  Kokkos::parallel_reduce("kpmap::train::check_labels", Kokkos::RangePolicy<Exec>(0, rows),
                          detail::FirstBadLabel<T, M>{shard.y, static_cast<double>(classes)},
                          Kokkos::Min<std::size_t>(first));
  return first < rows ? first : rows;
}

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

/// \brief Rows [begin, begin + rows) of a features dataset (N x F) and a
/// targets dataset (N) of an HDF5 file, in double precision, row-major.
struct HostRows {
  std::vector<double> x;
  std::vector<double> y;
  std::size_t features = 0;
};

/// \brief The shape of a data set in an HDF5 file.
struct HdfDataShape {
  std::size_t samples = 0;
  std::size_t features = 0;         ///< numbers per sample
  std::vector<std::size_t> sample;  ///< one sample's extents: {F}, {H, W} or {H, W, C}
  bool bytes = false;               ///< the features are unsigned bytes (pixels)
};

/// \brief Shape of the data set in an HDF5 file: checks that `x_name` is a
/// dataset of N samples (N x F features, or N x H x W (x C) images, any
/// numeric type) and `y_name` a 1-D dataset (N), or N x 1. Collective over
/// `comm`. \throws InputError (all ranks) naming the file and dataset.
HdfDataShape hdf5_data_shape(const std::string& path, const std::string& x_name,
                             const std::string& y_name, MPI_Comm comm);

/// \brief Reads this rank's rows by hyperslab (collective MPI-IO over `comm`).
HostRows read_hdf5_rows(const std::string& path, const std::string& x_name,
                        const std::string& y_name, std::size_t begin, std::size_t rows,
                        MPI_Comm comm);

/// \brief Host rows as a Shard in M's memory, converted to T.
template <class T, class M>
Shard<T, M> to_shard(const HostRows& h, std::size_t global_rows, std::size_t begin) {
  Shard<T, M> s;
  s.global_rows = global_rows;
  s.begin = begin;
  const std::size_t n = h.y.size();
  s.x = Kokkos::View<T**, Kokkos::LayoutRight, M>("kpmap::train::x", n, h.features);
  s.y = Kokkos::View<T*, M>("kpmap::train::y", n);
  auto hx = Kokkos::create_mirror_view(s.x);
  auto hy = Kokkos::create_mirror_view(s.y);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < h.features; ++j) hx(i, j) = static_cast<T>(h.x[i * h.features + j]);
    hy(i) = static_cast<T>(h.y[i]);
  }
  Kokkos::deep_copy(s.x, hx);
  Kokkos::deep_copy(s.y, hy);
  return s;
}

/// \brief Pixel scaling: x = (byte / 255 - mean[c]) / std[c] for channel c
/// (no mean and std: just byte / 255, into [0, 1]).
struct PixelScaling {
  std::vector<double> mean, std;
  void apply(std::vector<double>& x, std::size_t channels) const;
};

/// \brief This rank's block of the global rows [offset, offset + rows) of an
/// HDF5 data set, converted to T; with `scaling`, the features are pixel
/// bytes of `channels` channels, scaled. Collective over `axis`.
template <class T, class M>
Shard<T, M> read_shard(const std::string& path, const std::string& x_name,
                       const std::string& y_name, std::size_t offset, std::size_t rows,
                       AxisRef axis, const PixelScaling* scaling = nullptr,
                       std::size_t channels = 1) {
  const BlockPartition part(rows, axis);
  const std::size_t begin = part.begin(axis->index());
  HostRows h =
      read_hdf5_rows(path, x_name, y_name, offset + begin, part.count(axis->index()), axis->comm());
  if (scaling != nullptr) scaling->apply(h.x, channels);
  return to_shard<T, M>(h, rows, begin);
}

/// \brief The header of an IDX file (the MNIST format: unsigned bytes, the
/// first dimension counts the items), gzip-compressed or not.
struct IdxInfo {
  std::vector<std::size_t> dims;  ///< items, then the item's dimensions
  std::string path;               ///< the file
  std::string key;                ///< the deck key that names it
  std::size_t item_size() const {
    std::size_t n = 1;
    for (std::size_t d = 1; d < dims.size(); ++d) n *= dims[d];
    return n;
  }
  /// "data file PATH (KEY)", how messages name the file.
  std::string where() const { return "data file " + path + " (" + key + ")"; }
};

/// \brief Reads the header of `path` on rank 0 of `comm` and shares it. Rank
/// 0 also reads the whole file once: the header's dimensions must multiply
/// without overflow to exactly the bytes that follow it, and a gzip stream
/// must be intact. `key` names the deck key in messages. \throws InputError
/// (all ranks, printed once) naming the file and key when it is missing, not
/// IDX, not of unsigned bytes, damaged, cut short or longer than its header.
IdxInfo idx_info(const std::string& path, const std::string& key, MPI_Comm comm);

/// \brief Items [begin, begin + count) of an IDX file of unsigned bytes, as
/// doubles, into `out`. Returns why they cannot be read (naming the file, its
/// key and the items), or "". Not collective.
std::string read_idx_items(const IdxInfo& info, std::size_t begin, std::size_t count,
                           std::vector<double>& out);

/// \brief This rank's block of the global items [offset, offset + rows) of
/// an IDX image file and its IDX label file, scaled. Collective over `axis`:
/// each rank reads its own rows, and a file that cannot be read is an
/// InputError on every rank, naming it once.
template <class T, class M>
Shard<T, M> read_idx_shard(const IdxInfo& images, const IdxInfo& labels, std::size_t offset,
                           std::size_t rows, std::size_t channels, const PixelScaling& scaling,
                           AxisRef axis) {
  const BlockPartition part(rows, axis);
  const std::size_t begin = part.begin(axis->index());
  const std::size_t n = part.count(axis->index());
  HostRows h;
  h.features = images.item_size();
  std::string e = read_idx_items(images, offset + begin, n, h.x);
  if (e.empty()) e = read_idx_items(labels, offset + begin, n, h.y);
  kpmap::detail::agree(axis->comm(), e, exit_code::bad_input);
  scaling.apply(h.x, channels);
  return to_shard<T, M>(h, rows, begin);
}

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

/// \brief Where kpmap-train's samples come from (the deck's `data.kind`).
enum class DataKind { synthetic, images, idx, hdf5 };
inline constexpr DataKind data_kinds[] = {DataKind::synthetic, DataKind::images, DataKind::idx,
                                          DataKind::hdf5};

/// \brief The deck's word for `kind`.
inline const char* data_kind_name(DataKind kind) {
  switch (kind) {
    case DataKind::images:
      return "images";
    case DataKind::idx:
      return "idx";
    case DataKind::hdf5:
      return "hdf5";
    case DataKind::synthetic:
      break;
  }
  return "synthetic";
}

/// \brief The [data] section of a kpmap-train deck, with what the files'
/// headers say (train/config/data.cpp reads it).
struct DataConfig {
  DataKind kind = DataKind::synthetic;
  std::string source;                  ///< the deck, for messages
  std::string path, x_name, y_name;    ///< hdf5: the file, its datasets; idx: training images
  std::string labels;                  ///< idx: training labels
  std::string test_path, test_labels;  ///< idx: the test set (the validation set)
  IdxInfo train_images, train_labels, test_images, test_labels_info;
  PixelScaling scaling;            ///< data.mean, data.std
  bool test_set = false;           ///< the validation set is a separate test set
  bool hdf5_bytes = false;         ///< hdf5: the features are pixel bytes, scaled as IDX images
  bool classification = false;     ///< the targets are class indices (the loss says)
  Shape input;                     ///< one sample
  std::size_t samples = 0;         ///< training and validation samples
  std::size_t features = 0;        ///< per sample
  std::size_t classes = 1;         ///< a classifier's classes; 1 otherwise
  std::size_t validation = 0;      ///< samples held out (the last ones, or the test set)
  double validation_fraction = 0;  ///< data.validation_fraction
  double noise = 0;                ///< synthetic: the noise's standard deviation
  std::uint64_t seed = 0;          ///< synthetic: the data set's seed
};

/// \brief Throws InputError (all ranks) naming the file, key and sample of the
/// first target in `set` that is no class index in [0, c.classes); the set's
/// row 0 is the file's item `offset` (`held_out`: the validation set, read
/// from the test files where the deck gives them). Collective over `axis`.
template <class T, class M>
void check_labels(const DataConfig& c, const Shard<T, M>& set, std::size_t offset, bool held_out,
                  const AxisRef& axis) {
  const std::size_t none = std::numeric_limits<std::size_t>::max();
  const std::size_t local = first_bad_label(set, c.classes);
  const std::size_t first = kpmap::pmin(local < set.rows() ? set.begin + local : none, axis);
  if (first == none) return;
  // Its label, from the rank that holds it (the others add 0).
  double mine = 0;
  if (local < set.rows() && set.begin + local == first) {
    T v{};
    Kokkos::deep_copy(v, Kokkos::subview(set.y, local));
    mine = static_cast<double>(v);
  }
  const double label = kpmap::psum(mine, axis);
  std::ostringstream where;
  if (c.kind == DataKind::idx) {
    const bool test = held_out && c.test_set;
    where << "data file " << (test ? c.test_labels : c.labels) << " ("
          << (test ? "data.test_labels" : "data.labels") << ")";
  } else if (c.kind == DataKind::hdf5) {
    where << "data file " << c.path << ", dataset '" << c.y_name << "' (data.y)";
  } else {
    where << c.source << ": the " << data_kind_name(c.kind) << " data";
  }
  std::ostringstream value;
  value << std::setprecision(17) << label;
  throw InputError(where.str() + ": sample " + std::to_string(offset + first) + " has label " +
                       value.str() + ", which is no class index in [0, " +
                       std::to_string(c.classes) + ") (" + c.source + ": key 'data.classes')",
                   ErrorScope::all_ranks);
}

/// \brief The training and held-out shards of the data `c` describes (its kind: a
/// generator, images, IDX files or HDF5) over `axis`'s ranks, in memory space
/// M, values of type T. Collective over the axis. \throws InputError (all
/// ranks) naming the file of data that cannot be read, or, for a classifier,
/// the deck and key when a target is no class index.
template <class T, class M>
std::pair<Shard<T, M>, Shard<T, M>> load_data(const DataConfig& c, const AxisRef& axis) {
  const std::size_t n_train = c.samples - c.validation;
  std::pair<Shard<T, M>, Shard<T, M>> sets;
  auto& [train_set, val_set] = sets;
  if (c.kind == DataKind::idx) {
    train_set = read_idx_shard<T, M>(c.train_images, c.train_labels, 0, n_train, c.input.channels,
                                     c.scaling, axis);
    val_set = c.test_set ? read_idx_shard<T, M>(c.test_images, c.test_labels_info, 0, c.validation,
                                                c.input.channels, c.scaling, axis)
                         : read_idx_shard<T, M>(c.train_images, c.train_labels, n_train,
                                                c.validation, c.input.channels, c.scaling, axis);
  } else if (c.kind == DataKind::images) {
    const SyntheticImages g(c.samples, c.input.height, c.input.width, c.input.channels, c.classes,
                            c.seed, c.noise);
    train_set = generate_shard<T, M>(g, 0, n_train, axis);
    val_set = generate_shard<T, M>(g, n_train, c.validation, axis);
  } else if (c.kind == DataKind::hdf5) {
    const PixelScaling* scaling = c.hdf5_bytes ? &c.scaling : nullptr;
    train_set =
        read_shard<T, M>(c.path, c.x_name, c.y_name, 0, n_train, axis, scaling, c.input.channels);
    val_set = read_shard<T, M>(c.path, c.x_name, c.y_name, n_train, c.validation, axis, scaling,
                               c.input.channels);
  } else if (!c.classification) {
    const SyntheticRegression g{c.samples, c.features, c.seed, c.noise};
    train_set = generate_shard<T, M>(g, 0, n_train, axis);
    val_set = generate_shard<T, M>(g, n_train, c.validation, axis);
  } else {
    const SyntheticClassification g{c.samples, c.features, c.classes, c.seed};
    train_set = generate_shard<T, M>(g, 0, n_train, axis);
    val_set = generate_shard<T, M>(g, n_train, c.validation, axis);
  }
  if (c.classification) {
    // Targets must be class indices: found on every rank's rows, agreed by
    // all; the message names the file, the sample and its label.
    check_labels(c, train_set, 0, false, axis);
    check_labels(c, val_set, c.test_set ? 0 : n_train, true, axis);
  }
  return sets;
}

}  // namespace kpmap::train
