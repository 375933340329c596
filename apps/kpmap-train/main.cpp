// kpmap-train: data-parallel regression and classification training.
//
//   mpiexec -n 4 kpmap-train inputs/train_linear.toml
//
// The model is replicated on every rank, each global batch is split over the
// ranks, every rank computes the gradient of its samples, one psum (fused,
// or layer by layer overlapping the backward pass) makes it the batch mean,
// and every rank applies the same update. Results, history and checkpoints
// go to output.dir.

#include "../common/run_options.hpp"
#include "schema.hpp"

#include <kpmap/checkpoint.hpp>
#include <kpmap/collectives/checked.hpp>
#include <kpmap/detail/kokkos_compat.hpp>
#include <kpmap/kpmap.hpp>
#include <kpmap/run/output.hpp>
#include <kpmap/train/data.hpp>
#include <kpmap/train/layers/registry.hpp>
#include <kpmap/train/linear.hpp>
#include <kpmap/train/optimizer.hpp>
#include <kpmap/train/sequential.hpp>
#include <kpmap/train/trainer.hpp>
#include <kpmap/version.hpp>

#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using kpmap::deck::Deck;
using Mem = Kokkos::DefaultExecutionSpace::memory_space;
using kpmap::Phase;

// Everything the deck says, checked across keys.
struct Config {
  std::string model, activation, loss, precision, data_kind, path, x_name, y_name;
  double loss_scale = 1;  // mixed precision
  std::vector<std::size_t> hidden;
  std::vector<kpmap::train::LayerSpec> layers;  // mlp and sequential
  kpmap::train::Shape input;                    // one sample
  std::string labels, test_path, test_labels;   // idx
  kpmap::train::IdxInfo train_images, train_labels, test_images, test_labels_info;
  kpmap::train::PixelScaling scaling;
  bool test_set = false;       // the validation set is a separate test set
  bool hdf5_bytes = false;     // hdf5: the features are pixel bytes, scaled like IDX images
  double parameters = 0;       // mlp, sequential: trainable numbers
  double work_per_sample = 0;  // mlp, sequential: work array elements per sample of capacity
  std::size_t samples = 0, features = 0, classes = 0, validation = 0;
  double noise = 0, fraction = 0;
  std::uint64_t data_seed = 0, train_seed = 0;
  kpmap::train::OptimizerConfig optimizer;
  long long epochs = 0, checkpoint_every = 0, max_steps = 0, log_every = 0;
  std::size_t accumulate = 1;  // micro-batches per step
  int keep = 3;
  std::size_t batch = 0;
  std::string output;
};

[[noreturn]] void bad(const Deck& d, const std::string& what) {
  throw kpmap::InputError(d.source() + ": " + what, kpmap::ErrorScope::all_ranks);
}

// A value the deck holds at `key` is refused: the message cites its line.
[[noreturn]] void bad(const Deck& d, const std::string& key, const std::string& what) {
  throw kpmap::InputError(d.where(key) + "key " + d.named(key) + ": " + what,
                          kpmap::ErrorScope::all_ranks);
}

