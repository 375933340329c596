// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief kpmap-heat: heat conduction from a kpmap-heat or TeaLeaf deck, as a function a program's
/// main() calls.
///
/// `kpmap-heat` is this function and nothing else; a program that
/// registers pieces of its own first (a solver, a layer) and then calls it is
/// a complete kpmap-heat for decks that name them (examples/11_custom_solver.cpp).
/// Link kpmap::apps.

namespace kpmap::apps {

/// \brief Runs kpmap-heat with the command line `argv` (the deck, --set,
/// --output, --restart, --trace, --help, --help-deck): starts and stops MPI
/// and Kokkos (kpmap::run) and returns the exit code for main() to return
/// (docs/reliability.md lists them).
int heat_main(int argc, char** argv);

}  // namespace kpmap::apps
