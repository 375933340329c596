// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/sim/solvers/solver.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

// The eigenvalue estimates of Chebyshev and PPCG (solvers/polynomial.hpp).

namespace kpmap::sim {

namespace {

// Number of eigenvalues of the tridiagonal matrix below x (Sturm sequence of
// the LDL^T pivots).
std::size_t eigenvalues_below(const std::vector<double>& diag, const std::vector<double>& off,
                              double x) {
  std::size_t count = 0;
  double q = 1.0;
  for (std::size_t i = 0; i < diag.size(); ++i) {
    const double b2 = i > 0 ? off[i - 1] * off[i - 1] : 0.0;
    q = diag[i] - x - (i > 0 ? b2 / q : 0.0);
    if (q == 0.0) q = -std::numeric_limits<double>::epsilon() * (std::abs(x) + 1.0);
    if (q < 0.0) ++count;
  }
  return count;
}

// The k-th smallest eigenvalue (k = 1 .. n) by bisection in [lo, hi].
double kth_eigenvalue(const std::vector<double>& diag, const std::vector<double>& off,
                      std::size_t k, double lo, double hi) {
  for (int it = 0; it < 200 && hi - lo > 2 * std::numeric_limits<double>::epsilon() *
                                             std::max(std::abs(lo), std::abs(hi));
       ++it) {
    const double mid = 0.5 * (lo + hi);
    if (mid <= lo || mid >= hi) break;
    if (eigenvalues_below(diag, off, mid) >= k) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return 0.5 * (lo + hi);
}

}  // namespace

Eigenvalues tridiagonal_extreme_eigenvalues(const std::vector<double>& diag,
                                            const std::vector<double>& off) {
  if (diag.empty()) return {0.0, 0.0};
  // Gershgorin discs bound every eigenvalue.
  double lo = std::numeric_limits<double>::max();
  double hi = std::numeric_limits<double>::lowest();
  for (std::size_t i = 0; i < diag.size(); ++i) {
    const double radius =
        (i > 0 ? std::abs(off[i - 1]) : 0.0) + (i + 1 < diag.size() ? std::abs(off[i]) : 0.0);
    lo = std::min(lo, diag[i] - radius);
    hi = std::max(hi, diag[i] + radius);
  }
  const double pad = 1e-12 * std::max(std::abs(lo), std::abs(hi)) + 1e-300;
  lo -= pad;
  hi += pad;
  return {kth_eigenvalue(diag, off, 1, lo, hi), kth_eigenvalue(diag, off, diag.size(), lo, hi)};
}

Eigenvalues cg_eigenvalue_estimates(const std::vector<double>& alphas,
                                    const std::vector<double>& betas) {
  const std::size_t n = alphas.size();
  std::vector<double> diag(n), off(n > 0 ? n - 1 : 0);
  for (std::size_t i = 0; i < n; ++i) {
    diag[i] = 1.0 / alphas[i] + (i > 0 ? betas[i - 1] / alphas[i - 1] : 0.0);
    if (i + 1 < n) off[i] = std::sqrt(betas[i]) / alphas[i];
  }
  return tridiagonal_extreme_eigenvalues(diag, off);
}

}  // namespace kpmap::sim
