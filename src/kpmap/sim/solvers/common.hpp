// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief What every linear solver shares, written once: the first residual,
/// global sums (timed as collectives), TeaLeaf's stopping rule and its
/// messages. Internal to the solvers in this folder.

#include <kpmap/collectives/request.hpp>
#include <kpmap/grid/halo.hpp>
#include <kpmap/sim/solvers/solver.hpp>

#include <memory>
#include <string>
#include <utility>

namespace kpmap::sim::solvers {

/// \brief The part of a linear solver that does not depend on the method.
/// solve() computes r = b - A x and ||r0||, deals with a solution already
/// exact or a NaN in the fields, runs the method's iterate(), and recomputes
/// the true residual when solver.check_result asks for it.
template <class Exec>
class LinearSolverBase : public Solver<Exec> {
 public:
  using Memory = typename Exec::memory_space;
  using Field = CellField<Memory>;
  using Operator = HeatOperator<Exec>;

  SolveResult solve(const Operator& A) final;

 protected:
  /// Collective (builds x's halo plan). Labels and messages name the method
  /// (context.options.method).
  explicit LinearSolverBase(const SolverContext<Exec>& context);

  /// \brief The method's iterations, from r = b - A x with
  /// res.initial_residual = ||r|| (finite, above zero).
  virtual void iterate(const Operator& A, SolveResult& res) = 0;

  /// \brief r = b - A x on the owned cells, with x's halo exchange
  /// overlapped; returns this rank's r.r (one host synchronisation).
  double residual(const Operator& A);
  /// \brief r = b - A x as residual() does, without its norm: nothing waits
  /// but the exchange.
  void update_residual(const Operator& A);
  /// \brief This rank's sum over the owned cells of what `f(k, j, i, acc)`
  /// adds, reduced on the device (one host synchronisation).
  template <class F>
  double local_sum(const Exec& exec, const char* label, const F& f) {
    sums_.add(exec, label, layout_.interior(), f);
    return sums_.fetch(exec);
  }
  /// \brief The sum over the ranks of `local` (a blocking allreduce).
  double global_sum(double local);
  /// \brief Two sums in one allreduce (global_sums).
  std::pair<double, double> global_sum2(double a, double b);
  /// \brief The sums over the ranks of the `count` host numbers at
  /// `values`, in place: one allreduce, waited for at once (in the region
  /// `kpmap::sim::<solver>::sum_wait`, timed as collectives), no fence (the
  /// caller has the numbers on the host already).
  void global_sums(double* values, int count);
  /// \brief Host memory that a non-blocking global sum reduces in place.
  using HostValues =
      Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  /// \brief Starts the sum over the ranks of `values`, in place (an
  /// MPI_Iallreduce on host memory, kpmap::ipsum; timed as collectives).
  /// Work enqueued on `exec` that wrote them (a kernel on the host, a copy
  /// from the device) is waited for first: the one host synchronisation.
  Request start_global_sum(const Exec& exec, const HostValues& values);
  /// \brief Waits for a sum start_global_sum started (timed as collectives,
  /// in the region `kpmap::sim::<solver>::sum_wait`).
  void wait_global_sum(Request& sum);

  /// \brief Records iteration n with error measure `error` = sqrt(|rho|):
  /// true when the solve is over, converged (error < eps ||r0||) or failed
  /// (NaN or Inf).
  bool finished(SolveResult& res, long n, double error) const;
  /// \brief The failure of a solve that ran all max_iters iterations.
  void exhausted(SolveResult& res) const;
  /// \brief A failure at iteration n: "<solver> <what> at iteration n".
  void fail(SolveResult& res, long n, const std::string& what) const;

  const CartesianLayout& layout_;
  SolverOptions options_;
  Field x_, b_, r_;
  Timings& timings_;
  std::string name_;
  /// Where an iteration's local sums go before the host reads them.
  DeviceSums<double, Exec> sums_;

 private:
  const Axis& axis_;
  std::string residual_label_;
  std::string wait_label_;
  std::unique_ptr<HaloExchange<double, Exec>> halo_x_;
};

}  // namespace kpmap::sim::solvers

/// \brief In a solver class template derived from LinearSolverBase<Exec>
/// through `Base` (a base that depends on Exec, whose members C++ does not
/// look up unqualified): names the shared members.
#define KPMAP_SIM_USE_LINEAR_SOLVER_BASE(Base) \
  using typename Base::Memory;                 \
  using typename Base::Field;                  \
  using typename Base::Operator;               \
  using typename Base::HostValues;             \
  using Base::layout_;                         \
  using Base::options_;                        \
  using Base::x_;                              \
  using Base::b_;                              \
  using Base::r_;                              \
  using Base::timings_;                        \
  using Base::name_;                           \
  using Base::sums_;                           \
  using Base::residual;                        \
  using Base::update_residual;                 \
  using Base::local_sum;                       \
  using Base::global_sum;                      \
  using Base::global_sum2;                     \
  using Base::global_sums;                     \
  using Base::start_global_sum;                \
  using Base::wait_global_sum;                 \
  using Base::finished;                        \
  using Base::exhausted;                       \
  using Base::fail
