// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// View helpers shared by the tests' files (a test executable's files compile
// as one batch in a KPMAP_UNITY_BUILD build: one definition each).

#include <Kokkos_Core.hpp>

namespace kpmap::test {

/// A host copy of v (v itself where the host reaches its memory).
template <class V>
auto host(const V& v) {
  return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
}

}  // namespace kpmap::test
