// SPDX-License-Identifier: BSD-3-Clause
// Must not compile: a View of bools cannot hold a count, and MPI has no sum
// of booleans (MPI_ERR_OP at 2 or more ranks; one rank returned its own
// values). kpmap refuses psum of bools at compile time and says what to do
// instead. Built only by the ctest test compile_fail.psum_bool_view, which
// expects the build to fail.

#include <kpmap/collectives/collectives.hpp>

#include <Kokkos_Core.hpp>

void reduce(const kpmap::Axis& axis) {
  Kokkos::View<bool*> flags("flags", 4);
  kpmap::psum_inplace(flags, axis);
}
