// SPDX-License-Identifier: BSD-3-Clause
/// Polynomially preconditioned CG (TeaLeaf's tl_use_ppcg): CG presteps for
/// the eigenvalue estimates, then flexible CG whose preconditioner is
/// `ppcg_inner_steps` Chebyshev steps on A e = r. With a ghost width D > 1
/// the inner steps exchange sd and rtemp D layers deep once every D steps,
/// as TeaLeaf does. Both dot products of an outer iteration (r.z and
/// (r - r_old).z) are one fused kernel and one allreduce.

#include <kpmap/grid/halo.hpp>
#include <kpmap/sim/solvers/polynomial.hpp>
#include <kpmap/tools/profiling.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <type_traits>
#include <vector>

namespace kpmap::sim::kernels {

/// rtemp -= A sd.
template <bool ThreeD, class M>
struct SubtractMatvec {
  Stencil<ThreeD, M> s;
  CellField<M> sd, rtemp;
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i) const {
    rtemp(k, j, i) -= s.apply(sd, k, j, i);
  }
};

/// The start of the polynomial preconditioner: sd = z / theta; utemp = sd;
/// rtemp = r.
template <class M>
struct PolyInit {
  CellField<M> sd, utemp, rtemp, z, r;
  double inv_theta;
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i) const {
    const double v = z(k, j, i) * inv_theta;
    sd(k, j, i) = v;
    utemp(k, j, i) = v;
    rtemp(k, j, i) = r(k, j, i);
  }
};

/// Fused for flexible CG: acc.v[0] += r z; acc.v[1] += (r - rold) z.
template <class M>
struct FlexibleDots {
  CellField<M> r, rold, z;
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i, Sums<2>& acc) const {
    const double zv = z(k, j, i);
    acc.v[0] += r(k, j, i) * zv;
    acc.v[1] += (r(k, j, i) - rold(k, j, i)) * zv;
  }
};

/// x += alpha p; rold = r; r -= alpha w.
template <class M>
struct UpdateXRStore {
  CellField<M> x, p, r, rold, w;
  double alpha;
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i) const {
    x(k, j, i) += alpha * p(k, j, i);
    rold(k, j, i) = r(k, j, i);
    r(k, j, i) -= alpha * w(k, j, i);
  }
};

}  // namespace kpmap::sim::kernels

namespace kpmap::sim::solvers {

namespace {

// The inner steps a deck's `given` count means on a mesh of `cells` cells:
// 0 is TeaLeaf's guess, 4 times the fourth root of the cell count (of a 2-D
// mesh; below 2.3e5 for the at most 2^63 cells the deck allows).
long long inner_steps(long long given, double cells) {
  if (given > 0) return given;
  return std::max(1, 4 * static_cast<int>(std::sqrt(std::sqrt(cells))));
}

template <class Exec>
class Ppcg final : public PolynomialSolver<Exec> {
  KPMAP_SIM_USE_POLYNOMIAL_BASE(PolynomialSolver<Exec>);

 public:
  Ppcg(const SolverContext<Exec>& context, const deck::Settings& keys);

 private:
  bool ready(long cg_done, double error) const override {
    // Kept estimates from an earlier solve: one CG iteration is enough.
    return eigen_ ? cg_done >= 1 : PolynomialSolver<Exec>::ready(cg_done, error);
  }
  void phase(const Operator& A, long first, SolveResult& res) override;
  void polynomial_preconditioner(const Operator& A);
  void deep_inner_steps(const Operator& A, ChebyshevCoefficients& coef);

