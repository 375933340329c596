// SPDX-License-Identifier: BSD-3-Clause
// kpmap-train: data-parallel training from a deck (docs/training.md).
// The program is the library's kpmap::apps::train_main (src/kpmap/apps/train.cpp).

#include <kpmap/apps/train.hpp>

int main(int argc, char** argv) { return kpmap::apps::train_main(argc, argv); }
