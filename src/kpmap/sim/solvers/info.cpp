// The solver registry's names and keys: every registration (the built-ins of
// this folder and a program's own), in order.

#include <kpmap/sim/solvers/info.hpp>

#include <kpmap/error.hpp>

#include <deque>
#include <mutex>

namespace kpmap::sim {

namespace detail {
// Defined in the generated builtin_solvers.cpp: calls the registration of
// every file of sim/solvers/ that holds a KPMAP_SIM_BUILTIN_SOLVER line.
void register_builtin_solvers();
}  // namespace detail

namespace {

// Registrations in order (a deque: SolverInfo addresses stay valid).
std::deque<SolverInfo>& infos() {
  static std::deque<SolverInfo> all;
  return all;
}

// The built-ins join on first use, after the registrations static
// initialisation made (a program's own), so that a name given twice is
// found whichever came first.
void with_builtins() {
  static std::once_flag once;
  std::call_once(once, [] { detail::register_builtin_solvers(); });
}

}  // namespace

namespace detail {

void add_solver(SolverInfo info) {
  std::vector<std::pair<std::string, const deck::Schema*>> others;
  for (const SolverInfo& s : infos()) others.emplace_back(s.name, &s.keys);
  deck::check_registration("kpmap::sim::register_solver", "solver", info.name, info.keys, others);
  infos().push_back(std::move(info));
}

}  // namespace detail

std::vector<const SolverInfo*> registered_solvers() {
  with_builtins();
  std::vector<const SolverInfo*> v;
  for (const SolverInfo& s : infos()) v.push_back(&s);
  return v;
}

const SolverInfo& solver_info(const std::string& name) {
  with_builtins();
  for (const SolverInfo& s : infos()) {
    if (s.name == name) return s;
  }
  throw Error("kpmap::sim: no solver is registered as '" + name + "'");
}

}  // namespace kpmap::sim
