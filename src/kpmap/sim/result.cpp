// SPDX-License-Identifier: BSD-3-Clause
// result.json of a kpmap-heat run, and TeaLeaf's check of its answer.

#include <kpmap/base/version.hpp>
#include <kpmap/sim/result.hpp>
#include <kpmap/sim/tea_deck/answers.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

namespace kpmap::sim {

HeatResult heat_result(const HeatConfig& c, const RunFacts& run, const LoopResult& res, bool root) {
  HeatResult out;
  nlohmann::ordered_json& j = out.json;
  const Summary& summary = res.summary;
  j["app"] = "kpmap-heat";
  j["kpmap_version"] = KPMAP_VERSION_STRING;
  j["deck"] = run.deck;
  j["restart"] = run.restart;
  j["ranks"] = run.ranks;
  j["decomposition"] = run.decomposition;
  j["dimensions"] = c.ndim;
  j["cells"] = std::vector<long long>(c.cells.begin(), c.cells.begin() + c.ndim);
  j["scheme"] = word_of(c.scheme);
  j["solver"] = c.scheme == Scheme::implicit ? c.solver.method : "ftcs";
  j["preconditioner"] = word_of(c.solver.preconditioner);
  j["step"] = run.step;
  j["steps_run"] = run.step - res.first_step;
  j["time"] = run.time;
  j["dt"] = c.dt;
  j["volume"] = summary.volume;
  j["mass"] = summary.mass;
  j["density"] = summary.density;
  j["energy"] = summary.energy;
  j["u"] = summary.u;
  j["total_iterations"] = res.iterations;
  j["total_inner_iterations"] = res.inner_iterations;
  j["last_error"] = res.last_error;
  if (res.last_exact_error >= 0) j["last_exact_error"] = res.last_exact_error;
  if (c.test_problem > 0) {
    // TeaLeaf's check: the final U within 0.001 % of its published value.
    const double expected = tea::tealeaf_expected_u(c.ndim, c.test_problem);
    const double diff = std::abs(100.0 * (summary.u / expected) - 100.0);
    const bool passed = diff < 0.001;
    out.check_failed = !passed;
    j["test_problem"] = {{"number", c.test_problem},
                         {"expected_u", expected},
                         {"difference_percent", diff},
                         {"tolerance_percent", 0.001},
                         {"passed", passed}};
    if (root) {
      std::printf("Test problem %d: U = %.17g, TeaLeaf's expected U = %.17g\n", c.test_problem,
                  summary.u, expected);
      std::printf(
          "Test problem %d is within %.7e %% of the expected solution (tolerance 0.001 %%)\n",
          c.test_problem, diff);
      std::printf("This test is considered %s\n", passed ? "PASSED" : "FAILED");
    }
  }
  return out;
}

}  // namespace kpmap::sim
