// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Shared by the collectives' tests (test_collectives*.cpp): Views filled with
// a function of the rank and the flat index, and exact comparisons.

#include "support/mpi_test.hpp"

#include <kpmap/base/detail/view_utils.hpp>
#include <kpmap/collectives/collectives.hpp>

#include <catch2/catch_test_macros.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstddef>

namespace kpmap::test {

using Exec = Kokkos::DefaultExecutionSpace;

// A contiguous row-major host View of v's extents (any rank).
template <class V>
auto contiguous_host(const V& v) {
  using H = Kokkos::View<typename V::non_const_data_type, Kokkos::LayoutRight, Kokkos::HostSpace>;
  std::size_t n[8];
  for (int d = 0; d < 8; ++d) {
    n[d] = d < kpmap::detail::rank_v<V> ? v.extent(d) : KOKKOS_IMPL_CTOR_DEFAULT_ARG;
  }
  return H("kpmap::test::fill",
           Kokkos::LayoutRight(n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7]));
}

// Fills v with value(rank, row-major flat index k) on the device. Between
// memory spaces deep_copy needs contiguous Views of one layout on both sides:
// the values go through a contiguous host View and its device copy, then a
// copy within v's space into v (a strided subview too).
template <class V, class F>
void fill(const V& v, F value) {
  auto h = contiguous_host(v);
  const auto e = kpmap::detail::extents_of(v);
  for (std::size_t k = 0; k < v.size(); ++k) {
    std::size_t idx[8];
    kpmap::detail::unflatten(k, e, kpmap::detail::rank_v<V>, idx);
    kpmap::detail::at(h, idx) = value(k);
  }
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

// psum, pmax, pmin, pmean in place and psum out of place of v, each result
// checked exactly (test_collectives.cpp and test_collectives_left.cpp).
template <class V>
void check_reductions(const V& v) {
  const double me = r() + 1;
  fill(v, [&](std::size_t k) { return me * (k + 1.0); });
  kpmap::psum_inplace(v, "devices");
  CHECK(matches(v, [&](std::size_t k) { return tri() * (k + 1.0); }));

  fill(v, [&](std::size_t k) { return me * (k + 1.0); });
  kpmap::pmax_inplace(v, "devices");
  CHECK(matches(v, [&](std::size_t k) { return p() * (k + 1.0); }));

  fill(v, [&](std::size_t k) { return me * (k + 1.0); });
  kpmap::pmin_inplace(v, "devices");
  CHECK(matches(v, [&](std::size_t k) { return 1.0 * (k + 1.0); }));

  fill(v, [&](std::size_t k) { return me * (k + 1.0); });
  kpmap::pmean_inplace(v, "devices");
  CHECK(matches(v, [&](std::size_t k) { return tri() / p() * (k + 1.0); }));

  // Out of place leaves the input alone.
  fill(v, [&](std::size_t k) { return me * (k + 1.0); });
  auto s = kpmap::psum(v, "devices");
  CHECK(matches(s, [&](std::size_t k) { return tri() * (k + 1.0); }));
  CHECK(matches(v, [&](std::size_t k) { return me * (k + 1.0); }));
}

// check_reductions on Views of layout L of rank 0 to 3 and 8, of double and
// of float.
template <class L>
void check_reductions_of_ranks() {
  check_reductions(Kokkos::View<double, L, Exec>("r0"));
  check_reductions(Kokkos::View<double*, L, Exec>("r1", 7));
  check_reductions(Kokkos::View<double**, L, Exec>("r2", 3, 5));
  check_reductions(Kokkos::View<double***, L, Exec>("r3", 2, 3, 4));
  check_reductions(Kokkos::View<double********, L, Exec>("r8", 2, 1, 2, 1, 2, 3, 1, 2));
  check_reductions(Kokkos::View<float**, L, Exec>("f2", 4, 3));
}

}  // namespace kpmap::test
