// SPDX-License-Identifier: BSD-3-Clause
/// Pipelined CG (Ghysels and Vanroose, "Hiding global synchronization latency
/// in the preconditioned Conjugate Gradient algorithm", 2014; PETSc's
/// KSPPIPECG), with the preconditioners none, jac_diag and jac_block as CG
/// has them. CG waits for two global sums an iteration; this form needs one,
/// of all its dot products, and starts it before the operator so that the
/// network's latency hides behind the stencil and its halo exchange:
///
///   n = A m          while the sums of gamma = r.u, w.u, u.s, p.w, p.s travel
///   wait: beta = gamma / gamma_old,
///         alpha = gamma / (w.u + beta (u.s + p.w) + beta^2 p.s)   (PipeSums)
///   z = n + beta z, q = m + beta q, s = w + beta s, p = u + beta p,
///   x += alpha p, r -= alpha s, u -= alpha q, w -= alpha z, m = M^-1 w,
///   and this rank's five sums: one fused pass, then the sums start.
///
/// (u = M^-1 r, w = A u, m = M^-1 w, s = A p, q = M^-1 s, z = A q by
/// recurrence; without a preconditioner u is r, m is w and q is s.) The
/// recurrences drift from the true residual in rounding, which limits the
/// accuracy the pipelined form attains (Cools and Vanroose); every
/// `pipecg_replace_every` iterations, while the error is above
/// sqrt(machine epsilon), the vectors are recomputed from x and p (residual
/// replacement), which holds TeaLeaf's eps = 1e-15. The error
/// measure is r.u, as CG's r.z, read one iteration late: the solve stops
/// after the operator of the iteration that follows the one that
/// converged, and reports that one's count and x.

#include <kpmap/grid/halo.hpp>
#include <kpmap/sim/solvers/common.hpp>
#include <kpmap/tools/profiling.hpp>

#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

namespace kpmap::sim::kernels {

/// The preconditioner's part in a pipelined update: none (u is r, m is w, q
/// is s), the diagonal (m = D^-1 w in the same pass) or another (m computed
/// after it).
enum class PipeM { none, diag, apart };

/// An iteration's local sums: r.u, w.u of the new vectors, and u.s, p.w,
/// p.s with the new u and w and the directions p and s that made them.
/// With beta known, the next step's p.Ap is then
/// (u + beta p).(w + beta s) = w.u + beta (u.s + p.w) + beta^2 p.s,
/// from the vectors themselves: positive however far rounding has moved
/// them from the exact recurrences (the textbook form,
/// w.u - beta r.u / alpha_old, assumes they have not, and after a residual
/// replacement can turn negative near convergence).
using PipeSums = Sums<5>;

/// One pipelined CG iteration's vector updates in one pass, and this
/// rank's PipeSums of the new vectors.
template <PipeM Pre, class M>
struct PipeUpdate {
  CellField<M> x, r, u, w, m, n, p, s, q, z, dinv;
  double alpha, beta;
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i, PipeSums& acc) const {
    const double r0 = r(k, j, i);
    const double u0 = Pre == PipeM::none ? r0 : u(k, j, i);
    const double w0 = w(k, j, i);
    const double zv = n(k, j, i) + beta * z(k, j, i);
    const double sv = w0 + beta * s(k, j, i);
    const double pv = u0 + beta * p(k, j, i);
    z(k, j, i) = zv;
    s(k, j, i) = sv;
    p(k, j, i) = pv;
    x(k, j, i) += alpha * pv;
    const double rv = r0 - alpha * sv;
    r(k, j, i) = rv;
    double uv = rv;
    if constexpr (Pre != PipeM::none) {
      const double qv = m(k, j, i) + beta * q(k, j, i);
      q(k, j, i) = qv;
      uv = u0 - alpha * qv;
      u(k, j, i) = uv;
    }
    const double wv = w0 - alpha * zv;
    w(k, j, i) = wv;
    if constexpr (Pre == PipeM::diag) m(k, j, i) = dinv(k, j, i) * wv;
    acc.v[0] += rv * uv;
    acc.v[1] += wv * uv;
    acc.v[2] += uv * sv;
    acc.v[3] += pv * wv;
    acc.v[4] += pv * sv;
  }
};