// The data set's size and the shape of one sample, from the generator's
// keys or the files' headers.
void read_data_shape(Config& c, const Deck& d, MPI_Comm comm) {
  c.input = kpmap::train::Shape::flat(c.features);
  if (c.data_kind == "hdf5") {
    if (c.path.empty()) bad(d, "data.path", "data.kind = \"hdf5\" needs the data file");
    const auto shape = kpmap::train::hdf5_data_shape(c.path, c.x_name, c.y_name, comm);
    c.samples = shape.samples;
    c.features = shape.features;
    const auto& e = shape.sample;
    c.input = e.size() == 1 ? kpmap::train::Shape::flat(e[0])
                            : kpmap::train::Shape::hwc(e[0], e[1], e.size() == 3 ? e[2] : 1);
    c.hdf5_bytes = shape.bytes && c.input.image;
  } else if (c.data_kind == "images") {
    const auto& e = d.integer_list("data.image");
    if (e.size() != 3) {
      throw kpmap::InputError(d.where("data.image") + "key 'data.image': expected [height, " +
                                  "width, channels], found " + std::to_string(e.size()) +
                                  " numbers",
                              kpmap::ErrorScope::all_ranks);
    }
    c.input = kpmap::train::Shape::hwc(std::size_t(e[0]), std::size_t(e[1]), std::size_t(e[2]));
    c.features = c.input.size();
  } else if (c.data_kind == "idx") {
    for (const char* key : {"data.path", "data.labels"}) {
      if (d.string(key).empty()) {
        bad(d, key, "data.kind = \"idx\" needs it");
      }
    }
    c.train_images = kpmap::train::idx_info(c.path, "data.path", comm);
    c.train_labels = kpmap::train::idx_info(c.labels, "data.labels", comm);
    const auto& dims = c.train_images.dims;
    if (dims.size() < 3 || dims.size() > 4) {
      bad(d, "data.path",
          c.path + " holds " + std::to_string(dims.size()) +
              "-D data; images are N x height x width (x channels)");
    }
    if (c.train_labels.dims.size() != 1 || c.train_labels.dims[0] != dims[0]) {
      bad(d, "data.labels",
          c.labels + " does not hold one label for each of the " + std::to_string(dims[0]) +
              " images of " + c.path);
    }
    c.input = kpmap::train::Shape::hwc(dims[1], dims[2], dims.size() == 4 ? dims[3] : 1);
    c.features = c.input.size();
    c.samples = dims[0];
    if (!c.test_path.empty() || !c.test_labels.empty()) {
      if (c.test_path.empty() || c.test_labels.empty()) {
        bad(d, "keys 'data.test_path' and 'data.test_labels': give both, or neither");
      }
      if (c.fraction > 0) {
        bad(d, "data.validation_fraction",
            "the test files are the validation set; set "
            "it to 0");
      }
      c.test_images = kpmap::train::idx_info(c.test_path, "data.test_path", comm);
      c.test_labels_info = kpmap::train::idx_info(c.test_labels, "data.test_labels", comm);
      const auto& t = c.test_images.dims;
      if (t.size() != dims.size() || !std::equal(t.begin() + 1, t.end(), dims.begin() + 1)) {
        bad(d, "data.test_path",
            "the test images of " + c.test_path + " are not the shape of the training images of " +
                c.path);
      }
      if (c.test_labels_info.dims.size() != 1 || c.test_labels_info.dims[0] != t[0]) {
        bad(d, "data.test_labels",
            c.test_labels + " does not hold one label for each of the " + std::to_string(t[0]) +
                " images of " + c.test_path);
      }
      c.test_set = true;
      c.validation = t[0];
      c.samples += t[0];
    }
  }
  if (c.scaling.mean.size() != c.scaling.std.size() ||
      (!c.scaling.mean.empty() && c.scaling.mean.size() != c.input.channels)) {
    bad(d, "keys 'data.mean' and 'data.std': give one value per channel (" +
               std::to_string(c.input.channels) + ") in each, or leave both empty");
  }
  if (c.input.image && c.loss != "cross_entropy" && c.model == "linear") {
    bad(d, "model.kind", "images need model.kind = \"sequential\" (or \"mlp\")");
  }
}

// model.layers (sequential) or model.hidden (mlp) as layer specs, built
// once here so that shapes that do not chain are refused before any work.
void read_layers(Config& c, const Deck& d) {
  const std::vector<int> at = d.indices("model.layers");
  if (c.model != "sequential") {
    if (!at.empty()) {
      throw kpmap::InputError(d.where("model.layers.1") +
                                  "key 'model.layers': layers are read "
                                  "for model.kind = \"sequential\", and model.kind is \"" +
                                  c.model + "\"",
                              kpmap::ErrorScope::all_ranks);
    }
    if (c.model == "mlp") {
      std::vector<std::size_t> widths{c.input.size()};
      widths.insert(widths.end(), c.hidden.begin(), c.hidden.end());
      widths.push_back(c.loss == "cross_entropy" ? c.classes : 1);
      c.layers = kpmap::train::mlp_specs(widths, c.activation);
      if (c.input.image) c.layers.insert(c.layers.begin(), kpmap::train::LayerSpec{"flatten"});
    }
  } else if (at.empty()) {
    bad(d, "model.layers", "model.kind = \"sequential\" needs its layers");
  }
  if (c.model == "linear") return;
  for (int i : at) {
    const std::string k = "model.layers." + std::to_string(i) + ".";
    kpmap::train::LayerSpec s;
    s.type = d.string(k + "type");
    s.units = std::size_t(d.integer(k + "units"));
    s.filters = std::size_t(d.integer(k + "filters"));
    s.kernel = std::size_t(d.integer(k + "kernel"));
    s.stride = std::size_t(d.integer(k + "stride"));
    s.same = d.string(k + "padding") == "same";
    s.size = std::size_t(d.integer(k + "size"));
    const char* needs = s.type == "dense" ? "units" : s.type == "conv2d" ? "filters" : nullptr;
    if (needs != nullptr && d.integer(k + needs) == 0) {
      throw kpmap::InputError(d.where(k.substr(0, k.size() - 1)) + "key '" + k + needs + "': a " +
                                  s.type + " layer needs " + needs + " (at least 1)",
                              kpmap::ErrorScope::all_ranks);
    }
    c.layers.push_back(s);
  }
  try {
    using Net = kpmap::train::Sequential<double, Kokkos::HostSpace>;
    const auto layers = kpmap::train::build_layers<double, Kokkos::HostSpace>(c.input, c.layers);
    Net::check(c.input, layers,
               c.loss == "mse" ? kpmap::train::Loss::mse : kpmap::train::Loss::cross_entropy);
    const std::size_t scores = layers.back()->output_shape().channels;
    if (c.loss == "cross_entropy" && scores != c.classes) {
      throw kpmap::train::ShapeError("the last layer gives " + std::to_string(scores) +
                                         " class scores and data.classes is " +
                                         std::to_string(c.classes),
                                     c.layers.size());
    }
    c.parameters = double(Net::parameter_count(layers));
    c.work_per_sample = Net::work_bytes_per_sample(c.input, layers) / sizeof(double);
  } catch (const kpmap::train::ShapeError& e) {
    const std::string path =
        e.layer() > 0 ? "model.layers." + std::to_string(at[e.layer() - 1]) : "model.layers.1";
    throw kpmap::InputError(d.where(path) + "key 'model.layers': " + e.what() + " (the data " +
                                "gives a " + c.input.str() + " per sample)",
                            kpmap::ErrorScope::all_ranks);
  }
}

