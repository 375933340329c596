// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/train/config.hpp>

#include <kpmap/base/error.hpp>
#include <kpmap/io/checkpoint.hpp>
#include <kpmap/train/config/sections.hpp>
#include <kpmap/train/trainer.hpp>

#include <string>
#include <utility>
#include <vector>

namespace kpmap::train {

deck::Schema train_schema() {
  deck::Schema s("kpmap-train");
  // In the order of docs/decks.md's table and of a resolved deck.toml.
  detail::declare_model_keys(s);
  detail::declare_data_keys(s);
  detail::declare_optimizer_keys(s);
  detail::declare_loop_keys(s);
  detail::declare_output_section(s);
  return s;
}

// Each section of the deck into its part of the run, in the order the later
// ones need: the data's shape needs the loss (labels or values), the layers
// the data's shape; then what the sections mean for each other.
TrainConfig from_deck(const deck::Deck& d, MPI_Comm comm) {
  TrainConfig c;
  c.source = d.source();
  c.model = detail::read_model(d);
  c.data.classification = loss_info(c.model.loss).classification;
  detail::read_data(d, c, comm);
  detail::read_layers(d, c);
  c.optimizer = detail::read_optimizer(d);
  c.train = detail::read_loop(d);
  detail::read_output_section(d, c);
  detail::check_across(d, c, comm);
  return c;
}

TrainerConfig trainer_config(const TrainConfig& c, const std::string& out,
                             const std::string& deck_toml, int ranks) {
  TrainerConfig tc;
  static_cast<LoopConfig&>(tc) = c.train;
  tc.output = c.output;
  tc.output.dir = out;
  tc.checkpoints = c.checkpoints;
  tc.meta.app = "kpmap-train";
  tc.meta.deck = deck_toml;
  // Over the ranks, or on a mesh, over "data" within each block of the
  // layers split over "model".
  const bool mesh = c.train.mesh_model > 1;
  const std::string over = mesh ? " split over data" : " split over the ranks";
  tc.meta.decomposition =
      std::to_string(ranks) + " ranks" +
      (mesh ? ", a mesh of " + std::to_string(c.train.mesh_data) + " (data) x " +
                  std::to_string(c.train.mesh_model) + " (model); layers split over model in blocks"
            : std::string()) +
      "; " +
      (c.train.sharding == Sharding::optimizer ? "parameters replicated, optimizer state" + over
       : c.train.sharding == Sharding::gradients
           ? "parameters replicated, optimizer state and gradient" + over
       : c.train.sharding == Sharding::parameters
           ? "parameters, gradient and optimizer state" + over
           : std::string(mesh ? "the rest replicated" : "parameters replicated"));
  return tc;
}

void check_restart(const deck::Deck& d, const std::string& file, MPI_Comm comm) {
  const checkpoint::Reader r(file, comm, "kpmap-train");
  // What a checkpoint's state continues only under, and why: the model (its
  // parameters are read by shape, and another model of the same shapes, as
  // another activation or a pooling of another kind, would take them without
  // a word and train something else) and the optimizer.
  // A layer's `parallel` is where its parameters live, not what they are:
  // checkpoints hold whole arrays, so a split model continues whole and
  // the other way round (as model.tensor_parallel, which is not compared).
  const std::vector<std::string> layout = {"model.layers.#.parallel"};
  const std::pair<std::vector<std::string>, const char*> same[] = {
      {{"model.kind", "model.activation", "model.hidden", "model.layers"},
       " holds the parameters of another model, which continue only in the model that made "
       "them; restart with the checkpoint's model"},
      {{"optimizer"},
       " was written with other optimizer settings, and its state (velocity, moments, step "
       "count) continues only under them; restart with the checkpoint's settings"},
  };
  for (const auto& [paths, why] : same) {
    const std::string diff = deck::first_difference(d, r.metadata().deck, paths, layout);
    if (!diff.empty()) {
      throw InputError(diff + ": restart file " + file + why + " (its deck.toml)",
                       ErrorScope::all_ranks);
    }
  }
}

}  // namespace kpmap::train
