// SPDX-License-Identifier: BSD-3-Clause
// Sequential<double> (model.precision = "double"), compiled once for every program
// (train/sequential.hpp declares it extern).

#include <kpmap/train/sequential_def.hpp>

namespace kpmap::train {

template class Sequential<double, Kokkos::DefaultExecutionSpace::memory_space, double>;

}  // namespace kpmap::train
