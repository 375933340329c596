// SPDX-License-Identifier: BSD-3-Clause
/// CG in one pass over memory an iteration, with one global sum: CG's
/// iterates (in exact arithmetic) for the least memory traffic kpmap has.
/// CG's three kernels read and write 12 arrays a cell (the operator 4, r's
/// update 3, x's and p's 5); this method reads x, r, w, p and the face
/// coefficients and writes x, r, w, p once each, 10 arrays in 2-D (11 in
/// 3-D, 11 and 12 with jac_diag), in one kernel:
///
///   r' = r - alpha w, z' = M^-1 r', p' = z' + beta p, x += alpha p,
///   w' = A p' (p' formed at each neighbour from r, w and p there),
///   and this rank's r'.z', z'.w', w'.M^-1 w', p'.w'
///   one global sum of the four: alpha' = r'.z' / p'.w', and
///   beta' = (r'.z' - 2 alpha' z'.w' + alpha'^2 w'.M^-1 w') / r'.z'
///
/// beta' needs r''.z'' before the pass that makes r'' = r' - alpha' w': the
/// sums give it by expanding the square, which is exact algebra (no
/// conjugacy assumed); alpha and the error measure use the true r'.z' of the
/// pass. Neighbours' p' come from r, w and p read there, so all three are
/// exchanged: one message a neighbour, packed behind the pass, so that the
/// fence before the local sums are read is the iteration's one host
/// synchronisation, posted before the global sum and finished before (on a
/// device: under the interior of) the next pass. The iteration that
/// converges has already updated x.
///
/// Two forms of the pass. Where cells run in parallel (a GPU, OpenMP, device
/// paths), p' is formed at each of a cell's neighbours, and r, w and p are
/// kept twice: the pass reads one set and writes the other. On the Serial
/// backend one thread sweeps the slices along the outermost dimension in
/// order (kernels::FusedCgSweep): p' of the slice ahead is written over p
/// there before the slice behind takes w' = A p', so each p' is formed once
/// and r, w, p and x are updated in place. A write then goes to a line the pass has
/// just read; into the other set, the cache would first read it in, which
/// costs what the pass saves (docs/performance.md).
///
/// M is the identity or the diagonal (jac_diag). jac_block's tridiagonal
/// solve cannot be formed at a neighbour on the fly: with it the method runs
/// CG's own iteration.

#include <kpmap/grid/halo.hpp>
#include <kpmap/sim/solvers/cg.hpp>
#include <kpmap/tools/profiling.hpp>

#include <array>
#include <cmath>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace kpmap::sim::kernels {

/// The next direction p' = z' + beta p at a cell, from the previous
/// iteration's r, w and p there (z' = r' without a preconditioner, D^-1 r'
/// with jac_diag; r' = r - alpha w): what the fused pass's operator reads at
/// each neighbour.
template <bool Diag, class M>
struct NextDirection {
  static constexpr bool diag = Diag;
  CellField<M> r, w, p, dinv;
  double alpha, beta;
  KOKKOS_INLINE_FUNCTION double residual(long k, long j, long i) const {
    return r(k, j, i) - alpha * w(k, j, i);
  }
  KOKKOS_INLINE_FUNCTION double preconditioned(double rv, long k, long j, long i) const {
    if constexpr (Diag) {
      return dinv(k, j, i) * rv;
    } else {
      (void)k, (void)j, (void)i;
      return rv;
    }
  }
  KOKKOS_INLINE_FUNCTION double operator()(long k, long j, long i) const {
    return preconditioned(residual(k, j, i), k, j, i) + beta * p(k, j, i);
  }
};

/// One pass's local sums: r'.z' (the error measure and alpha's numerator),
/// z'.w' and w'.M^-1 w' (the next r.z by recurrence), p'.w' (alpha's
/// denominator).
using FusedCgSums = Sums<4>;