Config configure(const Deck& d, MPI_Comm comm) {
  Config c;
  c.model = d.string("model.kind");
  c.activation = d.string("model.activation");
  c.loss = d.string("model.loss");
  c.precision = d.string("model.precision");
  for (long long w : d.integer_list("model.hidden")) c.hidden.push_back(std::size_t(w));
  c.data_kind = d.string("data.kind");
  c.path = d.string("data.path");
  c.x_name = d.string("data.x");
  c.y_name = d.string("data.y");
  c.samples = std::size_t(d.integer("data.samples"));
  c.features = std::size_t(d.integer("data.features"));
  c.classes = c.loss == "cross_entropy" ? std::size_t(d.integer("data.classes")) : 1;
  c.noise = d.real("data.noise");
  c.data_seed = std::uint64_t(d.integer("data.seed"));
  c.fraction = d.real("data.validation_fraction");
  c.optimizer.kind = kpmap::train::optimizer_kind(d.string("optimizer.kind"));
  c.optimizer.learning_rate = d.real("optimizer.learning_rate");
  c.optimizer.momentum = d.real("optimizer.momentum");
  c.optimizer.beta1 = d.real("optimizer.beta1");
  c.optimizer.beta2 = d.real("optimizer.beta2");
  c.optimizer.epsilon = d.real("optimizer.epsilon");
  c.optimizer.warmup_steps = d.integer("optimizer.warmup_steps");
  c.optimizer.schedule = kpmap::train::schedule_kind(d.string("optimizer.schedule"));
  c.optimizer.decay_steps = d.integer("optimizer.decay_steps");
  c.optimizer.decay_factor = d.real("optimizer.decay_factor");
  c.epochs = d.integer("train.epochs");
  c.max_steps = d.integer("train.max_steps");
  c.log_every = d.integer("train.log_every");
  c.accumulate = std::size_t(d.integer("train.accumulate_steps"));
  c.batch = std::size_t(d.integer("train.batch_size"));
  c.train_seed = std::uint64_t(d.integer("train.seed"));
  c.output = d.string("output.dir");
  c.checkpoint_every = d.integer("output.checkpoint_every");
  c.keep = int(d.integer("output.keep"));

  c.labels = d.string("data.labels");
  c.test_path = d.string("data.test_path");
  c.test_labels = d.string("data.test_labels");
  c.scaling.mean = d.real_list("data.mean");
  c.scaling.std = d.real_list("data.std");
  read_data_shape(c, d, comm);
  read_layers(c, d);

  if (c.model == "linear" && c.accumulate > 1) {
    throw kpmap::InputError(d.where("train.accumulate_steps") +
                                "key 'train.accumulate_steps': the linear model reads its whole "
                                "batch in one pass; accumulation is for mlp and sequential models",
                            kpmap::ErrorScope::all_ranks);
  }
  if (c.precision == "mixed") {
    if (c.model == "linear") {
      throw kpmap::InputError(d.where("model.precision") +
                                  "key 'model.precision': \"mixed\" is for mlp and sequential "
                                  "models (the linear model has no layers to run in 16 bits); "
                                  "use \"float\" or \"double\"",
                              kpmap::ErrorScope::all_ranks);
    }
    if (!kpmap::detail::has_half_type) {
      throw kpmap::InputError(
          d.where("model.precision") +
              "key 'model.precision': \"mixed\" needs a 16-bit floating-point type, and this "
              "Kokkos build (" +
              kpmap::detail::kokkos_version_string() + ", " +
              Kokkos::DefaultExecutionSpace::name() +
              ") has none: Kokkos::Experimental::half_t is float unless Kokkos is built for "
              "CUDA, HIP or SYCL. Use \"float\" here, or a GPU build of Kokkos",
          kpmap::ErrorScope::all_ranks);
    }
  }
  c.loss_scale = d.real("model.loss_scale");
  if (c.model == "linear" && c.loss != "mse") {
    bad(d, "model.loss",
        "a linear model is fitted by mse; for softmax regression use "
        "model.kind = \"mlp\" with model.hidden = []");
  }
  if (c.data_kind == "synthetic" && c.loss == "cross_entropy") {
    // Each label is the best of `classes` scores over `classes` hidden units
    // of `features` inputs: samples x classes^2 x features multiply-adds
    // (about 70 ns each on one core, the truth matrices being drawn as they
    // are used). Refused where that would run for minutes without a word.
    int ranks = 1;
    MPI_Comm_size(comm, &ranks);
    const double per_rank = std::ceil(double(c.samples) / ranks) * double(c.classes) *
                            double(c.classes) * double(c.features);
    constexpr double limit = 2e9;
    if (per_rank > limit) {
      const double fit = std::floor(
          std::sqrt(limit / (std::ceil(double(c.samples) / ranks) * double(c.features))));
      char text[400];
      std::snprintf(text, sizeof text,
                    "key 'data.classes': the labels of a synthetic set of %zu samples, %zu "
                    "features and %zu classes cost %.3g multiply-adds per rank (samples x "
                    "classes^2 x features; minutes to hours): use at most %.0f classes here, "
                    "fewer samples or features, more ranks, or data from a file",
                    c.samples, c.features, c.classes, per_rank, std::max(2.0, fit));
      throw kpmap::InputError(d.where("data.classes") + text, kpmap::ErrorScope::all_ranks);
    }
  }
  c.validation =
      c.test_set ? c.validation : std::size_t(std::floor(c.fraction * double(c.samples)));
  if (c.samples - c.validation < 1) bad(d, "no training samples are left after the split");
  const std::size_t train_rows = c.samples - c.validation;
  const std::size_t global_batch = c.batch == 0 || c.batch > train_rows ? train_rows : c.batch;
  if (d.boolean("optimizer.scale_lr_with_batch")) {
    c.optimizer.learning_rate *= double(global_batch) / double(d.integer("optimizer.base_batch"));
  }
  if (c.optimizer.schedule != kpmap::train::OptimizerConfig::Schedule::constant &&
      c.optimizer.decay_steps == 0) {
    if (c.optimizer.schedule == kpmap::train::OptimizerConfig::Schedule::step) {
      throw kpmap::InputError(d.where("optimizer.decay_steps") +
                                  "key 'optimizer.decay_steps': optimizer.schedule = \"step\" "
                                  "needs the steps between decays (at least 1)",
                              kpmap::ErrorScope::all_ranks);
    }
    // Cosine over the rest of the run.
    const long long per_epoch =
        static_cast<long long>((train_rows + global_batch - 1) / global_batch);
    const long long total =
        c.max_steps > 0 ? std::min(c.max_steps, c.epochs * per_epoch) : c.epochs * per_epoch;
    c.optimizer.decay_steps = std::max(1LL, total - c.optimizer.warmup_steps);
  }
  if (c.optimizer.kind == kpmap::train::OptimizerConfig::Kind::gd && c.batch != 0 &&
      c.batch < train_rows) {
    bad(d, "train.batch_size",
        "optimizer.kind = \"gd\" is full-batch gradient descent "
        "(train.batch_size = 0); use \"sgd\", \"momentum\" or \"adam\" for minibatches");
  }
  return c;
}

