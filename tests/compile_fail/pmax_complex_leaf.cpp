// SPDX-License-Identifier: BSD-3-Clause
// Must not compile: complex numbers have no order, and MPI_MAX of a complex
// datatype fails only at run time (MPI_ERR_OP, at 2 or more ranks; one rank
// returned its own value). kpmap refuses pmax and pmin of a complex leaf at
// compile time, naming its place in the tree. Built only by the ctest test
// compile_fail.pmax_complex_leaf, which expects the build to fail.

#include <kpmap/collectives/collectives.hpp>

#include <Kokkos_Core.hpp>

#include <tuple>

void reduce(const kpmap::Axis& axis) {
  Kokkos::View<double*> x("x", 4);
  Kokkos::View<Kokkos::complex<double>*> z("z", 4);
  kpmap::pmax_inplace(std::tie(x, z), axis);
}
