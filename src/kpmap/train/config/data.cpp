// SPDX-License-Identifier: BSD-3-Clause
// kpmap-train's [data] section: its keys and their reader, which reads the
// data files' headers for the set's size and the shape of one sample.
#include <kpmap/train/config/sections.hpp>

#include <kpmap/base/error.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace kpmap::train::detail {

using deck::Deck;

void declare_data_keys(deck::Schema& s) {
  using deck::Range;
  s.string("data.kind", "synthetic", enum_words<DataKind>(),
           "synthetic: generated from the sample index; images: synthetic images (class "
           "patterns and noise); idx: IDX image and label files (MNIST format, .gz or not); "
           "hdf5: read from data.path");
  s.string("data.path", "", {}, "hdf5: the data file; idx: the training images");
  s.string("data.labels", "", {}, "idx: the training labels");
  s.string("data.test_path", "", {},
           "idx: test images (the validation set; data.validation_fraction must be 0)");
  s.string("data.test_labels", "", {}, "idx: test labels");
  s.integer_list("data.image", std::vector<long long>{12, 12, 1}, Range{1, 1 << 16}, "pixels",
                 "images: height, width, channels of the synthetic images");
  s.real_list("data.mean", std::vector<double>{}, Range{-1e6, 1e6}, "",
              "idx, hdf5 byte images: per-channel mean subtracted after scaling bytes to [0, 1] "
              "(empty: none)");
  s.real_list("data.std", std::vector<double>{}, Range{1e-12, 1e6}, "",
              "idx, hdf5 byte images: per-channel standard deviation divided by (as many as "
              "data.mean)");
  s.string("data.x", "x", {},
           "hdf5: features dataset: samples x features, or images samples x height x width "
           "(x channels), unsigned bytes (scaled to [0, 1]) or any number type");
  s.string("data.y", "y", {}, "hdf5: targets dataset (samples): values, or class indices");
  s.integer("data.samples", 400, Range{1, 1e12}, "", "synthetic: samples in the whole data set");
  s.integer("data.features", 5, Range{1, 1 << 24}, "", "synthetic: features per sample");
  s.integer("data.classes", 4, Range{2, 1 << 20}, "",
            "a classification loss (cross_entropy): number of classes (labels 0 .. "
            "classes-1)");
  s.real("data.noise", 0.1, Range{0, 1e6}, "",
         "synthetic regression and images: std. dev. of the noise");
  s.integer("data.seed", 0, Range{0, 9.2e18}, "", "synthetic: seed of the data set");
  s.real("data.validation_fraction", 0.0, Range{0, 0.9}, "",
         "share of the samples held out for validation (the last rows of the set)");
  // When each key takes effect: a key given where it would do nothing is
  // refused (Schema::when).
  std::vector<std::string> classifiers;
  for (const LossInfo* l : loss_registry().all()) {
    if (l->classification) classifiers.push_back(l->name);
  }
  s.when("data.path", "data.kind", {"hdf5", "idx"})
      .when("data.labels", "data.kind", {"idx"})
      .when("data.test_path", "data.kind", {"idx"})
      .when("data.test_labels", "data.kind", {"idx"})
      .when("data.image", "data.kind", {"images"})
      .when("data.mean", "data.kind", {"idx", "hdf5"})
      .when("data.std", "data.kind", {"idx", "hdf5"})
      .when("data.x", "data.kind", {"hdf5"})
      .when("data.y", "data.kind", {"hdf5"})
      .when("data.samples", "data.kind", {"synthetic", "images"})
      .when("data.features", "data.kind", {"synthetic"})
      .when("data.noise", "data.kind", {"synthetic", "images"})
      .when("data.seed", "data.kind", {"synthetic", "images"})
      .when("data.classes", "model.loss", classifiers);
}

