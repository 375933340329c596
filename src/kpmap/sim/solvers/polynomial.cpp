// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/sim/solvers/polynomial.hpp>

#include <cmath>
#include <string>

namespace kpmap::sim::solvers {

template <class Exec>
void PolynomialSolver<Exec>::iterate(const Operator& A, SolveResult& res) {
  alphas_.clear();
  betas_.clear();
  Cg<Exec>::iterate(A, res);
}

template <class Exec>
bool PolynomialSolver<Exec>::ready(long cg_done, double error) const {
  return cg_done >= options_.presteps && error <= options_.epslim;
}

template <class Exec>
bool PolynomialSolver<Exec>::take_over(const Operator& A, long n, double error, SolveResult& res) {
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

template <class Exec>
void PolynomialSolver<Exec>::record(double alpha, double beta) {
  if (eigen_) return;
  alphas_.push_back(alpha);
  betas_.push_back(beta);
}

#define KPMAP_SIM_INSTANTIATE(E) template class PolynomialSolver<E>;
KPMAP_SIM_FOR_EACH_SPACE(KPMAP_SIM_INSTANTIATE)
#undef KPMAP_SIM_INSTANTIATE

}  // namespace kpmap::sim::solvers
