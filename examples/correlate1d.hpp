// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// The per-example function of examples 04 and 05 and of docs/pmap.md's vmap
// section (the document quotes the block below, and its tour and table in
// tests/programs/ run it).

#include <Kokkos_Core.hpp>

#include <array>
#include <cstddef>

// [conv]
// One example of a batch: y(i) = sum_k w(k) x(i + k), a "valid" 1-D
// cross-correlation (jnp.correlate; jnp.convolve flips w), written for
// kpmap::vmap as a functor over subviews.
struct Correlate1D {
  template <class X, class W, class Y>
  KOKKOS_FUNCTION void operator()(const X& x, const W& w, const Y& y) const {
    for (std::size_t i = 0; i < y.extent(0); ++i) {
      double s = 0;
      for (std::size_t k = 0; k < w.extent(0); ++k) s += w(k) * x(i + k);
      y(i) = s;
    }
  }
  // One example's output extents, from one example of each input (host):
  // what lets vmap allocate and return the output.
  template <class X, class W>
  std::array<std::size_t, 1> shape(const X& x, const W& w) const {
    return {std::size_t(x.extent(0) - w.extent(0) + 1)};
  }
};
// [end]
