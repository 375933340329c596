// SPDX-License-Identifier: BSD-3-Clause
// The training data's pipeline, compiled once for every program: shards read
// from files or generated, the checks of their labels, and an epoch's batch
// order (data_files.hpp, synthetic.hpp, data.hpp and batches.hpp declare them
// extern).

#include <kpmap/train/batches.hpp>
#include <kpmap/train/data.hpp>

namespace kpmap::train {

#define KPMAP_TRAIN_DATA_(T, M)            \
  KPMAP_TRAIN_DATA_FILES_INSTANCES(, T, M) \
  KPMAP_TRAIN_SYNTHETIC_INSTANCES(, T, M)  \
  KPMAP_TRAIN_DATA_INSTANCES(, T, M)
KPMAP_TRAIN_FOR_EACH_VALUE_TYPE(KPMAP_TRAIN_DATA_)
#undef KPMAP_TRAIN_DATA_

KPMAP_TRAIN_BATCHES_INSTANCES(, Kokkos::DefaultExecutionSpace)

}  // namespace kpmap::train