// "[a, b, ...]" for the terminal: the first and last few of a long vector
// (result.json holds every value).
std::string join(const std::vector<double>& v, int digits = 6) {
  constexpr std::size_t shown = 8;  // at each end
  std::ostringstream s;
  s.precision(digits);
  s << "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v.size() > 2 * shown && i == shown) {
      s << ", ... " << v.size() - 2 * shown << " more ...";
      i = v.size() - shown - 1;
      continue;
    }
    s << (i ? ", " : "") << v[i];
  }
  return s.str() + "]";
}

template <class V>
std::vector<double> to_vector(const V& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  std::vector<double> out(h.size());
  for (std::size_t i = 0; i < h.size(); ++i) out[i] = double(h.data()[i]);
  return out;
}

// Samples the work arrays hold: a micro-batch's share of the batch rows a
// rank may get (train.accumulate_steps splits it); evaluation goes in chunks
// of this, so dense models take chunks of up to 4096 validation rows, while
// convolutions keep theirs at the batch (their patch matrices are large).
std::size_t work_capacity(const Config& c, std::size_t batch_rows, std::size_t val_rows) {
  const std::size_t micro = (batch_rows + c.accumulate - 1) / c.accumulate;
  const bool conv = std::any_of(c.layers.begin(), c.layers.end(),
                                [](const auto& l) { return l.type == "conv2d"; });
  return conv ? micro : std::max(micro, std::min<std::size_t>(val_rows, 4096));
}

