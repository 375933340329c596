// kpmap-train: data-parallel regression and classification training.
//
//   mpiexec -n 4 kpmap-train inputs/train_linear.toml
//
// The model is replicated on every rank, each global batch is split over the
// ranks, every rank computes the gradient of its samples, one psum (fused,
// or layer by layer overlapping the backward pass) makes it the batch mean,
// and every rank applies the same update. Results, history and checkpoints
// go to output.dir.
//
// The deck is read in config.cpp, the run at each precision is training.hpp,
// instantiated in train_double.cpp and train_float.cpp.

#include "../common/driver.hpp"
#include "config.hpp"
#include "schema.hpp"

#include <kpmap/detail/kokkos_compat.hpp>
#include <kpmap/runtime.hpp>
#include <kpmap/version.hpp>

#include <CLI/CLI.hpp>

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
    const kpmap::deck::Deck deck = kpmap::apps::load_deck(schema, opts, rt.comm());
    const auto c = kpmap::apps::train::configure(deck, rt.comm());
    if (c.precision == "mixed") {
      // configure() refused "mixed" where half_t is float.
      if constexpr (kpmap::detail::has_half_type) {
        return kpmap::apps::train::run_mixed(c, deck, opts, rt);
      }
    }
    return c.precision == "float" ? kpmap::apps::train::run<float>(c, deck, opts, rt)
                                  : kpmap::apps::train::run<double>(c, deck, opts, rt);
  });
}
