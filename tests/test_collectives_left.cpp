// SPDX-License-Identifier: BSD-3-Clause
// Reductions on LayoutLeft Views of every rank (test_collectives.cpp has
// LayoutRight's, and is part of the same executable): exact expected values
// at any rank count.

#include "support/collective_checks.hpp"

#include <catch2/catch_test_macros.hpp>

#include <Kokkos_Core.hpp>

// Exec, check_reductions_of_ranks (support/collective_checks.hpp).
using namespace kpmap::test;

TEST_CASE("reductions on LayoutLeft Views of rank 0 to 3 and 8", "[collectives]") {
  check_reductions_of_ranks<Kokkos::LayoutLeft>();
}
