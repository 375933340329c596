// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief What Chebyshev and PPCG share: they run CG for `presteps`
/// iterations (and until the CG error is below `epslim`), estimate the
/// extreme eigenvalues of M^-1 A from the CG coefficients (the Lanczos
/// tridiagonal matrix), widen them by 5 %, keep them for later solves (and
/// checkpoints), and then iterate with the Chebyshev recurrence on them, as
/// TeaLeaf does.

#include <kpmap/sim/solvers/cg.hpp>

#include <optional>
#include <utility>
#include <vector>

namespace kpmap::sim::kernels {

/// Chebyshev (and polynomial-preconditioner) update:
/// d = alpha d + beta z; x += d.
template <class M>
struct ChebyUpdate {
  CellField<M> x, d, z;
  double alpha, beta;
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i) const {
    const double v = alpha * d(k, j, i) + beta * z(k, j, i);
    d(k, j, i) = v;
    x(k, j, i) += v;
  }
};

}  // namespace kpmap::sim::kernels

namespace kpmap::sim::solvers {

/// \brief The Chebyshev recurrence over [eigmin, eigmax]: step k gives the
/// weights (alpha_k, beta_k) of d_k = alpha_k d_(k-1) + beta_k z_k.
struct ChebyshevCoefficients {
  double theta, delta, sigma, rho_old;
  explicit ChebyshevCoefficients(const Eigenvalues& e)
      : theta(0.5 * (e.second + e.first)),
        delta(0.5 * (e.second - e.first)),
        sigma(theta / delta),
        rho_old(1.0 / sigma) {}
  std::pair<double, double> next() {
    const double rho_new = 1.0 / (2.0 * sigma - rho_old);
    const std::pair<double, double> ab{rho_new * rho_old, 2.0 * rho_new / delta};
    rho_old = rho_new;
    return ab;
  }
};

/// \brief CG until the eigenvalues are known, then the method's own phase.
template <class Exec>
class PolynomialSolver : public Cg<Exec> {
 public:
  std::optional<Eigenvalues> eigenvalues() const override { return eigen_; }
  void set_eigenvalues(Eigenvalues e) override { eigen_ = e; }

 protected:
  KPMAP_SIM_USE_CG_BASE(Cg<Exec>);

  explicit PolynomialSolver(const SolverContext<Exec>& context) : Cg<Exec>(context) {}

  void iterate(const Operator& A, SolveResult& res) override;
  bool take_over(const Operator& A, long n, double error, SolveResult& res) override;
  void record(double alpha, double beta) override;

  /// \brief The method's iterations from outer iteration `first`, on the
  /// eigenvalues in eigen_.
  virtual void phase(const Operator& A, long first, SolveResult& res) = 0;
  /// \brief True when the method may start before CG iteration n (the
  /// estimates, if none are kept yet, come from the n - 1 done).
  virtual bool ready(long cg_done, double error) const;

  std::optional<Eigenvalues> eigen_;

 private:
  std::vector<double> alphas_, betas_;
};

}  // namespace kpmap::sim::solvers

/// \brief In a solver class template derived from PolynomialSolver<Exec>
/// through `Base`: names the shared members (as KPMAP_SIM_USE_CG_BASE).
#define KPMAP_SIM_USE_POLYNOMIAL_BASE(Base) \
  KPMAP_SIM_USE_CG_BASE(Base);              \
  using Base::eigen_
