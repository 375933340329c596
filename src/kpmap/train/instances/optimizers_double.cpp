// SPDX-License-Identifier: BSD-3-Clause
// The optimizers over double parameters, of both models' parameter trees,
// compiled once for every program (train/optimizers/optimizer.hpp declares
// them extern).

#include <kpmap/train/optimizers/optimizer_def.hpp>

namespace kpmap::train {

KPMAP_TRAIN_OPTIMIZER_INSTANCE(, double, Kokkos::DefaultExecutionSpace::memory_space, FlatParams)
KPMAP_TRAIN_OPTIMIZER_INSTANCE(, double, Kokkos::DefaultExecutionSpace::memory_space, LinearParams)

}  // namespace kpmap::train
