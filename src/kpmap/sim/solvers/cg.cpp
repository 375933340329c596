// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/sim/solvers/cg.hpp>

#include <kpmap/tools/profiling.hpp>

#include <cmath>
#include <type_traits>
#include <vector>

namespace kpmap::sim::solvers {

template <class Exec>
Cg<Exec>::Cg(const SolverContext<Exec>& context, bool own_z) : LinearSolverBase<Exec>(context) {
  const bool pre = own_z && form_of(options_.preconditioner) != PreconditionerForm::identity;
  p_ = layout_.template allocate<double, Memory>("kpmap::sim::" + name_ + "::p");
  w_ = layout_.template allocate<double, Memory>("kpmap::sim::" + name_ + "::w");
  z_ = pre ? layout_.template allocate<double, Memory>("kpmap::sim::" + name_ + "::z") : r_;
  halo_p_ = std::make_unique<HaloExchange<double, Exec>>(layout_, std::vector<Field>{p_});
}

template <class Exec>
void Cg<Exec>::iterate(const Operator& A, SolveResult& res) {
  const Exec& exec = A.exec();
  const Box owned = layout_.interior();
  const PreconditionerForm form = form_of(A.preconditioner());
  const bool diag = form == PreconditionerForm::pointwise;
  const bool block = form == PreconditionerForm::apart;
  A.precondition(r_, z_, sums_);
  double rro = global_sum(sums_.fetch(exec));
  for_cells(exec, "kpmap::sim::cg::init_p", owned, kernels::Copy<Memory>{p_, z_});
  double error = res.initial_residual;
  for (long n = 1; n <= options_.max_iters; ++n) {
    if (take_over(A, n, error, res)) return;
    const ProfilingRegion iteration("kpmap::sim::cg::iteration");
    const double pw = operator_dot(A, "kpmap::sim::cg::matvec", n, res);
    if (pw == 0.0) return;
    const double alpha = rro / pw;
    if (block) {
      // r -= alpha w; then the block solve gives z and r.z.
      for_cells(exec, "kpmap::sim::cg::update_r", owned,
                kernels::UpdateR<false, Memory>{r_, w_, z_, A.dinv(), alpha});
      A.precondition(r_, z_, sums_);
    } else if (diag) {
      sums_.add(exec, "kpmap::sim::cg::update_r", owned,
                kernels::UpdateR<true, Memory>{r_, w_, z_, A.dinv(), alpha});
    } else {
      sums_.add(exec, "kpmap::sim::cg::update_r", owned,
                kernels::UpdateR<false, Memory>{r_, w_, z_, A.dinv(), alpha});
    }
    const double rrn = global_sum(sums_.fetch(exec));
    const double beta = rrn / rro;
    for_cells(exec, "kpmap::sim::cg::update_xp", owned,
              kernels::UpdateXP<Memory>{x_, p_, z_, alpha, beta});
    record(alpha, beta);
    rro = rrn;
    error = std::sqrt(std::abs(rrn));
    if (finished(res, n, error)) return;
  }
  exhausted(res);
}

template <class Exec>
double Cg<Exec>::operator_dot(const Operator& A, const char* label, long n, SolveResult& res) {
  A.visit([&](auto s) {
    constexpr bool three = decltype(s)::three_d;
    overlapped_reduce(A.exec(), label, layout_, kernels::MatvecDot<three, Memory>{s, p_, w_},
                      *halo_p_, sums_, timings_);
  });
  const double pw = global_sum(sums_.fetch(A.exec()));
  if (pw > 0.0 && std::isfinite(pw)) return pw;
  fail(res, n, "broke down (p.Ap = " + sci(pw) + ")");
  return 0.0;
}

// r, p, w; z with a preconditioner.
KPMAP_SIM_BUILTIN_SOLVER(cg, Cg, {"cg", "conjugate gradients", 3, 1})

#define KPMAP_SIM_INSTANTIATE(E) template class Cg<E>;
KPMAP_SIM_FOR_EACH_SPACE(KPMAP_SIM_INSTANTIATE)
#undef KPMAP_SIM_INSTANTIATE

}  // namespace kpmap::sim::solvers
