// SPDX-License-Identifier: BSD-3-Clause
// Must not compile: kpmap::mean of an integer View would be truncated to an
// integer ([1, 2] gave 1), where pmean of integers is refused for that
// reason: the same rule for both. Built only by the ctest test
// compile_fail.mean_integer_view, which expects the build to fail.

#include <kpmap/spmd/ops.hpp>

#include <Kokkos_Core.hpp>

int mean_of(const Kokkos::View<int*>& v) { return kpmap::mean(v); }
