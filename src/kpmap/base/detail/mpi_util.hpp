// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Leaf MPI helpers every layer may use: MPI error codes as
/// exceptions, and rank lists as messages print them. What the ranks send
/// each other on the host (an error agreed by all, one rank's string to
/// all, sums of counts) is transport/host.hpp's.

#include <kpmap/base/error.hpp>

#include <mpi.h>

#include <string>
#include <utility>
#include <vector>

namespace kpmap::detail {

/// \brief Throws kpmap::Error naming `what` when `rc` is not MPI_SUCCESS.
void check_mpi(int rc, const char* what);

/// \brief "0-1, 4, 6-9": ranks in increasing order, runs joined.
std::string rank_list(const std::vector<int>& ranks);

}  // namespace kpmap::detail
