// SPDX-License-Identifier: BSD-3-Clause
/// CG with one global sum per iteration (Chronopoulos and Gear, "s-step
/// iterative methods for symmetric linear systems", 1989; PETSc's CG with
/// -ksp_cg_single_reduction), with the preconditioners none, jac_diag and
/// jac_block as CG has them. CG sums p.Ap, then r.z; this form carries
/// s = A p by recurrence and sums r.u and w.u (u = M^-1 r, w = A u) in one
/// message after the operator:
///
///   p = u + beta p, s = w + beta s, x += alpha p, r -= alpha s, u = M^-1 r
///     and this rank's r.u: one fused pass
///   w = A u and this rank's w.u (u's halo exchange behind the interior)
///   one global sum of (r.u, w.u): beta = gamma / gamma_old,
///     alpha = gamma / (w.u - beta gamma / alpha_old)
///
/// The iterates are CG's in exact arithmetic, and so is the count: the error
/// measure r.u is known at the end of the iteration that makes r, as CG's
/// r.z. It waits for its one sum (no overlap: that is pipecg), so it halves
/// CG's global waits for the price of one array more a cell: 13 against 12
/// without a preconditioner.

#include <kpmap/grid/halo.hpp>
#include <kpmap/sim/solvers/common.hpp>
#include <kpmap/tools/profiling.hpp>

#include <cmath>
#include <memory>
#include <type_traits>
#include <vector>

namespace kpmap::sim::kernels {

/// p = u + beta p; s = w + beta s; x += alpha p; r -= alpha s; then
/// u = D^-1 r when `Diag` (u is r itself without a preconditioner); acc +=
/// r.u. Without a reduction (another preconditioner, applied after it): no
/// u and no sum.
template <bool Diag, class M>
struct SingleReductionUpdate {
  CellField<M> x, r, u, w, p, s, dinv;
  double alpha, beta;
  KOKKOS_INLINE_FUNCTION double step(long k, long j, long i) const {
    const double pv = u(k, j, i) + beta * p(k, j, i);  // u read before r (it may be r)
    const double sv = w(k, j, i) + beta * s(k, j, i);
    p(k, j, i) = pv;
    s(k, j, i) = sv;
    x(k, j, i) += alpha * pv;
    const double rv = r(k, j, i) - alpha * sv;
    r(k, j, i) = rv;
    return rv;
  }
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i) const { step(k, j, i); }
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i, double& acc) const {
    const double rv = step(k, j, i);
    if constexpr (Diag) {
      const double uv = dinv(k, j, i) * rv;
      u(k, j, i) = uv;
      acc += rv * uv;
    } else {
      acc += rv * rv;
    }
  }
};

}  // namespace kpmap::sim::kernels

namespace kpmap::sim::solvers {

namespace {

template <class Exec>
class CgSingleReduction final : public LinearSolverBase<Exec> {
  KPMAP_SIM_USE_LINEAR_SOLVER_BASE(LinearSolverBase<Exec>);

 public:
  explicit CgSingleReduction(const SolverContext<Exec>& context);

 private:
  void iterate(const Operator& A, SolveResult& res) override;
  /// w = A u with this rank's w.u, then the global (r.u, w.u), r.u's local
  /// sum already enqueued into rz_.
  std::pair<double, double> operator_and_sums(const Operator& A);

  Field u_, w_, p_, s_;
  std::unique_ptr<HaloExchange<double, Exec>> halo_u_;
  DeviceSums<double, Exec> rz_{"kpmap::sim::cgsr::rz"};
};

template <class Exec>
CgSingleReduction<Exec>::CgSingleReduction(const SolverContext<Exec>& context)
    : LinearSolverBase<Exec>(context) {
  const auto& l = layout_;
  const auto field = [&](const char* what) {
    return l.template allocate<double, Memory>("kpmap::sim::cgsr::" + std::string(what));
  };
  w_ = field("w");
  p_ = field("p");
  s_ = field("s");
  u_ = form_of(options_.preconditioner) != PreconditionerForm::identity ? field("u") : r_;
  halo_u_ = std::make_unique<HaloExchange<double, Exec>>(l, std::vector<Field>{u_});
}

template <class Exec>
std::pair<double, double> CgSingleReduction<Exec>::operator_and_sums(const Operator& A) {
  const Exec& exec = A.exec();
  A.visit([&](auto st) {
    constexpr bool three = decltype(st)::three_d;
    overlapped_reduce(exec, "kpmap::sim::cgsr::matvec", layout_,
                      kernels::MatvecDot<three, Memory>{st, u_, w_}, *halo_u_, sums_, timings_);
  });
  double v[2];
  v[1] = sums_.fetch(exec);  // waits for everything enqueued, r.u's sum too
  v[0] = rz_.fetch(exec);
  global_sums(v, 2);
  return {v[0], v[1]};
}

template <class Exec>
void CgSingleReduction<Exec>::iterate(const Operator& A, SolveResult& res) {
  const Exec& exec = A.exec();
  const Box owned = layout_.interior();
  A.precondition(r_, u_, rz_);
  auto [gamma, delta] = operator_and_sums(A);
  double alpha = gamma / delta, beta = 0.0;  // p and s start as u and w
  for (long n = 1; n <= options_.max_iters; ++n) {
    const ProfilingRegion iteration("kpmap::sim::cgsr::iteration");
    const char* label = "kpmap::sim::cgsr::update";
    switch (form_of(A.preconditioner())) {
      case PreconditionerForm::identity:
        rz_.add(exec, label, owned,
                kernels::SingleReductionUpdate<false, Memory>{x_, r_, u_, w_, p_, s_, A.dinv(),
                                                              alpha, beta});
        break;
      case PreconditionerForm::pointwise:
        rz_.add(exec, label, owned,
                kernels::SingleReductionUpdate<true, Memory>{x_, r_, u_, w_, p_, s_, A.dinv(),
                                                             alpha, beta});
        break;
      case PreconditionerForm::apart:
        for_cells(exec, label, owned,
                  kernels::SingleReductionUpdate<false, Memory>{x_, r_, u_, w_, p_, s_, A.dinv(),
                                                                alpha, beta});
        A.precondition(r_, u_, rz_);
        break;
    }
    const auto [gamma_new, delta_new] = operator_and_sums(A);
    if (finished(res, n, std::sqrt(std::abs(gamma_new)))) return;
    beta = gamma_new / gamma;
    const double pap = delta_new - beta * gamma_new / alpha;
    if (!(pap > 0.0 && std::isfinite(pap))) {
      fail(res, n, "broke down (p.Ap = " + sci(pap) + ")");
      return;
    }
    alpha = gamma_new / pap;
    gamma = gamma_new;
  }
  exhausted(res);
}

}  // namespace

// r, w, p, s; u with a preconditioner.
KPMAP_SIM_BUILTIN_SOLVER(cgsr, CgSingleReduction,
                         {"cgsr", "CG with one global sum per iteration (Chronopoulos and Gear)", 4,
                          1})

}  // namespace kpmap::sim::solvers
