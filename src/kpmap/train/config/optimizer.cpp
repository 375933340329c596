// SPDX-License-Identifier: BSD-3-Clause
// kpmap-train's [optimizer] section: its keys and their reader.
#include <kpmap/train/config/sections.hpp>

#include <vector>

namespace kpmap::train::detail {

void declare_optimizer_keys(deck::Schema& s) {
  using deck::Range;
  deck::Registry<OptimizerInfo>& optimizers = optimizer_registry();
  s.string("optimizer.kind", "gd", optimizers.names(),
           "the update rule (" + optimizers.described() + ")");
  // The library's default rate, so that a deck and a program agree.
  s.real("optimizer.learning_rate", OptimizerConfig{}.learning_rate, Range{0, 1e6}, "",
         "step size (the peak, after warm-up and before decay)");
  s.boolean("optimizer.scale_lr_with_batch", false,
            "use learning_rate x train.batch_size / optimizer.base_batch (the linear scaling "
            "rule: learning_rate is tuned for base_batch)");
  s.integer("optimizer.base_batch", 256, Range{1, 1e12}, "",
            "scale_lr_with_batch: the global batch learning_rate is tuned for");
  s.integer("optimizer.warmup_steps", 0, Range{0, 1e15}, "",
            "the rate climbs linearly from 0 to learning_rate over the first N steps");
  s.string("optimizer.schedule", "constant", {"constant", "cosine", "step"},
           "after the warm-up: constant; cosine decay to 0 over decay_steps; step: times "
           "decay_factor every decay_steps");
  s.integer("optimizer.decay_steps", 0, Range{0, 1e15}, "",
            "cosine: steps of the decay (0: the rest of the run); step: steps between decays");
  s.real("optimizer.decay_factor", 0.1, Range{0, 1}, "", "step: factor of each decay");
  optimizers.merge_keys(s, "optimizer.", "optimizer.kind");
  s.when("optimizer.base_batch", "optimizer.scale_lr_with_batch", {"true"})
      .when("optimizer.decay_steps", "optimizer.schedule", {"cosine", "step"})
      .when("optimizer.decay_factor", "optimizer.schedule", {"step"});
}

OptimizerConfig read_optimizer(const deck::Deck& d) {
  OptimizerConfig o;
  o.kind = d.string("optimizer.kind");
  // Its own keys (a key only other kinds read was refused as the deck was read).
  o.keys = optimizer_registry().own_keys(d, "optimizer.", o.kind);
  o.learning_rate = d.real("optimizer.learning_rate");
  o.warmup_steps = d.integer("optimizer.warmup_steps");
  o.schedule = schedule_kind(d.string("optimizer.schedule"));
  o.decay_steps = d.integer("optimizer.decay_steps");
  o.decay_factor = d.real("optimizer.decay_factor");
  return o;
}

}  // namespace kpmap::train::detail
