// SPDX-License-Identifier: BSD-3-Clause
// Sequential<float, ..., half_t> (model.precision = "mixed"), compiled once
// for every program where half_t is a 16-bit type of its own (GPU builds).

#include <kpmap/train/sequential_def.hpp>

namespace kpmap::train {

#if defined(KOKKOS_HALF_T_IS_FLOAT) && !KOKKOS_HALF_T_IS_FLOAT
template class Sequential<float, Kokkos::DefaultExecutionSpace::memory_space, kpmap::detail::half>;
#endif

}  // namespace kpmap::train
