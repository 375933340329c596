// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief The path this header had before it moved into its folder: it forwards to
/// <kpmap/train/losses/loss.hpp>. Kept until kpmap 0.3; include that instead.

#include <kpmap/train/losses/loss.hpp>