// Bytes one rank allocates: its rows of the data (and, from HDF5, the
// doubles they are read into), the batch order, the parameters with their
// gradient and optimizer moments, and the MLP's work arrays.
template <class T>
double memory_estimate(const Config& c, int ranks, std::string& breakdown) {
  const double n_train = double(c.samples - c.validation);
  const double rows = std::ceil(n_train / ranks) + std::ceil(double(c.validation) / ranks);
  double data = rows * double(c.features + 1) * sizeof(T) + std::ceil(n_train / ranks) * 8.0;
  if (c.data_kind == "hdf5") data += std::ceil(n_train / ranks) * double(c.features + 1) * 8.0;
  const double params = c.model == "linear" ? double(c.features + 1) : c.parameters;
  const int moments = c.optimizer.kind == kpmap::train::OptimizerConfig::Kind::adam       ? 2
                      : c.optimizer.kind == kpmap::train::OptimizerConfig::Kind::momentum ? 1
                                                                                          : 0;
  const double model = params * (2 + moments) * sizeof(T);
  double work = 0;
  if (c.model != "linear") {
    const auto batch_rows =
        std::size_t(c.batch == 0 ? std::ceil(n_train / ranks) : std::min(double(c.batch), n_train));
    const auto val_rows = std::size_t(std::ceil(double(c.validation) / ranks));
    work = double(work_capacity(c, batch_rows, val_rows)) * (c.work_per_sample * sizeof(T) + 8.0);
  }
  breakdown = "data " + kpmap::format_bytes(data) + ", parameters with gradients and optimizer " +
              "state " + kpmap::format_bytes(model) + ", work arrays " + kpmap::format_bytes(work);
  return data + model + work;
}

