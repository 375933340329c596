#include <kpmap/sim/solvers/solver.hpp>

#include <kpmap/error.hpp>

namespace kpmap::sim {

namespace solvers {
// Each defined in the solver's own file.
extern const SolverInfo cg_solver, jacobi_solver, chebyshev_solver, ppcg_solver;
std::unique_ptr<Solver> make_explicit(const SolverContext& context);
}  // namespace solvers

const std::vector<const SolverInfo*>& registered_solvers() {
  // One line per linear solver.
  static const std::vector<const SolverInfo*> table = {
      &solvers::cg_solver,
      &solvers::jacobi_solver,
      &solvers::chebyshev_solver,
      &solvers::ppcg_solver,
  };
  return table;
}

const SolverInfo& solver_info(Method method) {
  for (const SolverInfo* s : registered_solvers()) {
    if (s->method == method) return *s;
  }
  throw Error("kpmap::sim: no solver is registered for method " +
              std::to_string(static_cast<int>(method)));
}

std::unique_ptr<Solver> make_solver(Scheme scheme, const SolverContext& context) {
  if (scheme == Scheme::explicit_ftcs) return solvers::make_explicit(context);
  return solver_info(context.options.method).make(context);
}

int solver_fields(Scheme scheme, const SolverOptions& options) {
  if (scheme == Scheme::explicit_ftcs) return 0;
  const SolverInfo& s = solver_info(options.method);
  return s.work_fields +
         (options.preconditioner != Preconditioner::none ? s.preconditioned_fields : 0);
}

}  // namespace kpmap::sim
