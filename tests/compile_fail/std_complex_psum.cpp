// SPDX-License-Identifier: BSD-3-Clause
// Must not compile: a psum over a View of std::complex launches pack and
// scale kernels that a CUDA or HIP build cannot run (std::complex's operators
// are host-only there). kpmap refuses it on every backend, Serial included,
// with a message that names Kokkos::complex. Built only by the ctest test
// compile_fail.std_complex_psum, which expects the build to fail.

#include <kpmap/collectives/collectives.hpp>

#include <Kokkos_Core.hpp>

#include <complex>

void reduce(const kpmap::Axis& axis) {
  Kokkos::View<std::complex<double>*> z("z", 4);
  kpmap::psum_inplace(z, axis);
}
