// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief The path this header had before the library's subject folders: it forwards
/// to <kpmap/base/files.hpp>. Kept until kpmap 0.3; include <kpmap/base/files.hpp> (or
/// <kpmap/kpmap.hpp>).

#include <kpmap/base/files.hpp>
