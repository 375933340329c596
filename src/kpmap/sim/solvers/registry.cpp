// The solver registry's factories: each registered solver's, per execution
// space (names and keys: info.cpp).

#include <kpmap/sim/solvers/solver.hpp>

#include <kpmap/base/detail/registry.hpp>

namespace kpmap::sim {

namespace solvers {
template <class Exec>
std::unique_ptr<Solver<Exec>> make_explicit(const SolverContext<Exec>& context);
}  // namespace solvers

namespace {

template <class Exec>
kpmap::detail::FactoryTable<SolverFactory<Exec>>& factories() {
  static kpmap::detail::FactoryTable<SolverFactory<Exec>> all;
  return all;
}

}  // namespace

namespace detail {

template <class Exec>
void add_solver_factory(const std::string& name, SolverFactory<Exec> make) {
  factories<Exec>()[name] = make;
}

}  // namespace detail

template <class Exec>
std::unique_ptr<Solver<Exec>> make_solver(Scheme scheme, const SolverContext<Exec>& context) {
  if (scheme == Scheme::explicit_ftcs) return solvers::make_explicit(context);
  const std::string& name = solver_info(context.options.method).name;
  return factories<Exec>().at(name)(context);
}

int solver_fields(Scheme scheme, const SolverOptions& options) {
  if (scheme == Scheme::explicit_ftcs) return 0;
  const SolverInfo& s = solver_info(options.method);
  return s.work_fields +
         (options.preconditioner != Preconditioner::none ? s.preconditioned_fields : 0);
}

#define KPMAP_SIM_INSTANTIATE(E)                                                     \
  template void detail::add_solver_factory<E>(const std::string&, SolverFactory<E>); \
  template std::unique_ptr<Solver<E>> make_solver(Scheme, const SolverContext<E>&);
KPMAP_SIM_FOR_EACH_SPACE(KPMAP_SIM_INSTANTIATE)
#undef KPMAP_SIM_INSTANTIATE

}  // namespace kpmap::sim
