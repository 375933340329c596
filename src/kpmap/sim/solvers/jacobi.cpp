// SPDX-License-Identifier: BSD-3-Clause
/// Jacobi iteration (TeaLeaf's tl_use_jacobi): x_old = x, then one sweep
/// x = (b + sum_f a_f x_old(neighbour)) / diagonal fused with
/// sum |x - x_old|, the error measure, with x_old's halo exchange behind the
/// interior.

#include <kpmap/grid/halo.hpp>
#include <kpmap/sim/solvers/common.hpp>
#include <kpmap/tools/profiling.hpp>

#include <cmath>
#include <memory>
#include <type_traits>
#include <vector>

namespace kpmap::sim::kernels {

/// One Jacobi sweep: x = (b + sum_f a_f xold_neighbour) / diagonal; acc += |x - xold|.
template <bool ThreeD, class M>
struct JacobiSweep {
  Stencil<ThreeD, M> s;
  CellField<M> x, xold, b;
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i, double& acc) const {
    double diag = 0.0;
    const double off = s.neighbours(xold, k, j, i, diag);
    const double v = (b(k, j, i) + off) / diag;
    x(k, j, i) = v;
    acc += kpmap::detail::math::fabs(v - xold(k, j, i));
  }
};

}  // namespace kpmap::sim::kernels

namespace kpmap::sim::solvers {

namespace {

template <class Exec>
class Jacobi final : public LinearSolverBase<Exec> {
  KPMAP_SIM_USE_LINEAR_SOLVER_BASE(LinearSolverBase<Exec>);

 public:
  explicit Jacobi(const SolverContext<Exec>& context)
      : LinearSolverBase<Exec>(context),
        xold_(layout_.template allocate<double, Memory>("kpmap::sim::jacobi::x_old")),
        halo_xold_(
            std::make_unique<HaloExchange<double, Exec>>(layout_, std::vector<Field>{xold_})) {}

 private:
  void iterate(const Operator& A, SolveResult& res) override;

  Field xold_;
  std::unique_ptr<HaloExchange<double, Exec>> halo_xold_;
};

template <class Exec>
void Jacobi<Exec>::iterate(const Operator& A, SolveResult& res) {
  const Exec& exec = A.exec();
  const Box owned = layout_.interior();
  for (long n = 1; n <= options_.max_iters; ++n) {
    const ProfilingRegion iteration("kpmap::sim::jacobi::iteration");
    for_cells(exec, "kpmap::sim::jacobi::copy", owned, kernels::Copy<Memory>{xold_, x_});
    A.visit([&](auto s) {
      constexpr bool three = decltype(s)::three_d;
      overlapped_reduce(exec, "kpmap::sim::jacobi::sweep", layout_,
                        kernels::JacobiSweep<three, Memory>{s, x_, xold_, b_}, *halo_xold_, sums_,
                        timings_);
    });
    const double change = sums_.fetch(exec);
    if (finished(res, n, std::sqrt(std::abs(global_sum(change))))) return;
  }
  exhausted(res);
}

}  // namespace

// r (the first residual), x_old.
KPMAP_SIM_BUILTIN_SOLVER(jacobi, Jacobi, {"jacobi", "Jacobi iteration", 2, 0})

}  // namespace kpmap::sim::solvers
