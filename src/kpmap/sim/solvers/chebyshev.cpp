// SPDX-License-Identifier: BSD-3-Clause
/// Chebyshev iteration (TeaLeaf's tl_use_chebyshev): CG presteps for the
/// eigenvalue estimates, then x += d with d = alpha d + beta M^-1 r, the
/// residual (with x's halo exchange behind the interior) every iteration, and
/// its norm, with the host waiting for it, only every check_every iterations
/// once TeaLeaf's estimate of the iterations needed has passed.

#include <kpmap/sim/solvers/polynomial.hpp>
#include <kpmap/tools/profiling.hpp>

#include <cmath>

namespace kpmap::sim::solvers {

namespace {

template <class Exec>
class Chebyshev final : public PolynomialSolver<Exec> {
  KPMAP_SIM_USE_POLYNOMIAL_BASE(PolynomialSolver<Exec>);

 public:
  Chebyshev(const SolverContext<Exec>& context, const deck::Settings& keys)
      : PolynomialSolver<Exec>(context), check_every_(keys.integer("check_every")) {}

 private:
  void phase(const Operator& A, long first, SolveResult& res) override;
  long long check_every_;  ///< the residual's norm is read every this many iterations
};

template <class Exec>
void Chebyshev<Exec>::phase(const Operator& A, long first, SolveResult& res) {
  const Exec& exec = A.exec();
  const Box owned = layout_.interior();
  ChebyshevCoefficients coef(*eigen_);
  const double bb =
      global_sum(local_sum(exec, "kpmap::sim::chebyshev::bb", kernels::Dot<Memory>{b_, b_}));
  // First step: d = M^-1 r / theta; x += d.
  update_residual(A);
  A.precondition(r_, z_);
  for_cells(exec, "kpmap::sim::chebyshev::update", owned,
            kernels::ChebyUpdate<Memory>{x_, p_, z_, 0.0, 1.0 / coef.theta});
  // Second step, whose residual gives the expected iteration count.
  double rr = global_sum(residual(A));
  A.precondition(r_, z_);
  auto [a1, b1] = coef.next();
  for_cells(exec, "kpmap::sim::chebyshev::update", owned,
            kernels::ChebyUpdate<Memory>{x_, p_, z_, a1, b1});
  if (finished(res, first, std::sqrt(rr))) return;
  // Iterations until the Chebyshev polynomial has reduced the error by eps
  // (TeaLeaf's estimate); the residual is only checked after that.
  const double cn = eigen_->second / eigen_->first;
  const double gamma = (std::sqrt(cn) - 1.0) / (std::sqrt(cn) + 1.0);
  const double it_alpha = options_.eps / 2.0 * std::sqrt(bb / rr);
  const long estimate = std::lround(std::log(it_alpha) / std::log(gamma));
  for (long n = first + 1; n <= options_.max_iters; ++n) {
    const ProfilingRegion iteration("kpmap::sim::chebyshev::iteration");
    const bool check = n >= estimate && n % check_every_ == 0;
    if (check) {
      rr = global_sum(residual(A));
    } else {
      update_residual(A);
    }
    A.precondition(r_, z_);
    auto [a, b] = coef.next();
    for_cells(exec, "kpmap::sim::chebyshev::update", owned,
              kernels::ChebyUpdate<Memory>{x_, p_, z_, a, b});
    res.iterations = n;
    if (check && finished(res, n, std::sqrt(rr))) return;
  }
  exhausted(res);
}

// Its own key, solver.check_every.
deck::Schema chebyshev_keys() {
  return deck::Schema("solver").integer("check_every", 10, {1, 1e6}, "",
                                        "the residual is computed every this many iterations");
}

// A residual interval the iteration limit never reaches: no residual would
// be computed before the solve gives up, which would then report a solve
// that did not converge.
void check_interval(const deck::Deck& d, HeatConfig& c) {
  const long long every = solver_settings(c.solver).integer("check_every");
  if (d.given("solver.check_every") && every > c.solver.max_iters) {
    throw d.bad("solver.check_every",
                std::to_string(every) + " is above solver.max_iters (" +
                    std::to_string(c.solver.max_iters) +
                    "): no residual would be computed before the solve gives up, which would "
                    "then report a solve that did not converge");
  }
}

}  // namespace

// As CG: r, p (the Chebyshev direction d), w; z with a preconditioner.
KPMAP_SIM_BUILTIN_SOLVER(chebyshev, Chebyshev,
                         {"chebyshev", "Chebyshev iteration after CG estimates the eigenvalues", 3,
                          1, chebyshev_keys(), check_interval})

}  // namespace kpmap::sim::solvers
