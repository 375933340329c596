// SPDX-License-Identifier: BSD-3-Clause
// Must not compile: pmean of a tuple whose second leaf holds integers would
// return that leaf's mean truncated (one rank of three holding 1 gives 0).
// kpmap refuses it at compile time, naming the leaf's place in the tuple and
// its type, as it refuses pmean of a lone integer View. Built only by the
// ctest test compile_fail.pmean_integer_leaf, which expects the build to fail.

#include <kpmap/collectives/collectives.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <tuple>

void reduce(const kpmap::Axis& axis) {
  Kokkos::View<double*> x("x", 4);
  Kokkos::View<std::int32_t*> counts("counts", 4);
  auto mean = kpmap::pmean(std::make_tuple(x, counts), axis);
  (void)mean;
}