/// w = A u and s = A p, for one exchange of u and p.
template <bool ThreeD, class M>
struct MatvecPair {
  Stencil<ThreeD, M> st;
  CellField<M> u, w, p, s;
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i) const {
    w(k, j, i) = st.apply(u, k, j, i);
    s(k, j, i) = st.apply(p, k, j, i);
  }
};

/// PipeUpdate's sums of r, u, w and of p, s as they are.
template <class M>
struct PipeDots {
  CellField<M> r, u, w, p, s;
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i, PipeSums& acc) const {
    const double uv = u(k, j, i), wv = w(k, j, i), pv = p(k, j, i), sv = s(k, j, i);
    acc.v[0] += r(k, j, i) * uv;
    acc.v[1] += wv * uv;
    acc.v[2] += uv * sv;
    acc.v[3] += pv * wv;
    acc.v[4] += pv * sv;
  }
};

}  // namespace kpmap::sim::kernels

namespace kpmap::sim::solvers {

namespace {

template <class Exec>
class PipeCg final : public LinearSolverBase<Exec> {
  KPMAP_SIM_USE_LINEAR_SOLVER_BASE(LinearSolverBase<Exec>);

 public:
  PipeCg(const SolverContext<Exec>& context, const deck::Settings& keys);

 private:
  void iterate(const Operator& A, SolveResult& res) override;
  /// u = M^-1 r, w = A u, s = A p, q = M^-1 s, z = A q, m = M^-1 w from r
  /// and p, and this rank's PipeSums into local_.
  void recompute(const Operator& A);
  /// Enqueues the update of iteration with (alpha, beta), with its local sums.
  void update(const Operator& A, double alpha, double beta);
  /// n = A m, testing the sums in flight between its slabs.
  void operator_while_summing(const Operator& A);
  /// Starts the global sums of local_ and m's halo exchange, after one
  /// fence; wait_sums() returns the sums, the next operator finishes the
  /// exchange.
  void start_sums(const Exec& exec);
  kernels::PipeSums wait_sums();

