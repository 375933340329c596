#pragma once
/// \file
/// \brief The linear solvers of a backward-Euler step, matrix-free over the
/// halo layer: conjugate gradient, Jacobi, Chebyshev and polynomially
/// preconditioned CG (PPCG), with the preconditioners none, jac_diag and
/// jac_block.
///
/// Stopping rule (TeaLeaf's): with r0 = b - A x0 and rho the solver's error
/// measure (r.z for CG and PPCG, r.r for Chebyshev, sum |x_new - x_old| for
/// Jacobi), a solve has converged when sqrt(|rho|) < eps ||r0||. A solve that
/// has not converged after max_iters iterations, or meets a NaN, fails.
///
/// Chebyshev and PPCG first run CG for `presteps` iterations (and until the
/// CG error is below `epslim`), estimate the extreme eigenvalues of M^-1 A
/// from the CG coefficients (the Lanczos tridiagonal matrix), widen them by
/// 5 %, and keep them for later solves, as TeaLeaf does.
///
/// Every function that solves is collective over the layout's ranks (halo
/// exchanges, and global sums through kpmap::psum over an axis of the same
/// ranks). A solve runs every kernel and halo exchange on the operator's
/// execution space instance (HeatOperator::exec()) and fences only that
/// instance, so that work on other instances (another solve, a checkpoint
/// copy) may proceed beside it.

#include <kpmap/halo.hpp>
#include <kpmap/mesh.hpp>
#include <kpmap/sim/config.hpp>
#include <kpmap/sim/operator.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kpmap::sim {

struct ChebyshevCoefficients;  // internal (solver.cpp): the Chebyshev recurrence

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

/// \brief The extreme eigenvalues (min, max) of the symmetric tridiagonal
/// matrix with diagonal `diag` and off-diagonal `off` (off[i] couples i and
/// i+1), by Sturm-sequence bisection to full precision.
std::pair<double, double> tridiagonal_extreme_eigenvalues(const std::vector<double>& diag,
                                                          const std::vector<double>& off);

/// \brief Estimates of the extreme eigenvalues of M^-1 A from the step
/// lengths alpha_i and the ratios beta_i of n CG iterations (the Lanczos
/// matrix: T_ii = 1/alpha_i + beta_(i-1)/alpha_(i-1), T_i,i+1 = sqrt(beta_i)/alpha_i).
std::pair<double, double> cg_eigenvalue_estimates(const std::vector<double>& alphas,
                                                  const std::vector<double>& betas);

/// \brief A solver for A x = b on fixed fields x (the unknown, also the
/// first guess) and b, owning its work vectors and halo plans.
class LinearSolver {
 public:
  /// Collective (builds halo plans). `axis` spans the layout's ranks (global sums).
  LinearSolver(const CartesianLayout& layout, const Axis& axis, const SolverOptions& options,
               ScalarField x, ScalarField b, Timings& timings);
  ~LinearSolver();
  LinearSolver(const LinearSolver&) = delete;
  LinearSolver& operator=(const LinearSolver&) = delete;

  /// \brief Solves A x = b from the current x on A.exec(). Collective.
  SolveResult solve(const HeatOperator& A);

  /// \brief Eigenvalue estimates (min, max) kept by Chebyshev and PPCG, if
  /// any; a checkpoint stores them so that a restart continues bit for bit.
  bool has_eigenvalues() const noexcept { return have_eigen_; }
  std::pair<double, double> eigenvalues() const noexcept { return {eigmin_, eigmax_}; }
  void set_eigenvalues(double eigmin, double eigmax) noexcept {
    eigmin_ = eigmin;
    eigmax_ = eigmax;
    have_eigen_ = true;
  }

 private:
  struct Work;
  double global_sum(double local);
  std::pair<double, double> global_sum2(double a, double b);
  SolveResult solve_cg_family(const HeatOperator& A, double rr0);
  SolveResult solve_jacobi(const HeatOperator& A, double rr0);
  void chebyshev_phase(const HeatOperator& A, long first_iteration, SolveResult& res);
  void ppcg_phase(const HeatOperator& A, long first_iteration, SolveResult& res);
  void polynomial_preconditioner(const HeatOperator& A);
  void deep_inner_steps(const HeatOperator& A, ChebyshevCoefficients& coef);
  double residual(const HeatOperator& A, const ScalarField& r);

  CartesianLayout layout_;
  const Axis& axis_;
  SolverOptions options_;
  ScalarField x_, b_;
  Timings& timings_;
  std::unique_ptr<Work> work_;
  bool have_eigen_ = false;
  double eigmin_ = 0.0;
  double eigmax_ = 0.0;
  std::vector<double> cg_alphas_;
  std::vector<double> cg_betas_;
};

}  // namespace kpmap::sim
