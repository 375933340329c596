// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief The sections of kpmap-train's deck, each one's keys declared beside
/// its reader (one file a section in this folder), and the checks across
/// sections: what train/config.cpp's train_schema() and from_deck() are
/// made of. Internal to train/config*.

#include <kpmap/deck/deck.hpp>
#include <kpmap/train/config.hpp>

#include <mpi.h>

#include <string>

namespace kpmap::train::detail {

// [model]: the kind, the layers (of a sequential model; an mlp's from
// model.hidden), the loss and its own keys, the precision.
void declare_model_keys(deck::Schema& s);
ModelConfig read_model(const deck::Deck& d);
/// model.layers (sequential) or model.hidden (mlp) as layer specs: their
/// types and keys; needs the data's shape (build_model_layers builds the
/// stack and checks its shapes).
void read_layers(const deck::Deck& d, TrainConfig& c);

// [data]: the set and its split; the files' headers read on rank 0
// (collective over `comm`). Needs the loss (labels or values).
void declare_data_keys(deck::Schema& s);
void read_data(const deck::Deck& d, TrainConfig& c, MPI_Comm comm);

// [optimizer]: the kind and its own keys, the learning rate and its schedule.
void declare_optimizer_keys(deck::Schema& s);
OptimizerConfig read_optimizer(const deck::Deck& d);

// [train]: the loop's length, batch, seed, sharding and mesh.
void declare_loop_keys(deck::Schema& s);
LoopConfig read_loop(const deck::Deck& d);

// [output]: the keys every run shares (run/output_keys.hpp) and kpmap-train's own.
void declare_output_section(deck::Schema& s);
void read_output_section(const deck::Deck& d, TrainConfig& c);

/// What one section's values mean for another's, each a named check of
/// train/config/checks.cpp; resolves what depends on several (the mesh's
/// data axis, the validation rows, the scaled learning rate, the decay).
void check_across(const deck::Deck& d, TrainConfig& c, MPI_Comm comm);

/// An error of the deck as a whole, not of one key: "FILE: what", on every
/// rank alike. (An error of one key is Deck::bad's, citing its line.)
[[noreturn]] void deck_error(const deck::Deck& d, const std::string& what);

}  // namespace kpmap::train::detail
