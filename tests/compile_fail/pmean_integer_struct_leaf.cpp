// SPDX-License-Identifier: BSD-3-Clause
// Must not compile: pmean_inplace of a struct tree (for_each_view) with an
// integer View among its leaves: the mean would be truncated. Built only by
// the ctest test compile_fail.pmean_integer_struct_leaf.

#include <kpmap/collectives/collectives.hpp>

#include <Kokkos_Core.hpp>

struct Stats {
  Kokkos::View<double*> sum{"sum", 3};
  Kokkos::View<long*> hits{"hits", 3};
  template <class F>
  void for_each_view(F&& f) {
    f(sum);
    f(hits);
  }
};

void reduce(const kpmap::Axis& axis) {
  Stats s;
  kpmap::pmean_inplace(s, axis);
}