// What a run reports besides checkpoints: history.csv, the progress line,
// result.json. The loop itself is the library's Trainer.
template <class Model>
int run_training(const Config& c, const Deck& deck, const kpmap::apps::RunOptions& opts,
                 const kpmap::Runtime& rt, Model& model,
                 const kpmap::train::Shard<typename Model::value_type, Mem>& train_set,
                 const kpmap::train::Shard<typename Model::value_type, Mem>& val_set,
                 kpmap::PhaseTimes& times, double t_start, const fs::path& out) {
  const bool root = rt.rank() == 0;
  const std::size_t n_train = c.samples - c.validation;
  kpmap::train::TrainerConfig tc;
  tc.epochs = c.epochs;
  tc.batch = c.batch;
  tc.seed = c.train_seed;
  tc.accumulate = c.accumulate;
  tc.max_steps = c.max_steps;
  tc.log_every = c.log_every;
  tc.checkpoint_every = c.checkpoint_every;
  tc.keep = c.keep;
  tc.output_dir = out.string();
  tc.meta.app = "kpmap-train";
  tc.meta.deck = deck.to_toml();
  tc.meta.decomposition = std::to_string(rt.size()) + " ranks; parameters replicated";
  kpmap::train::Trainer<Model> trainer(model, c.optimizer, tc, "devices");
  if (!opts.restart.empty()) {
    trainer.restart(opts.restart);
    if (root) {
      const auto& at = trainer.position();
      std::printf("kpmap-train: restarting from %s after epoch %lld", opts.restart.c_str(),
                  at.epoch);
      if (at.step > 0) std::printf(" and %lld steps of the next", at.step);
      std::printf("\n");
    }
  }
  const long long first_epoch = trainer.position().epoch;
  if (root) {
    std::printf(
        "kpmap-train: %s model (%zu parameters, %s), %zu training + %zu validation samples "
        "on %d ranks, batch %s, optimizer %s, lr %g\n",
        c.model.c_str(), model.parameter_count(), c.precision.c_str(), n_train, c.validation,
        rt.size(), c.batch == 0 ? "full" : std::to_string(c.batch).c_str(),
        deck.string("optimizer.kind").c_str(), c.optimizer.learning_rate);
    std::printf("kpmap-train: rank 0 runs on %s\n", kpmap::apps::execution_text(rt).c_str());
  }

  // history.csv continues a restarted run's file.
  const fs::path history = out / "history.csv";
  kpmap::CsvTable hist(
      history, "epoch,train_loss,val_loss,accuracy,samples_per_second,wall_s,train_accuracy",
      opts.restart.empty() ? -1 : first_epoch, root);
  kpmap::Progress progress(first_epoch, c.epochs);
  const bool classes = c.loss == "cross_entropy";
  // The accuracy reported: the held-out set's where there is one.
  auto accuracy_of = [&](const kpmap::train::EpochReport& r) {
    return c.validation > 0 && classes ? r.held_out.accuracy : r.train_accuracy;
  };
  auto on_epoch = [&](const kpmap::train::EpochReport& r) {
    if (!root) return;
    using kpmap::csv_number;
    // No validation set: NaN, written as null in JSON and empty in CSV.
    const double nan = std::nan("");
    const double rate = double(r.samples) / r.seconds;
    hist.row(std::to_string(r.epoch) + ',' + csv_number(r.train_loss) + ',' +
             csv_number(c.validation > 0 ? r.held_out.loss : nan) + ',' +
             csv_number(accuracy_of(r)) + ',' + csv_number(rate) + ',' +
             csv_number(progress.elapsed()) + ',' + csv_number(classes ? r.train_accuracy : nan));
    char val[48] = "";
    if (c.validation > 0) std::snprintf(val, sizeof val, "  val_loss %.6e", r.held_out.loss);
    std::printf("epoch %lld/%lld  train_loss %.6e%s%s  %.4g samples/s  elapsed %s  ETA %s\n",
                r.epoch, c.epochs, r.train_loss, val,
                classes ? ("  accuracy " + std::to_string(accuracy_of(r))).c_str() : "", rate,
                kpmap::Progress::format(progress.elapsed()).c_str(),
                kpmap::Progress::format(progress.eta(r.epoch)).c_str());
    std::fflush(stdout);
  };
  const kpmap::train::FitResult res = trainer.fit(train_set, val_set, on_epoch);
  if (root && res.stopped_by != 0) {
    if (res.mid_epoch) {
      std::printf("kpmap-train: %s received: stopped after step %lld of %zu in epoch %lld\n",
                  kpmap::StopSignals::name(res.stopped_by).c_str(), res.step, res.steps_per_epoch,
                  res.epoch + 1);
    } else {
      std::printf("kpmap-train: %s received: stopped after epoch %lld\n",
                  kpmap::StopSignals::name(res.stopped_by).c_str(), res.epoch);
    }
  } else if (root && res.max_steps_reached && res.mid_epoch) {
    std::printf(
        "kpmap-train: train.max_steps = %lld reached after step %lld of %zu in epoch %lld\n",
        c.max_steps, res.step, res.steps_per_epoch, res.epoch + 1);
  }
  times += trainer.times();

  // ---- result.json --------------------------------------------------------------
  // NaN (null in result.json) until an epoch completes.
  const double nan = std::nan("");
  const auto& r = res.last;
  const auto report = times.reduce(MPI_Wtime() - t_start, rt.comm());
  nlohmann::ordered_json j;
  j["app"] = "kpmap-train";
  j["kpmap_version"] = KPMAP_VERSION_STRING;
  j["deck"] = deck.source();
  j["ranks"] = rt.size();
  j["model"] = c.model;
  j["precision"] = c.precision;
  j["parameters"] = model.parameter_count();
  j["train_samples"] = n_train;
  j["validation_samples"] = c.validation;
  j["epochs"] = c.epochs;
  j["train_loss"] = res.has_report ? r.train_loss : nan;
  j["val_loss"] = res.has_report && c.validation > 0 ? r.held_out.loss : nan;
  j["samples_per_second"] = res.samples_per_second;
  if (classes) {
    j["accuracy"] = res.has_report ? accuracy_of(r) : nan;
    j["train_accuracy"] = res.has_report ? r.train_accuracy : nan;
    if (c.validation > 0) {
      // The held-out set's metrics: the test files', or the validation split's.
      j["test_accuracy"] = res.has_report ? r.held_out.accuracy : nan;
      j["test_loss"] = res.has_report ? r.held_out.loss : nan;
      j["test_set"] = c.test_set ? c.test_path : "validation split";
      j["confusion"] =
          std::vector<long long>(r.held_out.confusion.begin(), r.held_out.confusion.end());
    }
  }
  if constexpr (std::is_same_v<Model, kpmap::train::LinearModel<typename Model::value_type, Mem>>) {
    const auto w = to_vector(model.params().w);
    const auto b = to_vector(model.params().b);
    j["params"] = {{"w", w}, {"b", b[0]}};
    if (c.data_kind == "synthetic") {
      const kpmap::train::SyntheticRegression g{c.samples, c.features, c.data_seed, c.noise};
      std::vector<double> tw(c.features);
      for (std::size_t i = 0; i < c.features; ++i) tw[i] = g.true_w(i);
      j["true_params"] = {{"w", tw}, {"b", g.true_b()}};
      if (root) {
        std::printf("learned w = %s  b = %.6g\n   true w = %s  b = %.6g\n", join(w).c_str(), b[0],
                    join(tw).c_str(), g.true_b());
      }
    }
  }
  const int code =
      kpmap::write_result(j, out / "result.json", res.stopped_by, res.checkpoint, report, root);
  if (root) {
    std::printf("kpmap-train: done in %s; results in %s\nkpmap-train: %s",
                kpmap::Progress::format(report.wall).c_str(), (out / "result.json").c_str(),
                kpmap::phase_table(report).c_str());
    std::printf("kpmap-train: plots (loss.png): %s\n", kpmap::plot_command(out).c_str());
    if (res.stopped_by) {
      std::printf("kpmap-train: continue with --restart %s\n", res.checkpoint.c_str());
    }
  }
  return code;
}