namespace {

// An IDX label file holds `n` labels: shaped (n), or (n, 1) as HDF5 targets may be.
bool one_label_each(const IdxInfo& labels, std::size_t n) {
  const auto& d = labels.dims;
  return (d.size() == 1 || (d.size() == 2 && d[1] == 1)) && d[0] == n;
}

// The IDX test files: the validation set, of the training images' shape.
void read_idx_test_set(DataConfig& data, const Deck& d, MPI_Comm comm) {
  if (data.test_path.empty() || data.test_labels.empty()) {
    deck_error(d, "keys 'data.test_path' and 'data.test_labels': give both, or neither");
  }
  if (data.validation_fraction > 0) {
    throw d.bad("data.validation_fraction", "the test files are the validation set; set it to 0");
  }
  data.test_images = idx_info(data.test_path, "data.test_path", comm);
  data.test_labels_info = idx_info(data.test_labels, "data.test_labels", comm);
  const auto& dims = data.train_images.dims;
  const auto& t = data.test_images.dims;
  if (t.size() != dims.size() || !std::equal(t.begin() + 1, t.end(), dims.begin() + 1)) {
    throw d.bad("data.test_path", "the test images of " + data.test_path +
                                      " are not the shape of the training images of " + data.path);
  }
  if (!one_label_each(data.test_labels_info, t[0])) {
    throw d.bad("data.test_labels",
                data.test_labels + " holds " + std::to_string(data.test_labels_info.dims[0]) +
                    " labels (" + std::to_string(data.test_labels_info.dims.size()) +
                    "-D), not one for each of the " + std::to_string(t[0]) + " images of " +
                    data.test_path);
  }
  data.test_set = true;
  data.validation = t[0];
  data.samples += t[0];
}

// IDX image and label files: the set's size and the images' shape.
void read_idx_shape(DataConfig& data, const Deck& d, MPI_Comm comm) {
  for (const char* key : {"data.path", "data.labels"}) {
    if (d.string(key).empty()) throw d.bad(key, "data.kind = \"idx\" needs it");
  }
  data.train_images = idx_info(data.path, "data.path", comm);
  data.train_labels = idx_info(data.labels, "data.labels", comm);
  const auto& dims = data.train_images.dims;
  if (dims.size() < 3 || dims.size() > 4) {
    throw d.bad("data.path", data.path + " holds " + std::to_string(dims.size()) +
                                 "-D data; images are N x height x width (x channels)");
  }
  if (!one_label_each(data.train_labels, dims[0])) {
    throw d.bad("data.labels", data.labels + " holds " + std::to_string(data.train_labels.dims[0]) +
                                   " labels (" + std::to_string(data.train_labels.dims.size()) +
                                   "-D), not one for each of the " + std::to_string(dims[0]) +
                                   " images of " + data.path);
  }
  data.input = Shape::hwc(dims[1], dims[2], dims.size() == 4 ? dims[3] : 1);
  data.features = data.input.size();
  data.samples = dims[0];
  if (!data.test_path.empty() || !data.test_labels.empty()) read_idx_test_set(data, d, comm);
}

// data.mean and data.std against the data: byte images, one value a channel.
void check_scaling(const DataConfig& data, const Deck& d) {
  const auto& scaling = data.scaling;
  // The schema refuses a scaling of generated data (Schema::when); whether
  // an HDF5 file holds bytes is known only once its header is read.
  if ((!scaling.mean.empty() || !scaling.std.empty()) && data.kind == DataKind::hdf5 &&
      !data.hdf5_bytes) {
    throw d.bad(
        !scaling.mean.empty() ? "data.mean" : "data.std",
        "it scales byte images (data.kind = \"idx\", or HDF5 images of unsigned bytes), and "
        "the features of " +
            data.path + " are not bytes; they are used as they are: it would have no effect");
  }
  if (scaling.mean.size() != scaling.std.size() ||
      (!scaling.mean.empty() && scaling.mean.size() != data.input.channels)) {
    deck_error(d, "keys 'data.mean' and 'data.std': give one value per channel (" +
                      std::to_string(data.input.channels) + ") in each, or leave both empty");
  }
}

// The data set's size and the shape of one sample, from the generator's
// keys or the files' headers.
void read_data_shape(TrainConfig& c, const Deck& d, MPI_Comm comm) {
  c.data.input = Shape::flat(c.data.features);
  if (c.data.kind == DataKind::hdf5) {
    if (c.data.path.empty()) throw d.bad("data.path", "data.kind = \"hdf5\" needs the data file");
    const auto shape = hdf5_data_shape(c.data.path, c.data.x_name, c.data.y_name, comm);
    c.data.samples = shape.samples;
    c.data.features = shape.features;
    const auto& e = shape.sample;
    c.data.input =
        e.size() == 1 ? Shape::flat(e[0]) : Shape::hwc(e[0], e[1], e.size() == 3 ? e[2] : 1);
    c.data.hdf5_bytes = shape.bytes && c.data.input.image;
  } else if (c.data.kind == DataKind::images) {
    const auto& e = d.integer_list("data.image");
    if (e.size() != 3) {
      throw d.bad("data.image", "expected [height, width, channels], found " +
                                    std::to_string(e.size()) + " numbers");
    }
    c.data.input = Shape::hwc(std::size_t(e[0]), std::size_t(e[1]), std::size_t(e[2]));
    c.data.features = c.data.input.size();
  } else if (c.data.kind == DataKind::idx) {
    read_idx_shape(c.data, d, comm);
  }
  check_scaling(c.data, d);
  if (c.data.input.image && !c.data.classification && c.model.kind == "linear") {
    throw d.bad("model.kind", "images need model.kind = \"sequential\" (or \"mlp\")");
  }
}

}  // namespace

void read_data(const Deck& d, TrainConfig& c, MPI_Comm comm) {
  c.data.kind = *enum_of<DataKind>(d.string("data.kind"));  // one of the schema's choices
  c.data.source = c.source;
  c.data.path = d.string("data.path");
  c.data.x_name = d.string("data.x");
  c.data.y_name = d.string("data.y");
  c.data.samples = std::size_t(d.integer("data.samples"));
  c.data.features = std::size_t(d.integer("data.features"));
  c.data.classes = c.data.classification ? std::size_t(d.integer("data.classes")) : 1;
  c.data.noise = d.real("data.noise");
  c.data.seed = std::uint64_t(d.integer("data.seed"));
  c.data.validation_fraction = d.real("data.validation_fraction");
  c.data.labels = d.string("data.labels");
  c.data.test_path = d.string("data.test_path");
  c.data.test_labels = d.string("data.test_labels");
  c.data.scaling.mean = d.real_list("data.mean");
  c.data.scaling.std = d.real_list("data.std");
  read_data_shape(c, d, comm);
}

}  // namespace kpmap::train::detail
