// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief What a heat-conduction run is: mesh, material states, time
/// stepping, linear solver and outputs, read from a kpmap-heat deck.
///
/// The deck schema (heat_schema()) is the one source of the keys: native TOML
/// decks are checked against it directly, and TeaLeaf `*tea` decks are first
/// translated into it (sim/tea_deck.hpp), so `--set section.key=value` works
/// the same for both.

#include <kpmap/base/words.hpp>
#include <kpmap/deck/deck.hpp>
#include <kpmap/run/output_keys.hpp>

#include <array>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace kpmap::sim {

/// \brief How a state's region is described.
enum class Geometry {
  rectangle,  ///< axis-aligned box [lower, upper] (a cuboid in 3-D)
  circle,     ///< ball of `radius` around `centre` (a sphere in 3-D)
  point,      ///< the one cell that contains `centre`
};

/// \brief A material state: density and specific energy over a region.
/// State 1 is the background and fills the whole domain; each later state
/// overwrites the cells its region selects (see sim/setup.hpp for the rules).
struct State {
  double density = 1.0;  ///< kg/m^3 (or the deck's units), > 0
  double energy = 0.0;   ///< specific energy, >= 0
  Geometry geometry = Geometry::rectangle;
  std::array<double, 3> lower{0, 0, 0};
  std::array<double, 3> upper{0, 0, 0};
  std::array<double, 3> centre{0, 0, 0};
  double radius = 0.0;
};

/// \brief The face conductivity model, TeaLeaf's `tl_coefficient_*`.
enum class Coefficient {
  density,          ///< K = mean of 1/density of the two cells (TeaLeaf's default)
  inverse_density,  ///< K = mean of density of the two cells
};

enum class Scheme { implicit, explicit_ftcs };
enum class Preconditioner { none, jac_diag, jac_block };

}  // namespace kpmap::sim

/// \brief The deck's words of kpmap::sim's choices: time.scheme,
/// solver.preconditioner, solver.coefficient.
template <>
struct kpmap::EnumWords<kpmap::sim::Scheme> {
  using S = kpmap::sim::Scheme;
  static constexpr std::pair<S, const char*> list[] = {{S::implicit, "implicit"},
                                                       {S::explicit_ftcs, "explicit"}};
};
template <>
struct kpmap::EnumWords<kpmap::sim::Preconditioner> {
  using P = kpmap::sim::Preconditioner;
  static constexpr std::pair<P, const char*> list[] = {
      {P::none, "none"}, {P::jac_diag, "jac_diag"}, {P::jac_block, "jac_block"}};
};
template <>
struct kpmap::EnumWords<kpmap::sim::Coefficient> {
  using C = kpmap::sim::Coefficient;
  static constexpr std::pair<C, const char*> list[] = {{C::density, "density"},
                                                       {C::inverse_density, "inverse_density"}};
};

namespace kpmap::sim {

/// \brief The linear solver of each backward-Euler step.
struct SolverOptions {
  /// The linear solver, by its registered name (sim/solvers/solver.hpp):
  /// a built-in one (kpmap-heat --help-deck lists the registered solvers)
  /// or a program's own.
  std::string method = "cg";
  Preconditioner preconditioner = Preconditioner::none;
  double eps = 1e-10;         ///< stop when sqrt(|rho|) < eps * ||r0|| (TeaLeaf's rule)
  long max_iters = 1000;      ///< a solve that has not converged after this many iterations fails
  int presteps = 25;          ///< CG steps before Chebyshev/PPCG estimate eigenvalues
  double epslim = 1.0;        ///< ... and only once the CG error is below this
  bool check_result = false;  ///< recompute the true residual after each solve
  Coefficient coefficient = Coefficient::density;
  /// Those of the method's own keys (SolverInfo::keys: PPCG's
  /// `ppcg_inner_steps`, Chebyshev's `check_every`) that are set, by name
  /// (`{{"omega", 0.8}}`); the rest take their defaults (solver_settings).
  deck::Values keys;
};

/// \brief A whole run.
struct HeatConfig {
  // mesh
  int ndim = 2;
  std::array<std::size_t, 3> cells{1, 1, 1};  ///< x, y, z (z = 1 in 2-D)
  std::array<double, 3> lower{0, 0, 0};
  std::array<double, 3> upper{1, 1, 1};
  int halo_depth = 1;
  std::vector<int> ranks;  ///< process grid, x first; empty or 0 entries: chosen
  std::string ranks_key;   ///< "deck.toml:5: key 'mesh.ranks'" where the deck gave the grid
  std::string depth_key;   ///< "deck.toml:4: key 'mesh.halo_depth'", for a depth the blocks lack
  // states
  std::vector<State> states;
  // time
  double dt = 0.0;
  double end_time = 10.0;
  long end_step = 0;  ///< 0: no step limit
  Scheme scheme = Scheme::implicit;
  SolverOptions solver;
  // output
  OutputConfig output{
      default_output_dir("kpmap-heat")};  ///< dir, checkpoint_every, keep_last, progress_every
  long summary_every = 10;
  long fields_every = 0;
  int test_problem = 0;

  /// \brief Cell width along d.
  double spacing(int d) const { return (upper[d] - lower[d]) / static_cast<double>(cells[d]); }
};

/// \brief The kpmap-heat deck schema: sections mesh, states.#, time, solver,
/// output; solver.method's choices and the solvers' own keys come from the
/// solvers registered when it is called.
deck::Schema heat_schema();

/// \brief The run a validated deck describes. Checks what the schema cannot
/// express (list lengths, lower < upper, states numbered 1..N, regions a
/// geometry needs) and names the deck file and key in every error.
/// \throws kpmap::InputError with ErrorScope::all_ranks: every rank holds the
/// same deck (deck::load) and so raises the same error.
HeatConfig from_deck(const deck::Deck& d);

}  // namespace kpmap::sim
