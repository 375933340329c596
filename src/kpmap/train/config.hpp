#pragma once
/// \file
/// \brief kpmap-train's deck: its schema, the run it describes (checked across
/// keys, the data files' headers read), and what that run allocates, as
/// sim/config.hpp is for kpmap-heat.

#include <kpmap/base/error.hpp>
#include <kpmap/collectives/collectives.hpp>
#include <kpmap/deck/deck.hpp>
#include <kpmap/train/data.hpp>
#include <kpmap/train/layers/registry.hpp>
#include <kpmap/train/optimizers/optimizer.hpp>
#include <kpmap/train/trainer.hpp>

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iomanip>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace kpmap::train {

/// \brief The deck schema of kpmap-train: the one place its keys are declared
/// (it validates decks, prints --help-deck and generates docs/decks.md's table).
deck::Schema train_schema();

/// \brief Everything a kpmap-train deck says, checked across keys.
struct TrainConfig {
  std::string model, activation, loss, precision, data_kind, path, x_name, y_name;
  double loss_scale = 1;        // mixed precision
  Loss::Keys loss_keys;         // the loss's own keys that the deck sets
  bool classification = false;  // the loss's targets are class indices
  std::vector<std::size_t> hidden;
  std::vector<LayerSpec> layers;               // mlp and sequential
  Shape input;                                 // one sample
  std::string labels, test_path, test_labels;  // idx
  IdxInfo train_images, train_labels, test_images, test_labels_info;
  PixelScaling scaling;
  bool test_set = false;       // the validation set is a separate test set
  bool hdf5_bytes = false;     // hdf5: the features are pixel bytes, scaled like IDX images
  double parameters = 0;       // mlp, sequential: trainable numbers
  double work_per_sample = 0;  // mlp, sequential: work array elements per sample of capacity
  bool large_work = false;     // a layer declares large work arrays: chunks of the micro-batch
  std::size_t samples = 0, features = 0, classes = 0, validation = 0;
  double noise = 0, fraction = 0;
  std::uint64_t data_seed = 0, train_seed = 0;
  OptimizerConfig optimizer;
  long long epochs = 0, checkpoint_every = 0, max_steps = 0, log_every = 0;
  std::size_t accumulate = 1;  // micro-batches per step
  int keep = 3;
  bool checkpoints = true;              ///< output.checkpoints
  std::vector<double> expect_val_loss;  ///< [low, high] the final validation loss must lie in
  std::size_t batch = 0;
  std::string output;
  std::string source;  ///< the deck, for messages
};

/// \brief The run deck `d` describes. Collective over `comm` (the data files'
/// headers are read on rank 0 and shared). \throws InputError (all ranks)
/// naming the file, line and key of what does not fit.
TrainConfig from_deck(const deck::Deck& d, MPI_Comm comm);

/// \brief What the Trainer of run `c` needs: its cadences, the output folder
/// `out`, and the checkpoints' metadata (the resolved deck `deck_toml`, the
/// rank count).
inline TrainerConfig trainer_config(const TrainConfig& c, const std::filesystem::path& out,
                                    const std::string& deck_toml, int ranks) {
  TrainerConfig tc;
  tc.epochs = c.epochs;
  tc.batch = c.batch;
  tc.seed = c.train_seed;
  tc.accumulate = c.accumulate;
  tc.max_steps = c.max_steps;
  tc.log_every = c.log_every;
  tc.checkpoint_every = c.checkpoint_every;
  tc.checkpoints = c.checkpoints;
  tc.keep = c.keep;
  tc.output_dir = out.string();
  tc.meta.app = "kpmap-train";
  tc.meta.deck = deck_toml;
  tc.meta.decomposition = std::to_string(ranks) + " ranks; parameters replicated";
  return tc;
}

/// \brief Samples the work arrays hold: a micro-batch's share of the batch
/// rows a rank may get (train.accumulate_steps splits it); evaluation goes in
/// chunks of this, so dense models take chunks of up to 4096 validation rows,
/// while convolutions keep theirs at the batch (their patch matrices are large).
std::size_t work_capacity(const TrainConfig& c, std::size_t batch_rows, std::size_t val_rows);

/// \brief Bytes one of `ranks` ranks allocates for values of `value_bytes`
/// bytes: its rows of the data (and, from HDF5, the doubles they are read
/// into), the batch order, the parameters with their gradient and optimizer
/// moments, and the work arrays. `breakdown` says of what.
double memory_estimate(const TrainConfig& c, int ranks, std::size_t value_bytes,
                       std::string& breakdown);

/// \brief Refuses a restart from checkpoint `file` written with other
/// optimizer settings than deck `d` gives (any optimizer.* key: the kind, the
/// learning rate and its schedule, the moments' decay): the optimizer's state
/// (velocity, moments, step count) continues only under the settings that
/// made it. Collective over `comm`. \throws InputError (all ranks) naming
/// the file, the key with its line, and both values.
void check_restart(const deck::Deck& d, const std::string& file, MPI_Comm comm);

/// \brief Throws InputError (all ranks) naming the file, key and sample of the
/// first target in `set` that is no class index in [0, c.classes); the set's
/// row 0 is the file's item `offset` (`held_out`: the validation set, read
/// from the test files where the deck gives them). Collective over `axis`.
template <class T, class M>
void check_labels(const TrainConfig& c, const Shard<T, M>& set, std::size_t offset, bool held_out,
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
  if (c.data_kind == "idx") {
    const bool test = held_out && c.test_set;
    where << "data file " << (test ? c.test_labels : c.labels) << " ("
          << (test ? "data.test_labels" : "data.labels") << ")";
  } else if (c.data_kind == "hdf5") {
    where << "data file " << c.path << ", dataset '" << c.y_name << "' (data.y)";
  } else {
    where << c.source << ": the " << c.data_kind << " data";
  }
  std::ostringstream value;
  value << std::setprecision(17) << label;
  throw InputError(where.str() + ": sample " + std::to_string(offset + first) + " has label " +
                       value.str() + ", which is no class index in [0, " +
                       std::to_string(c.classes) + ") (" + c.source + ": key 'data.classes')",
                   ErrorScope::all_ranks);
}

/// \brief The training and held-out shards of run `c` (its data.kind: a
/// generator, images, IDX files or HDF5) over `axis`'s ranks, in memory space
/// M, values of type T. Collective over the axis. \throws InputError (all
/// ranks) naming the file of data that cannot be read, or, for a classifier,
/// the deck and key when a target is no class index.
template <class T, class M>
std::pair<Shard<T, M>, Shard<T, M>> load_data(const TrainConfig& c, const AxisRef& axis) {
  const std::size_t n_train = c.samples - c.validation;
  std::pair<Shard<T, M>, Shard<T, M>> sets;
  auto& [train_set, val_set] = sets;
  if (c.data_kind == "idx") {
    train_set = read_idx_shard<T, M>(c.train_images, c.train_labels, 0, n_train, c.input.channels,
                                     c.scaling, axis);
    val_set = c.test_set ? read_idx_shard<T, M>(c.test_images, c.test_labels_info, 0, c.validation,
                                                c.input.channels, c.scaling, axis)
                         : read_idx_shard<T, M>(c.train_images, c.train_labels, n_train,
                                                c.validation, c.input.channels, c.scaling, axis);
  } else if (c.data_kind == "images") {
    const SyntheticImages g(c.samples, c.input.height, c.input.width, c.input.channels, c.classes,
                            c.data_seed, c.noise);
    train_set = generate_shard<T, M>(g, 0, n_train, axis);
    val_set = generate_shard<T, M>(g, n_train, c.validation, axis);
  } else if (c.data_kind == "hdf5") {
    const PixelScaling* scaling = c.hdf5_bytes ? &c.scaling : nullptr;
    train_set =
        read_shard<T, M>(c.path, c.x_name, c.y_name, 0, n_train, axis, scaling, c.input.channels);
    val_set = read_shard<T, M>(c.path, c.x_name, c.y_name, n_train, c.validation, axis, scaling,
                               c.input.channels);
  } else if (!c.classification) {
    const SyntheticRegression g{c.samples, c.features, c.data_seed, c.noise};
    train_set = generate_shard<T, M>(g, 0, n_train, axis);
    val_set = generate_shard<T, M>(g, n_train, c.validation, axis);
  } else {
    const SyntheticClassification g{c.samples, c.features, c.classes, c.data_seed};
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
