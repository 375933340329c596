// SPDX-License-Identifier: BSD-3-Clause
// LinearModel of double and of float (model.kind = "linear"), compiled once
// for every program (train/linear.hpp declares them extern).

#include <kpmap/train/linear.hpp>

namespace kpmap::train {

#define KPMAP_TRAIN_LINEAR_(T, M) template class LinearModel<T, M>;
KPMAP_TRAIN_FOR_EACH_VALUE_TYPE(KPMAP_TRAIN_LINEAR_)
#undef KPMAP_TRAIN_LINEAR_

}  // namespace kpmap::train
