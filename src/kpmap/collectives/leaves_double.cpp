// SPDX-License-Identifier: BSD-3-Clause
// The reductions of double Views on the default device, compiled once
// (fusion.hpp, compiled_leaf; one file per type keeps each file short).
#include <kpmap/collectives/reductions.hpp>

namespace kpmap::detail {

KPMAP_REDUCTION_LEAVES(, double)

}  // namespace kpmap::detail
