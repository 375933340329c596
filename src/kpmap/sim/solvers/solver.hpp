// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief What advances the heat equation by one time step: the linear solvers
/// of a backward-Euler step (the registered ones: kpmap-heat --help-deck lists
/// them), or the explicit FTCS update, behind one small interface, and the
/// table of solvers a deck's `solver.method` picks from.
///
/// A solver updates x (the new u; also the first guess) from b (the u of the
/// time step's start) with a HeatOperator A. Every call to solve() is
/// collective over the layout's ranks (halo exchanges, global sums over
/// `axis`), runs every kernel and exchange on A.exec() and fences only that
/// instance. Kernels are labelled `kpmap::sim::<solver>::<step>`, and each
/// iteration is a profiling region `kpmap::sim::<solver>::iteration` (and
/// each of PPCG's inner steps `kpmap::sim::ppcg::inner_step`). The host waits
/// for the device only where it needs a value: once per global sum (the
/// parts of a local sum are reduced into device memory, sim::DeviceSums) and
/// before MPI reads a halo exchange's packed faces.
///
/// Stopping rule (TeaLeaf's, solvers/common.hpp): with r0 = b - A x0 and rho
/// the solver's error measure, a solve has converged when
/// sqrt(|rho|) < eps ||r0||; one that has not after max_iters iterations, or
/// meets a NaN, fails.
///
/// Adding a solver is one file: a class template over the execution space
/// derived from Solver<Exec> (usually solvers::LinearSolverBase<Exec>), and
/// its registration (register_solver: its name, description, work fields
/// and its own deck keys). In this folder that is KPMAP_SIM_BUILTIN_SOLVER;
/// in a program's own file, KPMAP_SIM_REGISTER_SOLVER
/// (examples/11_custom_solver.cpp).

#include <kpmap/runtime/mesh.hpp>
#include <kpmap/sim/config.hpp>
#include <kpmap/sim/operator.hpp>
#include <kpmap/sim/solvers/info.hpp>
#include <kpmap/sim/spaces.hpp>

#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kpmap::sim {

/// \brief v in scientific notation, 6 digits: how the simulation's and its
/// solvers' messages print numbers.
std::string sci(double v);

/// \brief What one solve did.
struct SolveResult {
  long iterations = 0;            ///< outer iterations (TeaLeaf's "Iteration count")
  long inner_iterations = 0;      ///< PPCG's inner Chebyshev steps
  double initial_residual = 0.0;  ///< ||b - A x0||
  double error = 0.0;         ///< sqrt(|rho|) / ||r0|| at the end (TeaLeaf's "Conduction error")
  double exact_error = -1.0;  ///< ||b - A x|| / ||r0|| with solver.check_result, else -1
  bool converged = false;
  std::string failure;  ///< why, when not converged
};

/// \brief The extreme eigenvalues (min, max) of M^-1 A that Chebyshev and
/// PPCG estimate once and keep; a checkpoint stores them so that a restart
/// continues bit for bit.
using Eigenvalues = std::pair<double, double>;

/// \brief Advances x over one time step, on execution space Exec. Collective.
template <class Exec = Kokkos::DefaultExecutionSpace>
class Solver {
 public:
  virtual ~Solver() = default;
  Solver() = default;
  Solver(const Solver&) = delete;
  Solver& operator=(const Solver&) = delete;

  /// \brief One backward-Euler solve A x = b from the current x (or one
  /// explicit step: x = b - (A - I) b). Collective.
  virtual SolveResult solve(const HeatOperator<Exec>& A) = 0;

  /// \brief The eigenvalue estimates the solver keeps, if any.
  virtual std::optional<Eigenvalues> eigenvalues() const { return std::nullopt; }
  /// \brief Restores kept estimates (from a checkpoint); ignored by solvers
  /// that keep none.
  virtual void set_eigenvalues(Eigenvalues) {}
};

/// \brief What every solver is built from: x and b live in Exec's memory,
/// `axis` spans the layout's ranks.
template <class Exec = Kokkos::DefaultExecutionSpace>
struct SolverContext {
  const CartesianLayout& layout;
  const Axis& axis;
  SolverOptions options;
  CellField<typename Exec::memory_space> x, b;
  Timings& timings;
};

