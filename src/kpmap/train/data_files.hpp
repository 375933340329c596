// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief kpmap-train's data files: one rank's rows of an HDF5 data set
/// (read by hyperslab, data_files.cpp) or of IDX image and label files
/// (MNIST's format, gzipped or not, idx.cpp), and the byte images' scaling.

#include <kpmap/base/error.hpp>
#include <kpmap/spmd/pmap.hpp>
#include <kpmap/train/shard.hpp>
#include <kpmap/train/types.hpp>
#include <kpmap/transport/host.hpp>

#include <Kokkos_Core.hpp>

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kpmap::train {

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
  kpmap::transport::agree(axis->comm(), e, exit_code::bad_input);
  scaling.apply(h.x, channels);
  return to_shard<T, M>(h, rows, begin);
}

// Compiled once, in kpmap's library (train/instances/data.cpp), for each
// value type: a program that reads data compiles only what it calls inline.
#define KPMAP_TRAIN_DATA_FILES_INSTANCES(PREFIX, T, M)                                            \
  PREFIX template Shard<T, M> to_shard<T, M>(const HostRows&, std::size_t, std::size_t);          \
  PREFIX template Shard<T, M> read_shard<T, M>(const std::string&, const std::string&,            \
                                               const std::string&, std::size_t, std::size_t,      \
                                               AxisRef, const PixelScaling*, std::size_t);        \
  PREFIX template Shard<T, M> read_idx_shard<T, M>(const IdxInfo&, const IdxInfo&, std::size_t,   \
                                                   std::size_t, std::size_t, const PixelScaling&, \
                                                   AxisRef);
#define KPMAP_TRAIN_EXTERN_DATA_FILES_(T, M) KPMAP_TRAIN_DATA_FILES_INSTANCES(extern, T, M)
KPMAP_TRAIN_FOR_EACH_VALUE_TYPE(KPMAP_TRAIN_EXTERN_DATA_FILES_)
#undef KPMAP_TRAIN_EXTERN_DATA_FILES_

}  // namespace kpmap::train
