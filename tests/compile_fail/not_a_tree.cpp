// SPDX-License-Identifier: BSD-3-Clause
// Must not compile: a psum of a struct that shows no Views (no
// for_each_view member). kpmap refuses it with one message saying what a
// tree is, where the compiler would print a page about a missing member.
// Built only by the ctest test compile_fail.not_a_tree.

#include <kpmap/collectives/collectives.hpp>

#include <Kokkos_Core.hpp>

struct Params {
  Kokkos::View<double*> w{"w", 3};
};

void reduce(const kpmap::Axis& axis) {
  Params p;
  kpmap::psum_inplace(p, axis);
}
