#include <kpmap/sim/solvers/solver.hpp>

#include <kpmap/error.hpp>

namespace kpmap::sim {

namespace solvers {
// Each defined in the solver's own file, with its factory instantiated for
// every space of sim/spaces.hpp.
extern const SolverInfo cg_solver, jacobi_solver, chebyshev_solver, ppcg_solver;
template <class Exec>
std::unique_ptr<Solver<Exec>> make_cg(const SolverContext<Exec>& context);
template <class Exec>
std::unique_ptr<Solver<Exec>> make_jacobi(const SolverContext<Exec>& context);
template <class Exec>
std::unique_ptr<Solver<Exec>> make_chebyshev(const SolverContext<Exec>& context);
template <class Exec>
std::unique_ptr<Solver<Exec>> make_ppcg(const SolverContext<Exec>& context);
template <class Exec>
std::unique_ptr<Solver<Exec>> make_explicit(const SolverContext<Exec>& context);
}  // namespace solvers

namespace {

template <class Exec>
struct Entry {
  const SolverInfo* info;
  SolverFactory<Exec> make;
};

template <class Exec>
const std::vector<Entry<Exec>>& table() {
  // One line per linear solver.
  static const std::vector<Entry<Exec>> entries = {
      {&solvers::cg_solver, &solvers::make_cg<Exec>},
      {&solvers::jacobi_solver, &solvers::make_jacobi<Exec>},
      {&solvers::chebyshev_solver, &solvers::make_chebyshev<Exec>},
      {&solvers::ppcg_solver, &solvers::make_ppcg<Exec>},
  };
  return entries;
}

[[noreturn]] void unregistered(Method method) {
  throw Error("kpmap::sim: no solver is registered for method " +
              std::to_string(static_cast<int>(method)));
}

}  // namespace

const std::vector<const SolverInfo*>& registered_solvers() {
  static const std::vector<const SolverInfo*> infos = [] {
    std::vector<const SolverInfo*> v;
    for (const auto& e : table<Kokkos::DefaultExecutionSpace>()) v.push_back(e.info);
    return v;
  }();
  return infos;
}

const SolverInfo& solver_info(Method method) {
  for (const SolverInfo* s : registered_solvers()) {
    if (s->method == method) return *s;
  }
  unregistered(method);
}

template <class Exec>
std::unique_ptr<Solver<Exec>> make_solver(Scheme scheme, const SolverContext<Exec>& context) {
  if (scheme == Scheme::explicit_ftcs) return solvers::make_explicit(context);
  for (const auto& e : table<Exec>()) {
    if (e.info->method == context.options.method) return e.make(context);
  }
  unregistered(context.options.method);
}

int solver_fields(Scheme scheme, const SolverOptions& options) {
  if (scheme == Scheme::explicit_ftcs) return 0;
  const SolverInfo& s = solver_info(options.method);
  return s.work_fields +
         (options.preconditioner != Preconditioner::none ? s.preconditioned_fields : 0);
}

#define KPMAP_SIM_INSTANTIATE(E) \
  template std::unique_ptr<Solver<E>> make_solver(Scheme, const SolverContext<E>&);
KPMAP_SIM_FOR_EACH_SPACE(KPMAP_SIM_INSTANTIATE)
#undef KPMAP_SIM_INSTANTIATE

}  // namespace kpmap::sim
