// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Conjugate gradient, with the preconditioners none, jac_diag and
/// jac_block, as TeaLeaf runs it: per iteration the operator fused with p.Ap
/// (x's neighbours exchanged behind the interior), r -= alpha w fused with
/// r.z (and z = M^-1 r for jac_diag), then x += alpha p fused with
/// p = z + beta p. Chebyshev and PPCG start as CG (solvers/polynomial.hpp).

#include <kpmap/grid/halo.hpp>
#include <kpmap/sim/solvers/common.hpp>

#include <memory>

namespace kpmap::sim::solvers {

template <class Exec>
class Cg : public LinearSolverBase<Exec> {
 public:
  /// `own_z` false: z is r itself with any preconditioner too (a derived
  /// method that applies it otherwise, and runs no CG iteration with it).
  explicit Cg(const SolverContext<Exec>& context, bool own_z = true);

 protected:
  KPMAP_SIM_USE_LINEAR_SOLVER_BASE(LinearSolverBase<Exec>);

  void iterate(const Operator& A, SolveResult& res) override;

  /// \brief Called before CG iteration n (cg_done = n - 1 done, the last
  /// with error `error`): true when another method has taken over and
  /// finished the solve in `res`.
  virtual bool take_over(const Operator&, long /*n*/, double /*error*/, SolveResult&) {
    return false;
  }
  /// \brief Called after each CG iteration with its step length and ratio.
  virtual void record(double /*alpha*/, double /*beta*/) {}

  /// \brief w = A p with p's halo exchange behind the interior, and the
  /// global p.w (labelled `label`); 0 with a failure in `res` at iteration n
  /// when p.w is not positive and finite (a breakdown).
  double operator_dot(const Operator& A, const char* label, long n, SolveResult& res);

  Field p_, w_, z_;  // z_ is r_ itself without a preconditioner
  std::unique_ptr<HaloExchange<double, Exec>> halo_p_;
};

}  // namespace kpmap::sim::solvers

/// \brief In a solver class template derived from Cg<Exec> through `Base`:
/// names the shared members (as KPMAP_SIM_USE_LINEAR_SOLVER_BASE).
#define KPMAP_SIM_USE_CG_BASE(Base)       \
  KPMAP_SIM_USE_LINEAR_SOLVER_BASE(Base); \
  using Base::p_;                         \
  using Base::w_;                         \
  using Base::z_;                         \
  using Base::halo_p_;                    \
  using Base::operator_dot
