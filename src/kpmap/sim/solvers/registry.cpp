// SPDX-License-Identifier: BSD-3-Clause
// The solver registry (names, keys and factories): every registration (the
// built-ins of this folder and a program's own), in order.

#include <kpmap/sim/solvers/info.hpp>

#include <kpmap/base/error.hpp>

namespace kpmap::sim {

namespace detail {
// Defined in the generated builtin_solvers.cpp: calls the registration of
// every file of sim/solvers/ that holds a KPMAP_SIM_BUILTIN_SOLVER line.
void register_builtin_solvers();
}  // namespace detail

deck::Registry<SolverInfo>& solver_registry() {
  static deck::Registry<SolverInfo> all("solver", "kpmap::sim::register_solver",
                                        &detail::register_builtin_solvers);
  return all;
}

deck::Settings solver_settings(const SolverOptions& options) {
  const SolverInfo& info = solver_info(options.method);
  try {
    return deck::Settings(info.keys, options.keys);
  } catch (const Error& e) {
    throw Error("kpmap::sim: solver " + info.name + ": " + e.what());
  }
}

}  // namespace kpmap::sim
