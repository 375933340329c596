// SPDX-License-Identifier: BSD-3-Clause
// Sequential<float> (model.precision = "float"), compiled once for every program
// (train/sequential.hpp declares it extern).

#include <kpmap/train/sequential_def.hpp>

namespace kpmap::train {

template class Sequential<float, Kokkos::DefaultExecutionSpace::memory_space, float>;

}  // namespace kpmap::train
