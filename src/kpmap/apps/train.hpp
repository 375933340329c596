// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief kpmap-train: data-parallel training from a kpmap-train deck, as a function a program's
/// main() calls.
///
/// `kpmap-train` is this function and nothing else; a program that
/// registers pieces of its own first (a solver, a layer) and then calls it is
/// a complete kpmap-train for decks that name them (examples/10_custom_layer.cpp).
/// Link kpmap::apps.

namespace kpmap::apps {

/// \brief Runs kpmap-train with the command line `argv` (the deck, --set,
/// --output, --restart, --trace, --help, --help-deck): starts and stops MPI
/// and Kokkos (kpmap::run) and returns the exit code for main() to return
/// (docs/reliability.md lists them).
int train_main(int argc, char** argv);

}  // namespace kpmap::apps
