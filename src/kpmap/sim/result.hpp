// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief What a kpmap-heat run reports in result.json: the problem, the final
/// step and time, the field summary (volume, mass, density, energy, U), the
/// solver's iterations, and for a TeaLeaf benchmark deck (output.test_problem)
/// TeaLeaf's own check of the final U against its published value.

#include <kpmap/sim/config.hpp>
#include <kpmap/sim/time_loop.hpp>

#include <nlohmann/json.hpp>

#include <string>

namespace kpmap::sim {

/// \brief result.json's fields (kpmap::write_result adds the run's end, its
/// checkpoint and phase times), and whether TeaLeaf's check failed.
struct HeatResult {
  nlohmann::ordered_json json;
  bool check_failed = false;  ///< the test problem's U is off TeaLeaf's answer: exit code 5
};

/// \brief Where and how far a run went: its deck and restart file, the rank
/// count and decomposition (CartesianLayout::describe), the final step and time.
struct RunFacts {
  std::string deck;
  std::string restart;
  int ranks = 1;
  std::string decomposition;
  long step = 0;
  double time = 0.0;
};

/// \brief The result of run `c` that loop.run() ended with `res`. Rank 0
/// (`root`) prints TeaLeaf's check as TeaLeaf does ("This test is considered
/// PASSED").
HeatResult heat_result(const HeatConfig& c, const RunFacts& run, const LoopResult& res, bool root);

}  // namespace kpmap::sim
