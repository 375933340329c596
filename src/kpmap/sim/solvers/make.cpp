// SPDX-License-Identifier: BSD-3-Clause
// A solver for a scheme, from the registry's factories (registry.cpp), and the
// fields it allocates.

#include <kpmap/sim/solvers/solver.hpp>

namespace kpmap::sim {

namespace solvers {
template <class Exec>
std::unique_ptr<Solver<Exec>> make_explicit(const SolverContext<Exec>& context);
}  // namespace solvers

template <class Exec>
std::unique_ptr<Solver<Exec>> make_solver(Scheme scheme, const SolverContext<Exec>& context) {
  if (scheme == Scheme::explicit_ftcs) return solvers::make_explicit(context);
  const auto& make = solver_registry().factory<SolverFactory<Exec>>(context.options.method);
  return make(context, solver_settings(context.options));
}

int solver_fields(Scheme scheme, const SolverOptions& options) {
  if (scheme == Scheme::explicit_ftcs) return 0;
  const SolverInfo& s = solver_info(options.method);
  return s.work_fields + (form_of(options.preconditioner) != PreconditionerForm::identity
                              ? s.preconditioned_fields
                              : 0);
}

#define KPMAP_SIM_INSTANTIATE(E) \
  template std::unique_ptr<Solver<E>> make_solver(Scheme, const SolverContext<E>&);
KPMAP_SIM_FOR_EACH_SPACE(KPMAP_SIM_INSTANTIATE)
#undef KPMAP_SIM_INSTANTIATE

}  // namespace kpmap::sim
