// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// TeaLeaf's benchmark problem (tea_bm: a dense background, a hot corner and
// a warm strip) on an n^dims grid of [0, 10]^dims, time step 0.004.

#include <kpmap/sim/config.hpp>

#include <cstddef>

namespace kpmap::bench {

/// \brief The built-in linear solvers in the order the benchmarks number
/// them (their argument; 4 is the explicit step).
inline const char* const solver_names[] = {"cg",       "jacobi", "chebyshev", "ppcg",
                                           "explicit", "pipecg", "cgsr",      "fusedcg"};

inline sim::HeatConfig tea_benchmark(int dims, std::size_t n) {
  sim::HeatConfig c;
  c.ndim = dims;
  for (int d = 0; d < dims; ++d) {
    c.cells[d] = n;
    c.upper[d] = 10.0;
  }
  sim::State background;
  background.density = 100.0;
  background.energy = 0.0001;
  sim::State hot;
  hot.density = 0.1;
  hot.energy = 25.0;
  hot.lower = {0.0, 1.0, 0.0};
  hot.upper = {1.0, 2.0, dims == 3 ? 1.0 : 0.0};
  sim::State strip = hot;
  strip.energy = 0.1;
  strip.lower = {1.0, 1.0, 0.0};
  strip.upper = {6.0, 2.0, dims == 3 ? 6.0 : 0.0};
  c.states = {background, hot, strip};
  c.dt = 0.004;
  return c;
}

}  // namespace kpmap::bench
