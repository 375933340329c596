// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief The path this header had before the library's subject folders: it forwards
/// to <kpmap/spmd/pmap.hpp>. Kept until kpmap 0.3; include <kpmap/spmd/pmap.hpp> (or
/// <kpmap/kpmap.hpp>).

#include <kpmap/spmd/pmap.hpp>
