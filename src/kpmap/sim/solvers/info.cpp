// The solver registry's names and keys: every registration (the built-ins of
// this folder and a program's own), in order.

#include <kpmap/sim/solvers/info.hpp>

#include <kpmap/base/detail/registry.hpp>
#include <kpmap/base/error.hpp>

namespace kpmap::sim {

namespace detail {
// Defined in the generated builtin_solvers.cpp: calls the registration of
// every file of sim/solvers/ that holds a KPMAP_SIM_BUILTIN_SOLVER line.
void register_builtin_solvers();
}  // namespace detail

namespace {

kpmap::detail::Registry<SolverInfo>& solvers() {
  static kpmap::detail::Registry<SolverInfo> all(&detail::register_builtin_solvers);
  return all;
}

}  // namespace

namespace detail {

void add_solver(SolverInfo info) {
  deck::check_registration("kpmap::sim::register_solver", "solver", info.name, info.keys,
                           solvers().keys_so_far());
  solvers().add(std::move(info));
}

}  // namespace detail

std::vector<const SolverInfo*> registered_solvers() { return solvers().all(); }

const SolverInfo& solver_info(const std::string& name) {
  if (const SolverInfo* s = solvers().find(name)) return *s;
  throw Error("kpmap::sim: no solver is registered as '" + name + "'");
}

}  // namespace kpmap::sim