// T: data, parameters and optimizer; C: what the layers compute in.
template <class T, class C = T>
int train(const Config& c, const Deck& deck, const kpmap::apps::RunOptions& opts,
          const kpmap::Runtime& rt) {
  const MPI_Comm comm = rt.comm();
  kpmap::PhaseTimes times;
  const double t_start = MPI_Wtime();
  const fs::path out = kpmap::prepare_output_dir(c.output, comm);
  const kpmap::OutputLock lock(out, comm);  // one run per folder
  kpmap::check_outputs(out, {"result.json", "history.csv", "loss.png", "checkpoint_*"},
                       {opts.deck, opts.restart}, comm);
  kpmap::apps::start_trace(opts, comm);
  const std::size_t n_train = c.samples - c.validation;
  {
    std::string breakdown;
    const double bytes = memory_estimate<T>(c, rt.size(), breakdown);
    kpmap::require_memory(bytes,
                          deck.source() + " (" + std::to_string(c.samples) + " samples of " +
                              std::to_string(c.features) + " features)",
                          breakdown, comm);
  }

  // ---- data -----------------------------------------------------------------
  kpmap::train::Shard<T, Mem> train_set, val_set;
  {
    auto t = times.scope(Phase::io);
    const kpmap::AxisRef axis("devices");
    if (c.data_kind == "idx") {
      train_set =
          kpmap::train::read_idx_shard<T, Mem>(c.path, c.train_images, c.labels, c.train_labels, 0,
                                               n_train, c.input.channels, c.scaling, axis);
      val_set = c.test_set ? kpmap::train::read_idx_shard<T, Mem>(
                                 c.test_path, c.test_images, c.test_labels, c.test_labels_info, 0,
                                 c.validation, c.input.channels, c.scaling, axis)
                           : kpmap::train::read_idx_shard<T, Mem>(
                                 c.path, c.train_images, c.labels, c.train_labels, n_train,
                                 c.validation, c.input.channels, c.scaling, axis);
    } else if (c.data_kind == "images") {
      const kpmap::train::SyntheticImages g(c.samples, c.input.height, c.input.width,
                                            c.input.channels, c.classes, c.data_seed, c.noise);
      train_set = kpmap::train::generate_shard<T, Mem>(g, 0, n_train, axis);
      val_set = kpmap::train::generate_shard<T, Mem>(g, n_train, c.validation, axis);
    } else if (c.data_kind == "hdf5") {
      const kpmap::train::PixelScaling* scaling = c.hdf5_bytes ? &c.scaling : nullptr;
      train_set = kpmap::train::read_shard<T, Mem>(c.path, c.x_name, c.y_name, 0, n_train, axis,
                                                   scaling, c.input.channels);
      val_set = kpmap::train::read_shard<T, Mem>(c.path, c.x_name, c.y_name, n_train, c.validation,
                                                 axis, scaling, c.input.channels);
    } else if (c.loss == "mse") {
      const kpmap::train::SyntheticRegression g{c.samples, c.features, c.data_seed, c.noise};
      train_set = kpmap::train::generate_shard<T, Mem>(g, 0, n_train, axis);
      val_set = kpmap::train::generate_shard<T, Mem>(g, n_train, c.validation, axis);
    } else {
      const kpmap::train::SyntheticClassification g{c.samples, c.features, c.classes, c.data_seed};
      train_set = kpmap::train::generate_shard<T, Mem>(g, 0, n_train, axis);
      val_set = kpmap::train::generate_shard<T, Mem>(g, n_train, c.validation, axis);
    }
  }
  if (c.loss == "cross_entropy") {
    // Labels must be class indices: checked on every rank's rows, agreed by all.
    int badrow = -1;
    for (const auto* set : {&train_set, &val_set}) {
      auto y = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), set->y);
      for (std::size_t i = 0; i < y.size() && badrow < 0; ++i) {
        const double v = double(y(i));
        if (!(v >= 0 && v < double(c.classes) && v == std::floor(v))) badrow = int(i);
      }
    }
    if (kpmap::pmax(badrow >= 0 ? 1 : 0, "devices") != 0) {
      throw kpmap::InputError(deck.source() +
                                  ": key 'data.classes': a target is not a class "
                                  "index in [0, " +
                                  std::to_string(c.classes) + ")",
                              kpmap::ErrorScope::all_ranks);
    }
  }

  // ---- model, then the training loop ----------------------------------------------
  // A rank may hold all of a batch.
  const std::size_t batch_rows =
      c.batch == 0 ? std::max<std::size_t>(train_set.rows(), 1) : std::min(c.batch, n_train);
  const std::size_t capacity = work_capacity(c, batch_rows, val_set.rows());
  if (c.model == "linear") {
    kpmap::train::LinearModel<T, Mem> model(c.features, capacity);
    return run_training(c, deck, opts, rt, model, train_set, val_set, times, t_start, out);
  }
  kpmap::train::Sequential<T, Mem, C> model(
      c.input, kpmap::train::build_layers<C, Mem>(c.input, c.layers),
      c.loss == "mse" ? kpmap::train::Loss::mse : kpmap::train::Loss::cross_entropy, capacity);
  model.set_loss_scale(c.loss_scale);
  model.initialize(c.train_seed);
  return run_training(c, deck, opts, rt, model, train_set, val_set, times, t_start, out);
}

}  // namespace