  Field rold_, sd_, rtemp_, utemp_, zt_;
  std::unique_ptr<HaloExchange<double, Exec>> halo_sd_;
  // With a ghost width D > 1: sd and rtemp to depth D, corners included.
  std::unique_ptr<HaloExchange<double, Exec>> halo_inner_;
  DeviceSums<Sums<2>, Exec> flexible_dots_{"kpmap::sim::ppcg::flexible_dots"};
  long long inner_steps_;  ///< Chebyshev steps of the preconditioner, per outer iteration
};

template <class Exec>
Ppcg<Exec>::Ppcg(const SolverContext<Exec>& context, const deck::Settings& keys)
    : PolynomialSolver<Exec>(context),
      inner_steps_(inner_steps(keys.integer("ppcg_inner_steps"),
                               static_cast<double>(context.layout.global_count()))) {
  const auto& l = layout_;
  rold_ = l.template allocate<double, Memory>("kpmap::sim::ppcg::r_old");
  sd_ = l.template allocate<double, Memory>("kpmap::sim::ppcg::sd");
  rtemp_ = l.template allocate<double, Memory>("kpmap::sim::ppcg::rtemp");
  utemp_ = l.template allocate<double, Memory>("kpmap::sim::ppcg::utemp");
  zt_ = form_of(options_.preconditioner) != PreconditionerForm::identity
            ? l.template allocate<double, Memory>("kpmap::sim::ppcg::zt")
            : rtemp_;
  halo_sd_ = std::make_unique<HaloExchange<double, Exec>>(l, std::vector<Field>{sd_});
  if (l.ghost() > 1) {
    halo_inner_ = std::make_unique<HaloExchange<double, Exec>>(l, std::vector<Field>{sd_, rtemp_},
                                                               HaloOptions{l.ghost(), true});
  }
}

template <class Exec>
void Ppcg<Exec>::polynomial_preconditioner(const Operator& A) {
  // utemp = P(A) M^-1 r: `inner` Chebyshev steps on A e = r from e = 0.
  const Exec& exec = A.exec();
  const Box owned = layout_.interior();
  ChebyshevCoefficients coef(*eigen_);
  A.precondition(r_, z_);
  for_cells(exec, "kpmap::sim::ppcg::init", owned,
            kernels::PolyInit<Memory>{sd_, utemp_, rtemp_, z_, r_, 1.0 / coef.theta});
  if (halo_inner_) {
    deep_inner_steps(A, coef);
    return;
  }
  for (int s = 0; s < inner_steps_; ++s) {
    const ProfilingRegion step("kpmap::sim::ppcg::inner_step");
    A.visit([&](auto st) {
      constexpr bool three = decltype(st)::three_d;
      overlapped_for(exec, "kpmap::sim::ppcg::inner_matvec", layout_,
                     kernels::SubtractMatvec<three, Memory>{st, sd_, rtemp_}, *halo_sd_, timings_);
    });
    A.precondition(rtemp_, zt_);
    auto [a, b] = coef.next();
    for_cells(exec, "kpmap::sim::ppcg::inner_update", owned,
              kernels::ChebyUpdate<Memory>{utemp_, sd_, zt_, a, b});
  }
}

template <class Exec>
void Ppcg<Exec>::deep_inner_steps(const Operator& A, ChebyshevCoefficients& coef) {
  // TeaLeaf's use of a deep halo: exchange sd and rtemp D layers deep, then
  // take D steps without communicating, step t (0-based) also over the D-1-t
  // ghost layers next to each neighbour. A ghost cell then computes, by the
  // same operations on the same values, what its owner computes, so the
  // result is the one-layer algorithm's, with a D-th of the messages.
  const Exec& exec = A.exec();
  const int depth = layout_.ghost();
  const Box owned = layout_.interior();
  for (int s = 0; s < inner_steps_; ++s) {
    const ProfilingRegion step("kpmap::sim::ppcg::inner_step");
    const int t = s % depth;
    if (t == 0) timed_exchange(exec, *halo_inner_, timings_);
    Box box = owned;
    for (int d = 0; d < layout_.ndim(); ++d) {
      if (!layout_.physical_boundary(d, 0)) box.lo[d] -= depth - 1 - t;
      if (!layout_.physical_boundary(d, 1)) box.hi[d] += depth - 1 - t;
    }
    A.visit([&](auto st) {
      constexpr bool three = decltype(st)::three_d;
      for_cells(exec, "kpmap::sim::ppcg::inner_matvec", box,
                kernels::SubtractMatvec<three, Memory>{st, sd_, rtemp_});
    });
    A.precondition_box(rtemp_, zt_, box);
    auto [a, b] = coef.next();
    for_cells(exec, "kpmap::sim::ppcg::inner_update", box,
              kernels::ChebyUpdate<Memory>{utemp_, sd_, zt_, a, b});
  }
}

template <class Exec>
void Ppcg<Exec>::phase(const Operator& A, long first, SolveResult& res) {
  const Exec& exec = A.exec();
  const Box owned = layout_.interior();
  polynomial_preconditioner(A);
  res.inner_iterations += inner_steps_;
  double rro =
      global_sum(local_sum(exec, "kpmap::sim::ppcg::rz", kernels::Dot<Memory>{r_, utemp_}));
  for_cells(exec, "kpmap::sim::ppcg::init_p", owned, kernels::Copy<Memory>{p_, utemp_});
  for (long n = first; n <= options_.max_iters; ++n) {
    const ProfilingRegion iteration("kpmap::sim::ppcg::iteration");
    const double pw = operator_dot(A, "kpmap::sim::ppcg::matvec", n, res);
    if (pw == 0.0) return;
    const double alpha = rro / pw;
    for_cells(exec, "kpmap::sim::ppcg::update_xr", owned,
              kernels::UpdateXRStore<Memory>{x_, p_, r_, rold_, w_, alpha});
    polynomial_preconditioner(A);
    res.inner_iterations += inner_steps_;
    // Flexible CG (Polak-Ribiere): the preconditioner is a polynomial that
    // rounding makes slightly different at every application.
    flexible_dots_.add(exec, "kpmap::sim::ppcg::dots", owned,
                       kernels::FlexibleDots<Memory>{r_, rold_, utemp_});
    const Sums<2> local = flexible_dots_.fetch(exec);
    const auto [rz, rrn] = global_sum2(local.v[0], local.v[1]);
    const double beta = rrn / rro;
    for_cells(exec, "kpmap::sim::ppcg::update_p", owned,
              kernels::UpdateP<Memory>{p_, utemp_, beta});
    rro = rz;
    if (finished(res, n, std::sqrt(std::abs(rz)))) return;
  }
  exhausted(res);
}

// Its own key, solver.ppcg_inner_steps.
deck::Schema ppcg_keys() {
  return deck::Schema("solver").integer(
      "ppcg_inner_steps", 0, {0, 1e6}, "",
      "inner Chebyshev steps per PPCG iteration (0: 4 (cells)^(1/4) as TeaLeaf)");
}

// The deck's 0 (TeaLeaf's -1) is TeaLeaf's count from the mesh.
void default_inner_steps(const deck::Deck&, HeatConfig& c) {
  double n = 1;
  for (int i = 0; i < c.ndim; ++i) n *= static_cast<double>(c.cells[i]);
  c.solver.keys["ppcg_inner_steps"] =
      inner_steps(solver_settings(c.solver).integer("ppcg_inner_steps"), n);
}

}  // namespace

// CG's r, p, w (and z), and r_old, sd, rtemp, utemp (and zt with a preconditioner).
KPMAP_SIM_BUILTIN_SOLVER(ppcg, Ppcg,
                         {"ppcg", "CG with a Chebyshev polynomial preconditioner", 7, 2,
                          ppcg_keys(), default_inner_steps})

}  // namespace kpmap::sim::solvers
