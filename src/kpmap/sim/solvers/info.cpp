// The solver registry's names and keys: every registration (the built-ins of
// this folder and a program's own), in order.

#include <kpmap/sim/solvers/info.hpp>

#include <kpmap/error.hpp>

#include <algorithm>
#include <cctype>
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
  const std::string& name = info.name;
  const bool word = !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::islower(c) || std::isdigit(c) || c == '_';
  });
  if (!word) {
    throw Error("kpmap::sim::register_solver: the name '" + name +
                "' is not a deck word (lower-case letters, digits and '_')");
  }
  for (const SolverInfo& s : infos()) {
    if (s.name == name) {
      throw Error("kpmap::sim::register_solver: a solver named '" + name +
                  "' is registered already");
    }
  }
  for (const deck::Key& k : info.keys.keys()) {
    if (!k.fallback) {
      throw Error("kpmap::sim::register_solver: key '" + k.path + "' of solver '" + name +
                  "' has no default (a solver's keys are optional in a deck)");
    }
  }
  // A key this solver shares with another must be declared alike.
  deck::Schema all("solver");
  for (const SolverInfo& s : infos()) all.merge("", s.name, s.keys);
  all.merge("", name, info.keys);
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
