// SPDX-License-Identifier: BSD-3-Clause
// Must not compile: in_axes puts the batch of argument 1 (from 0), a matrix,
// along axis 2, which a matrix does not have. The error names the argument,
// the axis and the rank (I = 1, Axis = 2, Rank = 2). Built only by the ctest
// test compile_fail.vmap_axis_out_of_range, which expects the build to fail.

#include <kpmap/spmd/vmap.hpp>

#include <Kokkos_Core.hpp>

struct Scale {
  template <class X, class W, class Y>
  KOKKOS_FUNCTION void operator()(const X& x, const W& w, const Y& y) const {
    y() = x() * w(0, 0);
  }
};

void map_it() {
  Kokkos::View<double*> x("x", 4), y("y", 4);
  Kokkos::View<double**> w("w", 4, 4);
  kpmap::vmap(Scale{}, kpmap::in_axes(kpmap::batched, kpmap::batched_at<2>),
              kpmap::out_axes(kpmap::batched))(x, w, y);
}