/// One iteration of CG in one pass (solvers/fusedcg.cpp): reads r, w, p (in
/// `next`) at the cell and its neighbours, writes r', w', p' into the other
/// set, x in place.
template <bool ThreeD, bool Diag, class M>
struct FusedCgPass {
  Stencil<ThreeD, M> s;
  NextDirection<Diag, M> next;
  CellField<M> x, r_out, w_out, p_out;
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i, FusedCgSums& acc) const {
    const double p_old = next.p(k, j, i);
    const double rv = next.residual(k, j, i);
    const double zv = next.preconditioned(rv, k, j, i);
    const double pv = zv + next.beta * p_old;
    const double wv = s.apply(next, k, j, i);  // every read before the first write
    x(k, j, i) += next.alpha * p_old;
    r_out(k, j, i) = rv;
    p_out(k, j, i) = pv;
    w_out(k, j, i) = wv;
    acc.v[0] += rv * zv;
    acc.v[1] += zv * wv;
    acc.v[2] += wv * next.preconditioned(wv, k, j, i);
    acc.v[3] += pv * wv;
  }
};

#if defined(KPMAP_OPENMP_SIMD) && !defined(_OPENMP)
#define KPMAP_FUSEDCG_SUMS _Pragma("omp simd reduction(+ : zw, wdw, pw)")
#else
#define KPMAP_FUSEDCG_SUMS KPMAP_SIM_INDEPENDENT_ITERATIONS
#endif

/// One iteration of CG in one pass as a serial sweep along the outermost
/// dimension, in place: p' of the slice ahead is written over p there (that
/// slice's p is read for nothing else) before the slice behind it takes
/// w' = A p', so each p' is formed once, r, w, p and x are each read and
/// written once, and every write goes to a line the pass has just read.
/// p' is formed at the ghosts on the sides where a neighbour's cells are;
/// beyond the global boundary the faces carry no conductivity, and p there
/// is read times zero, as CG's operator reads it. Run as one iteration of a
/// Serial reduction.
template <bool ThreeD, bool Diag>
struct FusedCgSweep {
  using M = Kokkos::HostSpace;
  Stencil<ThreeD, M> s;
  NextDirection<Diag, M> next;
  CellField<M> x, r_out, w_out, p_out;
  Box owned;
  /// Whether p' is formed at the ghosts of the low and high side of each
  /// dimension (x, y, z): a neighbour there.
  std::array<std::array<bool, 2>, 3> ghosts;

