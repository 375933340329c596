// SPDX-License-Identifier: BSD-3-Clause
// kpmap-train: data-parallel regression and classification training.
//
//   mpiexec -n 4 kpmap-train inputs/train_linear.toml
//
// Each global batch is split over the mesh's "data" axis, every rank computes
// the gradient of its samples, one psum (fused, or layer by layer overlapping
// the backward pass) makes it the batch mean, and every rank applies the same
// update: to parameters replicated over "data" or, with train.sharding, sharded
// over it (ZeRO 1-3); train.mesh.model splits layers over "model". Results,
// history and checkpoints go to output.dir. The run itself, for each precision,
// is train/run.hpp's.

#include <kpmap/apps/train.hpp>

#include <kpmap/apps/options.hpp>
#include <kpmap/apps/train/precisions.hpp>

#include <kpmap/deck/deck.hpp>
#include <kpmap/runtime/runtime.hpp>
#include <kpmap/train/config.hpp>

int kpmap::apps::train_main(int argc, char** argv) {
  return kpmap::run(argc, argv, [&](kpmap::Runtime& rt) {
    const auto started = kpmap::apps::start_app(
        {"kpmap-train",
         "kpmap-train: data-parallel training on every rank of linear models, MLPs, CNNs and\n"
         "models of a program's own layers, driven by a TOML deck",
         "  mpiexec -n 4 kpmap-train inputs/train_linear.toml\n"
         "  mpiexec -n 2 kpmap-train inputs/train_mlp_classification.toml --set train.epochs=5\n"
         "  mpiexec -n 3 kpmap-train inputs/train_linear.toml --restart "
         "kpmap-train-out/checkpoint_000050.h5 --set train.epochs=100\n",
         "result.json, history.csv, checkpoint_NNNNNN.h5, deck.toml",
         "training diverged (NaN or Inf loss)",
         "the final validation loss is outside the deck's output.expect_val_loss"},
        kpmap::train::train_schema(), argc, argv, rt);
    if (started.exit) return *started.exit;
    const kpmap::deck::Deck& deck = *started.deck;
    const auto& opts = started.options;
    const kpmap::train::TrainConfig c = kpmap::train::from_deck(deck, rt.comm());
    if (c.model.precision == "mixed") return kpmap::apps::detail::train_mixed(c, deck, opts, rt);
    return c.model.precision == "float" ? kpmap::apps::detail::train_float(c, deck, opts, rt)
                                        : kpmap::apps::detail::train_double(c, deck, opts, rt);
  });
}
