// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief The path this header had before it moved into its folder: it forwards to
/// <kpmap/train/optimizers/optimizer.hpp>. Kept until kpmap 0.3; include that instead.

#include <kpmap/train/optimizers/optimizer.hpp>