  /// p' of the row (k, j) over its owned i; where the row is owned, also
  /// p' at its ghost columns beside a neighbour, x += alpha p and r' = r -
  /// alpha w in place, and r'.z' into rz: everything a cell's own r, w and p
  /// give, in the pass that reads them for p'.
  void fill_row(long k, long j, bool update, double& rz) const {
    const long lo = owned.lo[0], hi = owned.hi[0];
    if (!update) {
      KPMAP_SIM_INDEPENDENT_ITERATIONS
      for (long i = lo; i < hi; ++i) p_out(k, j, i) = next(k, j, i);
      return;
    }
    if (ghosts[0][0]) p_out(k, j, lo - 1) = next(k, j, lo - 1);
    if (ghosts[0][1]) p_out(k, j, hi) = next(k, j, hi);
    double sum = 0.0;
    KPMAP_SIM_SUM_ITERATIONS
    for (long i = lo; i < hi; ++i) {
      const double p_old = next.p(k, j, i);
      const double rv = next.residual(k, j, i);
      const double zv = next.preconditioned(rv, k, j, i);
      p_out(k, j, i) = zv + next.beta * p_old;
      x(k, j, i) += next.alpha * p_old;
      r_out(k, j, i) = rv;
      sum += rv * zv;
    }
    rz += sum;
  }
  /// Slice o (along the outermost dimension) of p', ghosts beside
  /// neighbours included (and, where o is owned, x and r' of its owned
  /// rows, r'.z' into acc).
  void fill(long o, FusedCgSums& acc) const {
    constexpr int od = ThreeD ? 2 : 1;
    const bool owned_slice = o >= owned.lo[od] && o < owned.hi[od];
    if (!owned_slice && !ghosts[od][o < owned.lo[od] ? 0 : 1]) return;
    if constexpr (ThreeD) {
      const long lo = owned.lo[1], hi = owned.hi[1];
      if (owned_slice && ghosts[1][0]) fill_row(o, lo - 1, false, acc.v[0]);
      for (long j = lo; j < hi; ++j) fill_row(o, j, owned_slice, acc.v[0]);
      if (owned_slice && ghosts[1][1]) fill_row(o, hi, false, acc.v[0]);
    } else {
      fill_row(owned.lo[2], o, owned_slice, acc.v[0]);
    }
  }
  /// The row (k, j): w' = A p' (p' there and at the neighbours already
  /// formed), the sums that need w'. r' is the fill's.
  void cells(long k, long j, FusedCgSums& acc) const {
    double zw = 0.0, wdw = 0.0, pw = 0.0;
    const long lo = owned.lo[0], hi = owned.hi[0];
    KPMAP_FUSEDCG_SUMS
    for (long i = lo; i < hi; ++i) {
      const double zv = next.preconditioned(r_out(k, j, i), k, j, i);
      const double pv = p_out(k, j, i);
      const double wv = s.apply(p_out, k, j, i);
      w_out(k, j, i) = wv;
      zw += zv * wv;
      wdw += wv * next.preconditioned(wv, k, j, i);
      pw += pv * wv;
    }
    acc.v[1] += zw;
    acc.v[2] += wdw;
    acc.v[3] += pw;
  }
  /// Slices a block: p' is formed a block of slices ahead of the operator,
  /// whose pass over the block then finds the rows the fill read and wrote
  /// (about 128 KiB of each array) still in the core's own cache, instead of
  /// switching between the two loops every row.
  long block() const {
    constexpr long block_cells = 16384;
    long slice = owned.hi[0] - owned.lo[0];
    if constexpr (ThreeD) slice *= owned.hi[1] - owned.lo[1];
    return slice < block_cells ? block_cells / slice : 1;
  }
  void operator()(long, FusedCgSums& acc) const {
    constexpr int od = ThreeD ? 2 : 1;
    const long lo = owned.lo[od], hi = owned.hi[od], n = block();
    fill(lo - 1, acc);
    fill(lo, acc);
    for (long first = lo; first < hi; first += n) {
      const long last = first + n < hi ? first + n : hi;  // the block's end
      for (long o = first + 1; o <= last; ++o) fill(o, acc);
      for (long o = first; o < last; ++o) {
        if constexpr (ThreeD) {
          for (long j = owned.lo[1]; j < owned.hi[1]; ++j) cells(o, j, acc);
        } else {
          cells(owned.lo[2], o, acc);
        }
      }
    }
  }
};

}  // namespace kpmap::sim::kernels

namespace kpmap::sim::solvers {

namespace {

/// Whether the pass runs as kernels::FusedCgSweep, in place: on the Serial
/// backend with the host shortcut, where one thread walks the slices in order.
template <class Exec>
constexpr bool serial_sweep() {
#if defined(KOKKOS_ENABLE_SERIAL)
  return std::is_same_v<Exec, Kokkos::Serial> && ::kpmap::detail::host_shortcut_v<Exec>;
#else
  return false;
#endif
}

template <class Exec>
class FusedCg final : public Cg<Exec> {
  KPMAP_SIM_USE_CG_BASE(Cg<Exec>);

 public:
  explicit FusedCg(const SolverContext<Exec>& context);

