// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Training data for kpmap-train: the deck's [data] section, and the
/// training and validation shards it describes, from a generator
/// (train/synthetic.hpp) or files (train/data_files.hpp), their labels
/// checked. Shuffling and batches: train/batches.hpp.

#include <kpmap/base/error.hpp>
#include <kpmap/base/words.hpp>
#include <kpmap/collectives/collectives.hpp>
#include <kpmap/spmd/pmap.hpp>
#include <kpmap/train/data_files.hpp>
#include <kpmap/train/shard.hpp>
#include <kpmap/train/synthetic.hpp>
#include <kpmap/train/types.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <iomanip>
#include <limits>
#include <sstream>
#include <string>
#include <utility>

namespace kpmap::train {

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

/// \brief Where kpmap-train's samples come from (the deck's `data.kind`).
enum class DataKind { synthetic, images, idx, hdf5 };

}  // namespace kpmap::train

/// \brief The deck's words of kpmap::train::DataKind (data.kind).
template <>
struct kpmap::EnumWords<kpmap::train::DataKind> {
  using K = kpmap::train::DataKind;
  static constexpr std::pair<K, const char*> list[] = {
      {K::synthetic, "synthetic"}, {K::images, "images"}, {K::idx, "idx"}, {K::hdf5, "hdf5"}};
};

namespace kpmap::train {

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
    where << c.source << ": the " << word_of(c.kind) << " data";
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

// Compiled once, in kpmap's library (train/instances/data.cpp), for each
// value type.
#define KPMAP_TRAIN_DATA_INSTANCES(PREFIX, T, M)                                              \
  PREFIX template void check_labels<T, M>(const DataConfig&, const Shard<T, M>&, std::size_t, \
                                          bool, const AxisRef&);                              \
  PREFIX template std::pair<Shard<T, M>, Shard<T, M>> load_data<T, M>(const DataConfig&,      \
                                                                      const AxisRef&);
#define KPMAP_TRAIN_EXTERN_DATA_(T, M) KPMAP_TRAIN_DATA_INSTANCES(extern, T, M)
KPMAP_TRAIN_FOR_EACH_VALUE_TYPE(KPMAP_TRAIN_EXTERN_DATA_)
#undef KPMAP_TRAIN_EXTERN_DATA_

}  // namespace kpmap::train