int main(int argc, char** argv) {
  return kpmap::run(argc, argv, [&](kpmap::Runtime& rt) {
    CLI::App app{"kpmap-train: data-parallel training of linear models and MLPs on every rank"};
    app.footer(
        "Examples:\n"
        "  mpiexec -n 4 kpmap-train inputs/train_linear.toml\n"
        "  mpiexec -n 2 kpmap-train inputs/train_mlp_classification.toml --set train.epochs=5\n"
        "  mpiexec -n 3 kpmap-train inputs/train_linear.toml --restart "
        "kpmap-train-out/checkpoint_000050.h5 --set train.epochs=100\n"
        "Exit codes: 0 success, 1 an unexpected error, 2 bad input, 3 training diverged (NaN or "
        "Inf loss), 4 stopped by SIGTERM, SIGINT or SIGUSR1 after writing a checkpoint (see "
        "docs/reliability.md).");
    app.set_version_flag("--version", std::string("kpmap-train ") + KPMAP_VERSION_STRING);
    kpmap::apps::RunOptions opts;
    kpmap::apps::add_run_options(app, opts);
    const auto schema = kpmap::apps::train::schema();
    if (auto code = kpmap::apps::parse_run_command_line(app, opts, schema, argc, argv, rt)) {
      return *code;
    }
    const Deck deck = kpmap::apps::load_deck(schema, opts, rt.comm());
    const Config c = configure(deck, rt.comm());
    if (c.precision == "mixed") {
      // configure() refused "mixed" where half_t is float.
      if constexpr (kpmap::detail::has_half_type) {
        return train<float, kpmap::detail::half>(c, deck, opts, rt);
      }
    }
    return c.precision == "float" ? train<float>(c, deck, opts, rt)
                                  : train<double>(c, deck, opts, rt);
  });
}
