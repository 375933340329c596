#pragma once
// Shared by the collectives' tests (test_collectives*.cpp): Views filled with
// a function of the rank and the flat index, and exact comparisons.

#include "support/mpi_test.hpp"

#include <kpmap/base/detail/view_utils.hpp>

#include <catch2/catch_test_macros.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstddef>

namespace kpmap::test {

using Exec = Kokkos::DefaultExecutionSpace;

// Fills v with value(rank, row-major flat index k) on the device.
template <class V, class F>
void fill(const V& v, F value) {
  auto h = Kokkos::create_mirror_view(v);
  const auto e = kpmap::detail::extents_of(v);
  for (std::size_t k = 0; k < v.size(); ++k) {
    std::size_t idx[8];
    kpmap::detail::unflatten(k, e, kpmap::detail::rank_v<V>, idx);
    kpmap::detail::at(h, idx) = value(k);
  }
  // Between memory spaces deep_copy needs one contiguous layout on both
  // sides: a strided subview on a GPU takes a contiguous device copy of the
  // mirror, then a copy within the device (on the host both are `h` itself).
  auto d = Kokkos::create_mirror_view_and_copy(typename V::memory_space(), h);
  Kokkos::deep_copy(v, d);
}

// True when v(row-major index k) == expected(k) for every k (on this rank),
// exactly, or within relative tolerance `rtol` where rounding is expected.
template <class V, class F>
bool matches(const V& v, F expected, double rtol = 0) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  const auto e = kpmap::detail::extents_of(v);
  for (std::size_t k = 0; k < v.size(); ++k) {
    std::size_t idx[8];
    kpmap::detail::unflatten(k, e, kpmap::detail::rank_v<V>, idx);
    const double got = kpmap::detail::at(h, idx);
    const double want = expected(k);
    if (rtol == 0 ? got != want : std::abs(got - want) > rtol * std::abs(want)) {
      UNSCOPED_INFO("element " << k << " is " << kpmap::detail::at(h, idx) << ", expected "
                               << expected(k));
      return false;
    }
  }
  return true;
}

inline double p() { return world_size(); }
inline double r() { return world_rank(); }
// Sum over ranks of (rank + 1): p(p+1)/2.
inline double tri() { return p() * (p() + 1) / 2; }

}  // namespace kpmap::test
