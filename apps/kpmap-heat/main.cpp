// SPDX-License-Identifier: BSD-3-Clause
// kpmap-heat: heat conduction on a Cartesian block decomposition, from kpmap-heat TOML
// decks or TeaLeaf's own *tea decks (docs/heat.md).
// The program is the library's kpmap::apps::heat_main (src/kpmap/apps/heat.cpp).

#include <kpmap/apps/heat.hpp>

int main(int argc, char** argv) { return kpmap::apps::heat_main(argc, argv); }
