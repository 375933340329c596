// SPDX-License-Identifier: BSD-3-Clause
// Kokkos Kernels' calls on the default execution space in float, compiled once
// (blas.hpp says which; one file per type keeps each file short).
#include <kpmap/base/detail/blas.hpp>

namespace kpmap::detail::blas {

KPMAP_BLAS_INSTANCES(, float, Kokkos::LayoutLeft)
KPMAP_BLAS_INSTANCES(, float, Kokkos::LayoutRight)
KPMAP_BLAS_VECTOR_INSTANCES(, float)

}  // namespace kpmap::detail::blas