  long replace_every_;
  /// Restarts from the true residual a solve may make where p.Ap falls to
  /// rounding, before it is a breakdown.
  static constexpr int max_restarts = 8;
  Field u_, w_, m_, n_, p_, s_, q_, z_;
  std::unique_ptr<HaloExchange<double, Exec>> halo_m_, halo_up_, halo_q_;
  // Where the host reads them in place (pinned host memory on a GPU): MPI
  // sums them after a fence, with no copy.
  Kokkos::View<kernels::PipeSums, detail::SumSpace<Exec>> local_{"kpmap::sim::pipecg::local_sums"};
  Request sums_in_flight_;
  bool arrived_ = false;  // the sums in flight have been seen complete
};

template <class Exec>
PipeCg<Exec>::PipeCg(const SolverContext<Exec>& context, const deck::Settings& keys)
    : LinearSolverBase<Exec>(context), replace_every_(keys.integer("pipecg_replace_every")) {
  const auto& l = layout_;
  const auto field = [&](const char* what) {
    return l.template allocate<double, Memory>("kpmap::sim::pipecg::" + std::string(what));
  };
  const bool pre = form_of(options_.preconditioner) != PreconditionerForm::identity;
  w_ = field("w");
  n_ = field("n");
  p_ = field("p");
  s_ = field("s");
  z_ = field("z");
  u_ = pre ? field("u") : r_;
  m_ = pre ? field("m") : w_;
  q_ = pre ? field("q") : s_;
  halo_m_ = std::make_unique<HaloExchange<double, Exec>>(l, std::vector<Field>{m_});
  halo_up_ = std::make_unique<HaloExchange<double, Exec>>(l, std::vector<Field>{u_, p_});
  halo_q_ = std::make_unique<HaloExchange<double, Exec>>(l, std::vector<Field>{q_});
}

template <class Exec>
void PipeCg<Exec>::recompute(const Operator& A) {
  const Exec& exec = A.exec();
  const bool pre = form_of(A.preconditioner()) != PreconditionerForm::identity;
  if (pre) A.precondition(r_, u_);
  A.visit([&](auto st) {
    constexpr bool three = decltype(st)::three_d;
    overlapped_for(exec, "kpmap::sim::pipecg::recompute_ws", layout_,
                   kernels::MatvecPair<three, Memory>{st, u_, w_, p_, s_}, *halo_up_, timings_);
    if (pre) A.precondition(s_, q_);
    overlapped_for(exec, "kpmap::sim::pipecg::recompute_z", layout_,
                   kernels::Matvec<three, Memory>{st, q_, z_}, *halo_q_, timings_);
  });
  if (pre) A.precondition(w_, m_);
  reduce_cells_into<kernels::PipeSums>(exec, "kpmap::sim::pipecg::dots", layout_.interior(),
                                       kernels::PipeDots<Memory>{r_, u_, w_, p_, s_}, local_);
}

template <class Exec>
void PipeCg<Exec>::update(const Operator& A, double alpha, double beta) {
  using kernels::PipeM;
  const Exec& exec = A.exec();
  const Box owned = layout_.interior();
  const char* label = "kpmap::sim::pipecg::update";
  const auto run = [&](auto pre) {
    constexpr PipeM P = decltype(pre)::value;
    reduce_cells_into<kernels::PipeSums>(
        exec, label, owned,
        kernels::PipeUpdate<P, Memory>{x_, r_, u_, w_, m_, n_, p_, s_, q_, z_, A.dinv(), alpha,
                                       beta},
        local_);
  };
  switch (form_of(A.preconditioner())) {
    case PreconditionerForm::identity:
      run(std::integral_constant<PipeM, PipeM::none>{});
      break;
    case PreconditionerForm::pointwise:
      run(std::integral_constant<PipeM, PipeM::diag>{});
      break;
    case PreconditionerForm::apart:
      run(std::integral_constant<PipeM, PipeM::apart>{});
      A.precondition(w_, m_);
      break;
  }
}

template <class Exec>
void PipeCg<Exec>::operator_while_summing(const Operator& A) {
  const auto progress = [this] {
    if (arrived_) return;
    {
      // In a trace: the time MPI spends moving the sums on between the slabs.
      const ProfilingRegion test("kpmap::sim::pipecg::sum_progress");
      if (!sums_in_flight_.test()) return;
    }
    arrived_ = true;  // marked in a trace: the sums completed while the stencil ran
    const ProfilingRegion mark("kpmap::sim::pipecg::sums_arrived");
  };
  A.visit([&](auto st) {
    constexpr bool three = decltype(st)::three_d;
    const kernels::Matvec<three, Memory> matvec{st, m_, n_};
    // m's exchange was posted with the sums (start_sums). Where a launch
    // returns before its kernel ends (device backends), MPI_Test between
    // slabs would run back to back before any of them: one inner kernel.
    if constexpr (kpmap::detail::host_shortcut_v<Exec>) {
      overlapped_for(A.exec(), "kpmap::sim::pipecg::matvec", layout_, matvec, *halo_m_, timings_,
                     progress);
    } else {
      overlapped_for(A.exec(), "kpmap::sim::pipecg::matvec", layout_, matvec, *halo_m_, timings_);
    }
  });
}

template <class Exec>
void PipeCg<Exec>::start_sums(const Exec& exec) {
  constexpr int count = sizeof(kernels::PipeSums) / sizeof(double);
  static_assert(sizeof(kernels::PipeSums) == count * sizeof(double));
  arrived_ = false;
  // m's faces and the local sums both come from the update (or recompute)
  // just enqueued: pack the faces behind it, and the one fence before MPI
  // reads the sums (start_global_sum's) covers the packed faces too; then
  // post m's messages, which the next operator only finishes. One host
  // synchronisation per iteration.
  const double t0 = MPI_Wtime();
  halo_m_->pack(exec);
  timings_.halo_s += MPI_Wtime() - t0;
  sums_in_flight_ =
      start_global_sum(exec, HostValues(reinterpret_cast<double*>(local_.data()), count));
  const double t1 = MPI_Wtime();
  halo_m_->post();
  timings_.halo_s += MPI_Wtime() - t1;
}

template <class Exec>
kernels::PipeSums PipeCg<Exec>::wait_sums() {
  wait_global_sum(sums_in_flight_);
  return local_();
}

template <class Exec>
void PipeCg<Exec>::iterate(const Operator& A, SolveResult& res) {
  const Exec& exec = A.exec();
  recompute(A);
  start_sums(exec);
  // Residual replacement while the error is above sqrt(machine epsilon):
  // below it, a true residual differs from the recurred one by as much as
  // the residual itself (rounding in b - A x), and replacing it would break
  // the conjugacy of the directions; the recurrences then carry the solve
  // to TeaLeaf's 1e-15, as CG's do.
  const double replace_above =
      std::sqrt(std::numeric_limits<double>::epsilon()) * res.initial_residual;
  double gamma_old = 0.0;
  bool fresh = true;  // p starts again as u (beta = 0): the first iteration, a restart
  int restarts = 0;
  double gamma_replaced = std::numeric_limits<double>::infinity();
  for (long n = 1; n <= options_.max_iters; ++n) {
    const ProfilingRegion iteration("kpmap::sim::pipecg::iteration");
    operator_while_summing(A);
    const kernels::PipeSums sums = wait_sums();
    // gamma is r.u of iteration n - 1's residual.
    const double gamma = sums.v[0];
    if (n > 1 && finished(res, n - 1, std::sqrt(std::abs(gamma)))) return;
    const double beta = fresh ? 0.0 : gamma / gamma_old;
    const double pap = sums.v[1] + beta * (sums.v[2] + sums.v[3]) + beta * beta * sums.v[4];
    if (!(pap > 0.0 && std::isfinite(pap))) {
      // Near the attainable accuracy the carried vectors lose A's
      // conjugacy (with jac_block first: its M^-1 is carried too) and p.Ap
      // falls to rounding, of either sign. Start again from the true
      // residual, as CG from x: a few times a solve, then it is a breakdown.
      if (std::isfinite(pap) && std::isfinite(gamma) && restarts < max_restarts) {
        ++restarts;
        update_residual(A);
        recompute(A);
        start_sums(exec);
        fresh = true;
        continue;
      }
      fail(res, n, "broke down (p.Ap = " + sci(pap) + ")");
      return;
    }
    const double alpha = gamma / pap;
    update(A, alpha, beta);
    bool restart = false;
    if (replace_every_ > 0 && n % replace_every_ == 0 &&
        std::sqrt(std::abs(gamma)) > replace_above) {
      // Residual replacement: r from x, the rest from r and p; and where the
      // error has not fallen since the last one, the directions have lost
      // their conjugacy: p starts again as u.
      restart = !(std::abs(gamma) < gamma_replaced);
      gamma_replaced = std::abs(gamma);
      update_residual(A);
      recompute(A);
    }
    start_sums(exec);
    gamma_old = gamma;
    fresh = restart;
  }
  // The last start_sums posted m's exchange too: complete it, so that the
  // plan is free for the next solve.
  halo_m_->finish(exec);
  const double gamma = wait_sums().v[0];
  if (finished(res, options_.max_iters, std::sqrt(std::abs(gamma)))) return;
  exhausted(res);
}

// Its own key, solver.pipecg_replace_every.
deck::Schema pipecg_keys() {
  return deck::Schema("solver").integer(
      "pipecg_replace_every", 50, {0, 1e9}, "",
      "recompute the residual from x and the recurred vectors every this many iterations "
      "while the error is above sqrt(machine epsilon) (residual replacement; 0: never)");
}

}  // namespace

// r, w, n, p, s, z; u, m and q with a preconditioner.
KPMAP_SIM_BUILTIN_SOLVER(pipecg, PipeCg,
                         {"pipecg", "pipelined CG, one overlapped global sum per iteration", 6, 3,
                          pipecg_keys()})

}  // namespace kpmap::sim::solvers
