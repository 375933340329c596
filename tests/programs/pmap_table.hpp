// SPDX-License-Identifier: BSD-3-Clause
// The helpers of the JAX-to-kpmap table's program (pmap_table.cpp, whose
// lines are in two files that compile side by side: pmap_table.cpp and
// pmap_table_arrays.cpp).

#pragma once

#include <kpmap/kpmap.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>
#include <tuple>
#include <vector>

namespace pmap_table {

using Vector = Kokkos::View<double*>;
using Matrix = Kokkos::View<double**>;

// The lines whose result was not JAX's, the same on every rank (each check is
// agreed across the ranks): all of them are reported, not only the first.
inline std::vector<std::string> failures;

// Records a line whose result is not JAX's.
inline void expect(bool ok, const std::string& what) {
  if (kpmap::psum(ok ? 0 : 1, kpmap::Mesh::world().axis("devices"))) failures.push_back(what);
}

// One line of the table, run on its own: an error every rank raised fails the
// line and the table goes on with the next (one rank's error ends the job,
// which the others could not go on without).
template <class Line>
void line(Line&& run) {
  try {
    run();
  } catch (const kpmap::Error& e) {
    if (!e.all_ranks()) throw;
    failures.push_back(e.what());
  }
}

template <class V>
auto host(const V& v) {
  return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
}

// x(i) = i + 1 for i < n, made on the device.
inline Vector iota(std::size_t n) {
  Vector x("x", n);
  Kokkos::parallel_for(
      "table::iota", n, KOKKOS_LAMBDA(std::size_t i) { x(i) = i + 1.0; });
  return x;
}

// A struct tree: its Views shown to a visitor, nothing else declared.
struct Params {
  Vector w, b;
  template <class F>
  void for_each_view(F&& f) const {
    f(w);
    f(b);
  }
};

// 2 x (a block), a thread per element.
struct Twice {
  template <class X>
  Vector operator()(const X& x) const {
    Vector y("y", x.extent(0));
    Kokkos::parallel_for(
        "table::twice", x.extent(0), KOKKOS_LAMBDA(std::size_t i) { y(i) = 2 * x(i); });
    return y;
  }
};

// A block plus a replicated number, and the number itself (replicated).
struct Shift {
  template <class X>
  std::tuple<Vector, double> operator()(const X& x, double s) const {
    Vector y("y", x.extent(0));
    Kokkos::parallel_for(
        "table::shift", x.extent(0), KOKKOS_LAMBDA(std::size_t i) { y(i) = x(i) + s; });
    return {y, s};
  }
};

// A device's block of A times its block of x, completed by a psum over "model".
struct MatVec {
  template <class A, class X>
  Vector operator()(const A& a, const X& x) const {
    Vector y("y", a.extent(0));
    Kokkos::parallel_for(
        "table::matvec", a.extent(0), KOKKOS_LAMBDA(std::size_t i) {
          double s = 0;
          for (std::size_t j = 0; j < a.extent(1); ++j) s += a(i, j) * x(j);
          y(i) = s;
        });
    kpmap::psum_inplace(y, "model");
    return y;
  }
};

// The ranks' figures every line checks against.
struct Ranks {
  int n;       // ranks on "devices"
  int me;      // this rank's index on it
  double tri;  // 1 + 2 + ... + n
  int model;   // the model axis of the meshes: 2 where n is even, else 1
};

// The table's lines, in the order of docs/pmap.md.
void spmd_lines(const Ranks& ranks);   // pmap_table.cpp: pmap, collectives, meshes
void array_lines(const Ranks& ranks);  // pmap_table_arrays.cpp: arrays, trees

}  // namespace pmap_table
