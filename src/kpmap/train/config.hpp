// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief kpmap-train's deck: its schema, the run it describes (checked across
/// keys, the data files' headers read), and what that run allocates, as
/// sim/config.hpp is for kpmap-heat.

#include <kpmap/base/error.hpp>
#include <kpmap/deck/deck.hpp>
#include <kpmap/run/output_keys.hpp>
#include <kpmap/train/data.hpp>
#include <kpmap/train/layers/registry.hpp>
#include <kpmap/train/loop.hpp>
#include <kpmap/train/losses/loss.hpp>
#include <kpmap/train/optimizers/optimizer.hpp>

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kpmap::train {

/// \brief The deck schema of kpmap-train: the one place its keys are declared
/// (it validates decks, prints --help-deck and generates docs/decks.md's table).
deck::Schema train_schema();

/// \brief A deck's [model] section: what is trained and how its output is
/// scored, with what its layer stack says of itself once built.
struct ModelConfig {
  std::string kind;                 ///< model.kind: linear, mlp or sequential
  std::string activation;           ///< of an mlp's hidden layers
  std::vector<std::size_t> hidden;  ///< an mlp's hidden widths
  /// An mlp's hidden layers paired column then row over the mesh axis
  /// "model" (model.tensor_parallel = "auto"), or whole.
  bool tensor_parallel = false;
  std::vector<LayerSpec> layers;  ///< mlp and sequential: the stack, first to last
  std::string loss;
  deck::Values loss_keys;  ///< the loss's own keys that the deck sets
  std::string precision;
  double loss_scale = 1;  ///< mixed precision
  // What the stack needs (mlp, sequential), found when it was checked:
  double parameters = 0;       ///< trainable numbers
  double work_per_sample = 0;  ///< work array elements per sample of capacity
  bool large_work = false;     ///< a layer declares large work arrays: chunks of the micro-batch
};

/// \brief Everything a kpmap-train deck says, section by section, checked
/// across sections.
struct TrainConfig {
  DataConfig data;            ///< [data], with the files' headers read
  ModelConfig model;          ///< [model]
  OptimizerConfig optimizer;  ///< [optimizer]
  LoopConfig train;           ///< [train]
  OutputConfig output;        ///< [output]: the keys every run shares
  bool checkpoints = true;    ///< [output]: output.checkpoints
  std::vector<double>
      expect_val_loss;  ///< [output]: [low, high] the final validation loss must lie in
  std::string source;   ///< the deck, for messages
};

/// \brief The run deck `d` describes. Collective over `comm` (the data files'
/// headers are read on rank 0 and shared). \throws InputError (all ranks)
/// naming the file, line and key of what does not fit.
TrainConfig from_deck(const deck::Deck& d, MPI_Comm comm);

/// \brief The layer stack of run `c`'s model (none for a linear model),
/// built once for a model of parameters T computing in C in memory space M
/// (double and float, and float with half_t where half_t is 16 bits), without
/// its arrays; checked to chain from the data's shape to what the loss reads
/// and to data.classes scores. Records in `c.model` what the stack needs
/// (parameters, work arrays), which memory_estimate() and work_capacity()
/// read. \throws InputError (all ranks) naming the deck's line of the layer
/// that does not fit, with both shapes.
template <class T, class C = T, class M = Kokkos::DefaultExecutionSpace::memory_space>
std::vector<std::unique_ptr<Layer<C, M>>> build_model_layers(const deck::Deck& d, TrainConfig& c);

/// \brief What the Trainer of run `c` needs: its cadences, the output folder
/// `out`, and the checkpoints' metadata (the resolved deck `deck_toml`, the
/// rank count).
struct TrainerConfig;  // train/trainer.hpp
TrainerConfig trainer_config(const TrainConfig& c, const std::string& out,
                             const std::string& deck_toml, int ranks);

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

/// \brief Refuses a restart from checkpoint `file` written for another model
/// (model.kind, activation, hidden or any layer's type or key), or with other
/// optimizer settings than deck `d` gives (any optimizer.* key: the kind, the
/// learning rate and its schedule, the moments' decay): the optimizer's state
/// (velocity, moments, step count) continues only under the settings that
/// made it. Collective over `comm`. \throws InputError (all ranks) naming
/// the file, the key with its line, and both values.
void check_restart(const deck::Deck& d, const std::string& file, MPI_Comm comm);

}  // namespace kpmap::train