 private:
  void iterate(const Operator& A, SolveResult& res) override;
  /// The fused pass from r_, w_, p_ (r_ alone, as all three, with alpha =
  /// beta = 0, on the `first`) into the other set, which then becomes
  /// r_, w_, p_ (on the Serial backend: in place), with its exchange posted;
  /// returns the global sums.
  kernels::FusedCgSums pass(const Operator& A, double alpha, double beta, bool first);
  /// Calls f(stencil, next): the operator's stencil and the pass's
  /// NextDirection (D^-1 applied with jac_diag), each its own type.
  template <class F>
  void with_pass(const Operator& A, double alpha, double beta, bool first, const F& f) const {
    A.visit([&](auto st) {
      const auto run = [&](auto diag) {
        constexpr bool D = decltype(diag)::value;
        f(st, kernels::NextDirection<D, Memory>{r_, first ? r_ : w_, first ? r_ : p_, dinv_, alpha,
                                                beta});
      };
      if (form_of(A.preconditioner()) == PreconditionerForm::pointwise) {
        run(std::true_type{});
      } else {
        run(std::false_type{});
      }
    });
  }
  /// Completes the exchange the last pass posted (the plan is then free for
  /// the next solve).
  void settle(const Exec& exec) {
    if (halo_[current_]->in_flight()) halo_[current_]->finish(exec);
  }

