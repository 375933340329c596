// SPDX-License-Identifier: BSD-3-Clause
// kpmap-train's [train] section (the loop: its length, batch, seed,
// sharding and mesh) and [output] section: their keys and readers.
#include <kpmap/train/config/sections.hpp>

#include <vector>

namespace kpmap::train::detail {

void declare_loop_keys(deck::Schema& s) {
  using deck::Range;
  s.integer("train.epochs", 50, Range{1, 1e9}, "", "passes over the training set");
  s.integer("train.max_steps", 0, Range{0, 1e15}, "",
            "end the run after this many optimizer steps in all (0: no limit); a run cut "
            "short mid-epoch reports that part of the epoch and checkpoints its position");
  s.integer("train.log_every", -1, Range{-1, 1e15}, "",
            "print the step's loss, accuracy and samples/s every N steps on rank 0, and write "
            "them to steps.csv (0: never; -1: where the run plans fewer than 10 epochs, about "
            "15 lines with the epoch lines)");
  s.integer("train.accumulate_steps", 1, Range{1, 1 << 20}, "",
            "mlp, sequential: each step's batch in this many micro-batches, their gradients "
            "added before one reduction and update (the same step in 1/N of the memory)");
  s.integer("train.batch_size", 0, Range{0, 1e12}, "",
            "global batch (over all ranks); 0: the whole training set");
  s.integer("train.seed", 0, Range{0, 9.2e18}, "", "seed of the initial weights and the shuffle");
  s.string("train.sharding", "replicated", enum_words<Sharding>(),
           "what each rank keeps of the training state: replicated, all of it; optimizer, "
           "its even part of the optimizer's state, which it alone updates before the "
           "parameters are all-gathered (ZeRO stage 1: the same numbers, less memory); "
           "gradients, as optimizer, and only its part of the reduced gradient, each "
           "layer's reduce-scattered as soon as it exists (ZeRO stage 2; mlp, sequential); "
           "parameters, as gradients, and only its part of the parameters, each layer's "
           "all-gathered just before its forward and backward passes (ZeRO stage 3, FSDP; "
           "mlp, sequential)");
  s.integer("train.mesh.data", 0, Range{0, 1 << 20}, "ranks",
            "ranks along the mesh axis \"data\", over which batches are split and gradients "
            "summed (0: all that train.mesh.model leaves)");
  s.integer("train.mesh.model", 1, Range{1, 1 << 20}, "ranks",
            "ranks along the mesh axis \"model\", over which dense layers with parallel = "
            "\"column\" or \"row\" are split (tensor parallelism; every rank of it sees the "
            "same samples)");
}

LoopConfig read_loop(const deck::Deck& d) {
  LoopConfig l;
  l.epochs = d.integer("train.epochs");
  l.max_steps = d.integer("train.max_steps");
  l.log_every = d.integer("train.log_every");
  l.accumulate = std::size_t(d.integer("train.accumulate_steps"));
  l.batch = std::size_t(d.integer("train.batch_size"));
  l.seed = std::uint64_t(d.integer("train.seed"));
  l.mesh_data = int(d.integer("train.mesh.data"));
  l.mesh_model = int(d.integer("train.mesh.model"));
  l.sharding = *enum_of<Sharding>(d.string("train.sharding"));  // one of the schema's choices
  return l;
}

void declare_output_section(deck::Schema& s) {
  using deck::Range;
  declare_output_keys(s, "kpmap-train", "epochs");
  s.boolean("output.checkpoints", true,
            "false: write no checkpoint (a run that only reports; nothing to restart from, and "
            "a stop signal ends it without one)");
  s.real_list("output.expect_val_loss", std::vector<double>{}, Range{0, 1e300}, "",
              "[low, high]: the run's check; it fails with exit code 5 unless the final "
              "validation loss lies in this range (empty: no check)");
}

void read_output_section(const deck::Deck& d, TrainConfig& c) {
  c.output = read_output_keys(d);
  c.checkpoints = d.boolean("output.checkpoints");
  c.expect_val_loss = d.real_list("output.expect_val_loss");
}

}  // namespace kpmap::train::detail
