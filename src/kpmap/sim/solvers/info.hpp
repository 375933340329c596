// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief The registry's side that needs no kernels: each registered linear
/// solver's name, description, work fields and own deck keys (what the deck
/// schema, --help-deck and the memory estimate read). The solvers and their
/// factories: solvers/solver.hpp.

#include <kpmap/deck/deck.hpp>
#include <kpmap/deck/registry.hpp>
#include <kpmap/sim/config.hpp>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace kpmap::sim {

/// \brief A linear solver as a registration declares it.
struct SolverInfo {
  /// Checks the deck's values of the solver's own keys against the rest of
  /// the run, and fills in those whose default depends on it.
  using Configure = std::function<void(const deck::Deck&, HeatConfig&)>;

  SolverInfo(std::string name_, std::string description_, int work, int preconditioned,
             deck::Schema keys_ = deck::Schema("solver"), Configure configure_ = nullptr)
      : name(std::move(name_)),
        description(std::move(description_)),
        work_fields(work),
        preconditioned_fields(preconditioned),
        keys(std::move(keys_)),
        configure(std::move(configure_)) {}

  std::string name;               ///< the deck's `solver.method` (letters, digits, '_')
  std::string description;        ///< a few words, for --help-deck
  int work_fields = 0;            ///< whole fields a solve allocates without a preconditioner
  int preconditioned_fields = 0;  ///< ... and in addition with one
  /// Its own deck keys, each with a default, read from [solver] (`omega`
  /// is `solver.omega`) for this method only: a deck that gives one with
  /// another method is refused. The solver is made with their values
  /// (solver_settings: SolverOptions::keys over the defaults).
  deck::Schema keys;
  /// Called by from_deck once the whole run is read (HeatConfig complete,
  /// its solver.keys holding those of these keys the deck set), when the deck chose
  /// this method: PPCG's inner steps default to a count from the mesh, and
  /// Chebyshev refuses a residual interval above solver.max_iters. Throws
  /// Deck::bad(key, why) for a value that does not fit. May be empty.
  Configure configure;
};

/// \brief The registry of linear solvers: every registration (the built-ins
/// of sim/solvers/ and a program's own), in order; `solver.method`'s choices
/// and the solvers' own keys under [solver].
deck::Registry<SolverInfo>& solver_registry();

/// \brief Every registered linear solver, by name.
inline std::vector<const SolverInfo*> registered_solvers() { return solver_registry().all(); }

/// \brief The registration of method `name`. \throws Error naming the
/// registered solvers when there is none.
inline const SolverInfo& solver_info(const std::string& name) { return solver_registry().at(name); }

/// \brief The own keys of method `options.method` (SolverInfo::keys):
/// `options.keys` over their defaults, what the solver is made with (and
/// what a deck check reads). \throws Error for an unregistered method, or a
/// key it does not declare.
deck::Settings solver_settings(const SolverOptions& options);

}  // namespace kpmap::sim