  Field r2_, w2_, p2_;  // the other set
  // The operator's D^-1 with its ghosts (jac_diag): the pass forms z' at the
  // neighbours, and the operator holds D^-1 only where it has the faces.
  Field dinv_;
  std::unique_ptr<HaloExchange<double, Exec>> halo_dinv_;
  std::unique_ptr<HaloExchange<double, Exec>> halo_[2];
  int current_ = 0;  // the plan whose fields r_, w_, p_ are now
  DeviceSums<kernels::FusedCgSums, Exec> pass_sums_{"kpmap::sim::fusedcg::local_sums"};
  // The serial sweep's sums.
  Kokkos::View<kernels::FusedCgSums, Kokkos::HostSpace> sweep_sums_;
};

template <class Exec>
FusedCg<Exec>::FusedCg(const SolverContext<Exec>& context)
    : Cg<Exec>(context, form_of(context.options.preconditioner) == PreconditionerForm::apart) {
  const auto field = [&](const char* what) {
    return layout_.template allocate<double, Memory>("kpmap::sim::fusedcg::" + std::string(what));
  };
  halo_[0] = std::make_unique<HaloExchange<double, Exec>>(layout_, std::vector<Field>{r_, w_, p_});
  if constexpr (serial_sweep<Exec>()) {
    sweep_sums_ =
        Kokkos::View<kernels::FusedCgSums, Kokkos::HostSpace>("kpmap::sim::fusedcg::sweep_sums");
  } else {
    r2_ = field("r2");
    w2_ = field("w2");
    p2_ = field("p2");
    halo_[1] =
        std::make_unique<HaloExchange<double, Exec>>(layout_, std::vector<Field>{r2_, w2_, p2_});
  }
  if (form_of(options_.preconditioner) == PreconditionerForm::pointwise) {
    dinv_ = field("dinv");
    halo_dinv_ = std::make_unique<HaloExchange<double, Exec>>(layout_, std::vector<Field>{dinv_});
  }
}

template <class Exec>
kernels::FusedCgSums FusedCg<Exec>::pass(const Operator& A, double alpha, double beta, bool first) {
  const Exec& exec = A.exec();
  const char* label = "kpmap::sim::fusedcg::pass";
  if constexpr (serial_sweep<Exec>()) {
    HaloExchange<double, Exec>& halo = *halo_[0];
    const bool neighbours = halo.neighbor_count() > 0;
    double t0 = MPI_Wtime();
    if (halo.in_flight()) {
      halo.finish(exec);
    } else if (neighbours) {
      halo.exchange(exec);
    }
    timings_.halo_s += MPI_Wtime() - t0;
    std::array<std::array<bool, 2>, 3> ghosts{};
    for (int d = 0; d < layout_.ndim(); ++d) {
      for (int side = 0; side < 2; ++side) ghosts[d][side] = !layout_.physical_boundary(d, side);
    }
    with_pass(A, alpha, beta, first, [&](auto st, auto next) {
      constexpr bool three = decltype(st)::three_d;
      constexpr bool D = decltype(next)::diag;
      Kokkos::parallel_reduce(
          label, Kokkos::RangePolicy<Exec>(exec, 0, 1),
          kernels::FusedCgSweep<three, D>{st, next, x_, r_, w_, p_, layout_.interior(), ghosts},
          Kokkos::Sum<kernels::FusedCgSums, Kokkos::HostSpace>(sweep_sums_));
    });
    // The faces packed behind the sweep; one fence for them and the sums.
    t0 = MPI_Wtime();
    if (neighbours) halo.pack(exec);
    ::kpmap::detail::fence(exec, "kpmap::sim: local sums to the host");
    kernels::FusedCgSums sums = sweep_sums_();
    if (neighbours) halo.post();
    timings_.halo_s += MPI_Wtime() - t0;
    global_sums(sums.v, 4);
    return sums;
  }
  with_pass(A, alpha, beta, first, [&](auto st, auto next) {
    constexpr bool three = decltype(st)::three_d;
    constexpr bool D = decltype(next)::diag;
    overlapped_reduce(exec, label, layout_,
                      kernels::FusedCgPass<three, D, Memory>{st, next, x_, r2_, w2_, p2_},
                      *halo_[current_], pass_sums_, timings_);
  });
  // The new set's faces are packed behind the pass: the fence before the
  // host reads the local sums is the one MPI needs before it reads them.
  HaloExchange<double, Exec>& halo_next = *halo_[1 - current_];
  const bool neighbours = halo_next.neighbor_count() > 0;
  double t0 = MPI_Wtime();
  if (neighbours) halo_next.pack(exec);
  timings_.halo_s += MPI_Wtime() - t0;
  kernels::FusedCgSums sums = pass_sums_.fetch(exec);
  t0 = MPI_Wtime();
  if (neighbours) halo_next.post();
  timings_.halo_s += MPI_Wtime() - t0;
  std::swap(r_, r2_);
  std::swap(w_, w2_);
  std::swap(p_, p2_);
  current_ = 1 - current_;
  global_sums(sums.v, 4);
  return sums;
}

template <class Exec>
void FusedCg<Exec>::iterate(const Operator& A, SolveResult& res) {
  if (form_of(A.preconditioner()) == PreconditionerForm::apart) {
    Cg<Exec>::iterate(A, res);
    return;
  }
  const Exec& exec = A.exec();
  if (halo_dinv_) {
    for_cells(exec, "kpmap::sim::fusedcg::dinv", layout_.interior(),
              kernels::Copy<Memory>{dinv_, A.dinv()});
    timed_exchange(exec, *halo_dinv_, timings_);
  }
  kernels::FusedCgSums sums = pass(A, 0.0, 0.0, true);  // p = z = M^-1 r, w = A p
  for (long n = 1; n <= options_.max_iters; ++n) {
    const ProfilingRegion iteration("kpmap::sim::fusedcg::iteration");
    const double rz = sums.v[0];
    const double pw = sums.v[3];
    if (!(pw > 0.0 && std::isfinite(pw))) {
      settle(exec);
      fail(res, n, "broke down (p.Ap = " + sci(pw) + ")");
      return;
    }
    const double alpha = rz / pw;
    // r''.z'' of r'' = r' - alpha w', by the square expanded; rounding can
    // leave it at or below zero only where r'' is at rounding level, and
    // then the next direction restarts from z''.
    const double rz_next = rz - 2.0 * alpha * sums.v[1] + alpha * alpha * sums.v[2];
    const double beta = rz_next > 0.0 ? rz_next / rz : 0.0;
    sums = pass(A, alpha, beta, false);
    if (finished(res, n, std::sqrt(std::abs(sums.v[0])))) {
      settle(exec);
      return;
    }
  }
  settle(exec);
  exhausted(res);
}

}  // namespace

// r, p, w (CG's) and the other set r2, w2, p2 (none on the Serial backend);
// with a preconditioner, D^-1 with its ghosts (jac_diag) or CG's z (jac_block).
KPMAP_SIM_BUILTIN_SOLVER(fusedcg, FusedCg,
                         {"fusedcg", "CG in one pass over memory an iteration, one global sum", 6,
                          1})

}  // namespace kpmap::sim::solvers
