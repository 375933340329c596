#include <kpmap/sim/solver.hpp>

#include <kpmap/collectives.hpp>
#include <kpmap/profiling.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace kpmap::sim {

// ---- eigenvalue estimates ----------------------------------------------------------

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

std::pair<double, double> tridiagonal_extreme_eigenvalues(const std::vector<double>& diag,
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

std::pair<double, double> cg_eigenvalue_estimates(const std::vector<double>& alphas,
                                                  const std::vector<double>& betas) {
  const std::size_t n = alphas.size();
  std::vector<double> diag(n), off(n > 0 ? n - 1 : 0);
  for (std::size_t i = 0; i < n; ++i) {
    diag[i] = 1.0 / alphas[i] + (i > 0 ? betas[i - 1] / alphas[i - 1] : 0.0);
    if (i + 1 < n) off[i] = std::sqrt(betas[i]) / alphas[i];
  }
  return tridiagonal_extreme_eigenvalues(diag, off);
}

// ---- the solver ------------------------------------------------------------------------

struct LinearSolver::Work {
  ScalarField r, p, w, z;  // z is r itself without a preconditioner
  ScalarField rold, sd, rtemp, utemp, zt, xold;
  std::unique_ptr<HaloExchange<double, Exec>> halo_x, halo_p, halo_sd, halo_xold;
  // PPCG with a ghost width D > 1: sd and rtemp to depth D, corners included,
  // once every D inner steps.
  std::unique_ptr<HaloExchange<double, Exec>> halo_inner;
};

namespace {

std::string sci(double v) {
  std::ostringstream s;
  s.precision(6);
  s << std::scientific << v;
  return s.str();
}

}  // namespace

// The Chebyshev recurrence over [eigmin, eigmax]: step k gives the weights
// (alpha_k, beta_k) of d_k = alpha_k d_(k-1) + beta_k z_k.
struct ChebyshevCoefficients {
  double theta, delta, sigma, rho_old;
  ChebyshevCoefficients(double eigmin, double eigmax)
      : theta(0.5 * (eigmax + eigmin)),
        delta(0.5 * (eigmax - eigmin)),
        sigma(theta / delta),
        rho_old(1.0 / sigma) {}
  std::pair<double, double> next() {
    const double rho_new = 1.0 / (2.0 * sigma - rho_old);
    const std::pair<double, double> ab{rho_new * rho_old, 2.0 * rho_new / delta};
    rho_old = rho_new;
    return ab;
  }
};

LinearSolver::LinearSolver(const CartesianLayout& layout, const Axis& axis,
                           const SolverOptions& options, ScalarField x, ScalarField b,
                           Timings& timings)
    : layout_(layout),
      axis_(axis),
      options_(options),
      x_(x),
      b_(b),
      timings_(timings),
      work_(std::make_unique<Work>()) {
  auto& w = *work_;
  const auto& l = layout_;
  const bool pre = options.preconditioner != Preconditioner::none;
  w.r = l.allocate<double>("kpmap::sim::solver::r");
  w.halo_x = std::make_unique<HaloExchange<double, Exec>>(l, std::vector<ScalarField>{x_});
  if (options.method == Method::jacobi) {
    w.xold = l.allocate<double>("kpmap::sim::solver::x_old");
    w.halo_xold = std::make_unique<HaloExchange<double, Exec>>(l, std::vector<ScalarField>{w.xold});
    return;
  }
  w.p = l.allocate<double>("kpmap::sim::solver::p");
  w.w = l.allocate<double>("kpmap::sim::solver::w");
  w.z = pre ? l.allocate<double>("kpmap::sim::solver::z") : w.r;
  w.halo_p = std::make_unique<HaloExchange<double, Exec>>(l, std::vector<ScalarField>{w.p});
  if (options.method == Method::ppcg) {
    w.rold = l.allocate<double>("kpmap::sim::solver::r_old");
    w.sd = l.allocate<double>("kpmap::sim::solver::sd");
    w.rtemp = l.allocate<double>("kpmap::sim::solver::rtemp");
    w.utemp = l.allocate<double>("kpmap::sim::solver::utemp");
    w.zt = pre ? l.allocate<double>("kpmap::sim::solver::zt") : w.rtemp;
    w.halo_sd = std::make_unique<HaloExchange<double, Exec>>(l, std::vector<ScalarField>{w.sd});
    if (l.ghost() > 1) {
      w.halo_inner = std::make_unique<HaloExchange<double, Exec>>(
          l, std::vector<ScalarField>{w.sd, w.rtemp}, HaloOptions{l.ghost(), true});
    }
  }
}

LinearSolver::~LinearSolver() = default;

double LinearSolver::global_sum(double local) {
  const double t0 = MPI_Wtime();
  const double g = kpmap::psum(local, axis_);
  timings_.collectives_s += MPI_Wtime() - t0;
  return g;
}

std::pair<double, double> LinearSolver::global_sum2(double a, double b) {
  const double t0 = MPI_Wtime();
  double v[2] = {a, b};
  Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> view(v, 2);
  kpmap::psum_inplace(Kokkos::DefaultHostExecutionSpace(), view, axis_);
  timings_.collectives_s += MPI_Wtime() - t0;
  return {v[0], v[1]};
}

double LinearSolver::residual(const HeatOperator& A, const ScalarField& r) {
  const Exec& exec = A.exec();
  return A.visit([&](auto s) {
    constexpr bool three = std::is_same_v<decltype(s), Stencil<true>>;
    return overlapped_reduce(exec, "kpmap::sim::solver::residual", layout_,
                             kernels::Residual<three>{s, x_, b_, r}, *work_->halo_x, timings_);
  });
}

SolveResult LinearSolver::solve(const HeatOperator& A) {
  const ProfilingRegion region("kpmap::sim::solve");
  SolveResult res;
  cg_alphas_.clear();
  cg_betas_.clear();
  const double rr0 = global_sum(residual(A, work_->r));
  res.initial_residual = std::sqrt(rr0);
  if (!std::isfinite(rr0)) {
    res.failure = "the initial residual is " + sci(rr0) + " (NaN or Inf in the fields)";
    return res;
  }
  if (rr0 == 0.0) {  // x already solves the system (a uniform field, for one)
    res.converged = true;
    return res;
  }
  res = options_.method == Method::jacobi ? solve_jacobi(A, rr0) : solve_cg_family(A, rr0);
  if (options_.check_result && res.converged) {
    res.exact_error = std::sqrt(global_sum(residual(A, work_->r))) / res.initial_residual;
  }
  return res;
}

SolveResult LinearSolver::solve_jacobi(const HeatOperator& A, double rr0) {
  SolveResult res;
  res.initial_residual = std::sqrt(rr0);
  auto& w = *work_;
  const Exec& exec = A.exec();
  const Box owned = layout_.interior();
  for (long n = 1; n <= options_.max_iters; ++n) {
    const ProfilingRegion iteration("kpmap::sim::jacobi::iteration");
    for_cells(exec, "kpmap::sim::jacobi::copy", owned, kernels::Copy{w.xold, x_});
    const double change = A.visit([&](auto s) {
      constexpr bool three = std::is_same_v<decltype(s), Stencil<true>>;
      return overlapped_reduce(exec, "kpmap::sim::jacobi::sweep", layout_,
                               kernels::JacobiSweep<three>{s, x_, w.xold, b_}, *w.halo_xold,
                               timings_);
    });
    const double error = std::sqrt(std::abs(global_sum(change)));
    res.iterations = n;
    res.error = error / res.initial_residual;
    if (!std::isfinite(error)) {
      res.failure = "Jacobi produced " + sci(error) + " at iteration " + std::to_string(n);
      return res;
    }
    if (error < options_.eps * res.initial_residual) {
      res.converged = true;
      return res;
    }
  }
  res.failure = "Jacobi did not converge in " + std::to_string(options_.max_iters) +
                " iterations (error " + sci(res.error) + ", tolerance " + sci(options_.eps) + ")";
  return res;
}

SolveResult LinearSolver::solve_cg_family(const HeatOperator& A, double rr0) {
  SolveResult res;
  res.initial_residual = std::sqrt(rr0);
  auto& w = *work_;
  const Exec& exec = A.exec();
  const Box owned = layout_.interior();
  const bool diag = A.preconditioner() == Preconditioner::jac_diag;
  const bool block = A.preconditioner() == Preconditioner::jac_block;
  double rro = global_sum(A.precondition(w.r, w.z));
  for_cells(exec, "kpmap::sim::cg::init_p", owned, kernels::Copy{w.p, w.z});
  double old_error = res.initial_residual;
  const bool accelerated = options_.method != Method::cg;
  for (long n = 1; n <= options_.max_iters; ++n) {
    const ProfilingRegion iteration("kpmap::sim::cg::iteration");
    if (accelerated) {
      const long cg_done = n - 1;
      const bool ready = options_.method == Method::ppcg && have_eigen_
                             ? cg_done >= 1
                             : cg_done >= options_.presteps && old_error <= options_.epslim;
      if (ready) {
        if (!have_eigen_) {
          const auto [lo, hi] = cg_eigenvalue_estimates(cg_alphas_, cg_betas_);
          if (!(lo > 0.0) || !(hi >= lo) || !std::isfinite(hi)) {
            res.failure = "the eigenvalue estimate from " + std::to_string(cg_done) +
                          " CG iterations failed (min " + sci(lo) + ", max " + sci(hi) + ")";
            return res;
          }
          // Widened by 5 % either way, as TeaLeaf does.
          set_eigenvalues(0.95 * lo, 1.05 * hi);
        }
        if (options_.method == Method::chebyshev) {
          chebyshev_phase(A, n, res);
        } else {
          ppcg_phase(A, n, res);
        }
        return res;
      }
    }
    const double pw = global_sum(A.visit([&](auto s) {
      constexpr bool three = std::is_same_v<decltype(s), Stencil<true>>;
      return overlapped_reduce(exec, "kpmap::sim::cg::matvec", layout_,
                               kernels::MatvecDot<three>{s, w.p, w.w}, *w.halo_p, timings_);
    }));
    if (!(pw > 0.0) || !std::isfinite(pw)) {
      res.failure = "CG broke down at iteration " + std::to_string(n) + " (p.Ap = " + sci(pw) + ")";
      return res;
    }
    const double alpha = rro / pw;
    double rrn = 0.0;
    if (block) {
      // r -= alpha w; then the block solve gives z and r.z.
      for_cells(exec, "kpmap::sim::cg::update_r", owned,
                kernels::UpdateR{w.r, w.w, w.z, A.dinv(), alpha, false});
      rrn = global_sum(A.precondition(w.r, w.z));
    } else {
      rrn =
          global_sum(reduce_cells<double>(exec, "kpmap::sim::cg::update_r", owned,
                                          kernels::UpdateR{w.r, w.w, w.z, A.dinv(), alpha, diag}));
    }
    const double beta = rrn / rro;
    for_cells(exec, "kpmap::sim::cg::update_xp", owned,
              kernels::UpdateXP{x_, w.p, w.z, alpha, beta});
    if (accelerated && !have_eigen_) {
      cg_alphas_.push_back(alpha);
      cg_betas_.push_back(beta);
    }
    rro = rrn;
    const double error = std::sqrt(std::abs(rrn));
    res.iterations = n;
    res.error = error / res.initial_residual;
    if (!std::isfinite(error)) {
      res.failure = "CG produced " + sci(error) + " at iteration " + std::to_string(n);
      return res;
    }
    if (error < options_.eps * res.initial_residual) {
      res.converged = true;
      return res;
    }
    old_error = error;
  }
  res.failure = std::string(to_string(options_.method)) + " did not converge in " +
                std::to_string(options_.max_iters) + " iterations (error " + sci(res.error) +
                ", tolerance " + sci(options_.eps) + ")";
  return res;
}

void LinearSolver::chebyshev_phase(const HeatOperator& A, long first, SolveResult& res) {
  auto& w = *work_;
  const Exec& exec = A.exec();
  const Box owned = layout_.interior();
  ChebyshevCoefficients coef(eigmin_, eigmax_);
  const double bb = global_sum(
      reduce_cells<double>(exec, "kpmap::sim::chebyshev::bb", owned, kernels::Dot{b_, b_}));
  // First step: d = M^-1 r / theta; x += d.
  residual(A, w.r);
  A.precondition(w.r, w.z);
  for_cells(exec, "kpmap::sim::chebyshev::update", owned,
            kernels::ChebyUpdate{x_, w.p, w.z, 0.0, 1.0 / coef.theta});
  // Second step, whose residual gives the expected iteration count.
  double rr = global_sum(residual(A, w.r));
  A.precondition(w.r, w.z);
  auto [a1, b1] = coef.next();
  for_cells(exec, "kpmap::sim::chebyshev::update", owned,
            kernels::ChebyUpdate{x_, w.p, w.z, a1, b1});
  res.iterations = first;
  res.error = std::sqrt(rr) / res.initial_residual;
  if (!std::isfinite(rr)) {
    res.failure = "Chebyshev produced " + sci(rr) + " at iteration " + std::to_string(first);
    return;
  }
  if (std::sqrt(rr) < options_.eps * res.initial_residual) {
    res.converged = true;
    return;
  }
  // Iterations until the Chebyshev polynomial has reduced the error by eps
  // (TeaLeaf's estimate); the residual is only checked after that.
  const double cn = eigmax_ / eigmin_;
  const double gamma = (std::sqrt(cn) - 1.0) / (std::sqrt(cn) + 1.0);
  const double it_alpha = options_.eps / 2.0 * std::sqrt(bb / rr);
  const long estimate = std::lround(std::log(it_alpha) / std::log(gamma));
  for (long n = first + 1; n <= options_.max_iters; ++n) {
    const ProfilingRegion iteration("kpmap::sim::chebyshev::iteration");
    const bool check = n >= estimate && n % options_.check_every == 0;
    const double local = residual(A, w.r);
    if (check) rr = global_sum(local);
    A.precondition(w.r, w.z);
    auto [a, b] = coef.next();
    for_cells(exec, "kpmap::sim::chebyshev::update", owned,
              kernels::ChebyUpdate{x_, w.p, w.z, a, b});
    res.iterations = n;
    if (!check) continue;
    const double error = std::sqrt(rr);
    res.error = error / res.initial_residual;
    if (!std::isfinite(error)) {
      res.failure = "Chebyshev produced " + sci(error) + " at iteration " + std::to_string(n);
      return;
    }
    if (error < options_.eps * res.initial_residual) {
      res.converged = true;
      return;
    }
  }
  res.failure = "chebyshev did not converge in " + std::to_string(options_.max_iters) +
                " iterations (error " + sci(res.error) + ", tolerance " + sci(options_.eps) + ")";
}

void LinearSolver::polynomial_preconditioner(const HeatOperator& A) {
  // utemp = P(A) M^-1 r: `inner` Chebyshev steps on A e = r from e = 0.
  auto& w = *work_;
  const Exec& exec = A.exec();
  const Box owned = layout_.interior();
  ChebyshevCoefficients coef(eigmin_, eigmax_);
  A.precondition(w.r, w.z);
  for_cells(exec, "kpmap::sim::ppcg::init", owned,
            kernels::PolyInit{w.sd, w.utemp, w.rtemp, w.z, w.r, 1.0 / coef.theta});
  if (w.halo_inner) {
    deep_inner_steps(A, coef);
    return;
  }
  for (int s = 0; s < options_.ppcg_inner_steps; ++s) {
    A.visit([&](auto st) {
      constexpr bool three = std::is_same_v<decltype(st), Stencil<true>>;
      overlapped_for(exec, "kpmap::sim::ppcg::inner_matvec", layout_,
                     kernels::SubtractMatvec<three>{st, w.sd, w.rtemp}, *w.halo_sd, timings_);
    });
    A.precondition(w.rtemp, w.zt);
    auto [a, b] = coef.next();
    for_cells(exec, "kpmap::sim::ppcg::inner_update", owned,
              kernels::ChebyUpdate{w.utemp, w.sd, w.zt, a, b});
  }
}

void LinearSolver::deep_inner_steps(const HeatOperator& A, ChebyshevCoefficients& coef) {
  // TeaLeaf's use of a deep halo: exchange sd and rtemp D layers deep, then
  // take D steps without communicating, step t (0-based) also over the D-1-t
  // ghost layers next to each neighbour. A ghost cell then computes, by the
  // same operations on the same values, what its owner computes, so the
  // result is the one-layer algorithm's, with a D-th of the messages.
  auto& w = *work_;
  const Exec& exec = A.exec();
  const int depth = layout_.ghost();
  const Box owned = layout_.interior();
  for (int s = 0; s < options_.ppcg_inner_steps; ++s) {
    const int t = s % depth;
    if (t == 0) timed_exchange(exec, *w.halo_inner, timings_);
    Box box = owned;
    for (int d = 0; d < layout_.ndim(); ++d) {
      if (!layout_.physical_boundary(d, 0)) box.lo[d] -= depth - 1 - t;
      if (!layout_.physical_boundary(d, 1)) box.hi[d] += depth - 1 - t;
    }
    A.visit([&](auto st) {
      constexpr bool three = std::is_same_v<decltype(st), Stencil<true>>;
      for_cells(exec, "kpmap::sim::ppcg::inner_matvec", box,
                kernels::SubtractMatvec<three>{st, w.sd, w.rtemp});
    });
    A.precondition_box(w.rtemp, w.zt, box);
    auto [a, b] = coef.next();
    for_cells(exec, "kpmap::sim::ppcg::inner_update", box,
              kernels::ChebyUpdate{w.utemp, w.sd, w.zt, a, b});
  }
}

void LinearSolver::ppcg_phase(const HeatOperator& A, long first, SolveResult& res) {
  auto& w = *work_;
  const Exec& exec = A.exec();
  const Box owned = layout_.interior();
  polynomial_preconditioner(A);
  res.inner_iterations += options_.ppcg_inner_steps;
  double rro = global_sum(
      reduce_cells<double>(exec, "kpmap::sim::ppcg::rz", owned, kernels::Dot{w.r, w.utemp}));
  for_cells(exec, "kpmap::sim::ppcg::init_p", owned, kernels::Copy{w.p, w.utemp});
  for (long n = first; n <= options_.max_iters; ++n) {
    const ProfilingRegion iteration("kpmap::sim::ppcg::iteration");
    const double pw = global_sum(A.visit([&](auto s) {
      constexpr bool three = std::is_same_v<decltype(s), Stencil<true>>;
      return overlapped_reduce(exec, "kpmap::sim::ppcg::matvec", layout_,
                               kernels::MatvecDot<three>{s, w.p, w.w}, *w.halo_p, timings_);
    }));
    if (!(pw > 0.0) || !std::isfinite(pw)) {
      res.failure =
          "PPCG broke down at iteration " + std::to_string(n) + " (p.Ap = " + sci(pw) + ")";
      return;
    }
    const double alpha = rro / pw;
    for_cells(exec, "kpmap::sim::ppcg::update_xr", owned,
              kernels::UpdateXRStore{x_, w.p, w.r, w.rold, w.w, alpha});
    polynomial_preconditioner(A);
    res.inner_iterations += options_.ppcg_inner_steps;
    // Flexible CG (Polak-Ribiere): the preconditioner is a polynomial that
    // rounding makes slightly different at every application.
    const Sums<2> local = reduce_cells<Sums<2>>(exec, "kpmap::sim::ppcg::dots", owned,
                                                kernels::FlexibleDots{w.r, w.rold, w.utemp});
    const auto [rz, rrn] = global_sum2(local.v[0], local.v[1]);
    const double beta = rrn / rro;
    for_cells(exec, "kpmap::sim::ppcg::update_p", owned, kernels::UpdateP{w.p, w.utemp, beta});
    rro = rz;
    const double error = std::sqrt(std::abs(rz));
    res.iterations = n;
    res.error = error / res.initial_residual;
    if (!std::isfinite(error)) {
      res.failure = "PPCG produced " + sci(error) + " at iteration " + std::to_string(n);
      return;
    }
    if (error < options_.eps * res.initial_residual) {
      res.converged = true;
      return;
    }
  }
  res.failure = "ppcg did not converge in " + std::to_string(options_.max_iters) +
                " iterations (error " + sci(res.error) + ", tolerance " + sci(options_.eps) + ")";
}

}  // namespace kpmap::sim
