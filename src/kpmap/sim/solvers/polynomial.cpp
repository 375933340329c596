#include <kpmap/sim/solvers/polynomial.hpp>

#include <cmath>
#include <string>

namespace kpmap::sim::solvers {

void PolynomialSolver::iterate(const HeatOperator& A, SolveResult& res) {
  alphas_.clear();
  betas_.clear();
  Cg::iterate(A, res);
}

bool PolynomialSolver::ready(long cg_done, double error) const {
  return cg_done >= options_.presteps && error <= options_.epslim;
}

bool PolynomialSolver::take_over(const HeatOperator& A, long n, double error, SolveResult& res) {
  if (!ready(n - 1, error)) return false;
  if (!eigen_) {
    const auto [lo, hi] = cg_eigenvalue_estimates(alphas_, betas_);
    if (!(lo > 0.0) || !(hi >= lo) || !std::isfinite(hi)) {
      res.failure = "the eigenvalue estimate from " + std::to_string(n - 1) +
                    " CG iterations failed (min " + sci(lo) + ", max " + sci(hi) + ")";
      return true;
    }
    // Widened by 5 % either way, as TeaLeaf does.
    eigen_ = Eigenvalues{0.95 * lo, 1.05 * hi};
  }
  phase(A, n, res);
  return true;
}

void PolynomialSolver::record(double alpha, double beta) {
  if (eigen_) return;
  alphas_.push_back(alpha);
  betas_.push_back(beta);
}

}  // namespace kpmap::sim::solvers