/// \brief Makes a solver on execution space Exec, with its own keys' values.
template <class Exec>
using SolverFactory = std::unique_ptr<Solver<Exec>> (*)(const SolverContext<Exec>&,
                                                        const deck::Settings&);

/// \brief Registers the linear solver S (a class template over the
/// execution space, derived from Solver<Exec> and constructed from a
/// SolverContext<Exec> and, when it declares keys, the deck::Settings of
/// them: `S(context, settings)`); its kernels are compiled here for every space of
/// sim/spaces.hpp) under `info.name`, for decks, --help-deck and
/// make_solver(). Call it before the deck is read: from main(), or at
/// namespace scope with KPMAP_SIM_REGISTER_SOLVER in the program's own
/// source file. Returns true. \throws Error for a name registered already,
/// a key without a default, or a key another solver declares otherwise.
template <template <class> class S>
bool register_solver(SolverInfo info) {
  const std::string name = info.name;
  solver_registry().add(std::move(info));
#define KPMAP_SIM_ADD_FACTORY_(E)                                                                  \
  solver_registry().add_factory<SolverFactory<E>>(                                                 \
      name, [](const SolverContext<E>& c, const deck::Settings& s) -> std::unique_ptr<Solver<E>> { \
        if constexpr (std::is_constructible_v<S<E>, const SolverContext<E>&,                       \
                                              const deck::Settings&>) {                            \
          return std::make_unique<S<E>>(c, s);                                                     \
        } else {                                                                                   \
          (void)s;                                                                                 \
          return std::make_unique<S<E>>(c);                                                        \
        }                                                                                          \
      });
  KPMAP_SIM_FOR_EACH_SPACE(KPMAP_SIM_ADD_FACTORY_)
#undef KPMAP_SIM_ADD_FACTORY_
  return true;
}

/// \brief The solver that advances a step of `scheme`: the explicit FTCS
/// update, or the linear solver `context.options.method`. Collective (builds
/// halo plans).
template <class Exec>
std::unique_ptr<Solver<Exec>> make_solver(Scheme scheme, const SolverContext<Exec>& context);

/// \brief Whole fields make_solver(scheme, ...) allocates (memory estimates).
int solver_fields(Scheme scheme, const SolverOptions& options);

/// \brief The extreme eigenvalues (min, max) of the symmetric tridiagonal
/// matrix with diagonal `diag` and off-diagonal `off` (off[i] couples i and
/// i+1), by Sturm-sequence bisection to full precision.
Eigenvalues tridiagonal_extreme_eigenvalues(const std::vector<double>& diag,
                                            const std::vector<double>& off);

/// \brief Estimates of the extreme eigenvalues of M^-1 A from the step
/// lengths alpha_i and the ratios beta_i of n CG iterations (the Lanczos
/// matrix: T_ii = 1/alpha_i + beta_(i-1)/alpha_(i-1), T_i,i+1 = sqrt(beta_i)/alpha_i).
Eigenvalues cg_eigenvalue_estimates(const std::vector<double>& alphas,
                                    const std::vector<double>& betas);

}  // namespace kpmap::sim

/// \brief At namespace scope in a program's source file: registers solver
/// template S (an unqualified name) with a SolverInfo before main() runs, as
/// register_solver<S>(info) (deck/registry.hpp, KPMAP_REGISTER_PIECE).
#define KPMAP_SIM_REGISTER_SOLVER(S, ...) \
  KPMAP_REGISTER_PIECE(::kpmap::sim::register_solver, S, __VA_ARGS__)

/// \brief In a solver file of src/kpmap/sim/solvers/ (namespace
/// kpmap::sim::solvers): the registration of the built-in solver `name`,
/// which the build finds and calls from the registry (a generated
/// builtin_solvers.cpp; deck/registry.hpp, KPMAP_BUILTIN_PIECE_IN_SOURCE).
#define KPMAP_SIM_BUILTIN_SOLVER(name, S, ...) \
  KPMAP_BUILTIN_PIECE_IN_SOURCE(::kpmap::sim::register_solver, name, S, __VA_ARGS__)
