// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief sim::HeatOperator: the coefficients of one backward-Euler step on
/// this rank's block (scaled face conductivities, preconditioner data), and
/// the kernels that apply them with the halo exchange overlapped.

#include <kpmap/base/error.hpp>
#include <kpmap/grid/halo.hpp>
#include <kpmap/sim/config.hpp>
#include <kpmap/sim/loops.hpp>
#include <kpmap/sim/stencil.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>
#include <type_traits>

#include <mpi.h>

namespace kpmap::sim {

/// \brief Seconds this rank spent in halo exchanges and in global
/// reductions (accumulated; the rest of a step is compute).
struct Timings {
  double halo_s = 0.0;
  double collectives_s = 0.0;
};

/// \brief How a solver's vector update takes the preconditioner z = M^-1 r:
/// not at all (z is r), as a pointwise scale fused into the update's own
/// kernel (z = D^-1 r, HeatOperator::dinv), or applied apart after it
/// (HeatOperator::precondition: a block solve). The one place that sorts the
/// preconditioners for the solvers: a new one is a compile error here
/// (-Wswitch) until it says its form, and every solver then applies it.
enum class PreconditionerForm { identity, pointwise, apart };

/// \brief The form of `p`. \throws kpmap::Error for a value that is none of
/// the preconditioners.
inline PreconditionerForm form_of(Preconditioner p) {
  switch (p) {
    case Preconditioner::none:
      return PreconditionerForm::identity;
    case Preconditioner::jac_diag:
      return PreconditionerForm::pointwise;
    case Preconditioner::jac_block:
      return PreconditionerForm::apart;
  }
  throw Error("kpmap::sim: preconditioner " + std::to_string(static_cast<int>(p)) +
              " is none of those the solvers know");
}

/// \brief The matrix-free operator A = I + dt L of sim/stencil.hpp on one
/// rank's block, on execution space Exec (sim/spaces.hpp), its fields in
/// Exec's memory.
template <class Exec = Kokkos::DefaultExecutionSpace>
class HeatOperator {
  KPMAP_SIM_REQUIRE_COMPILED_SPACE(Exec);

 public:
  using Memory = typename Exec::memory_space;
  using Field = CellField<Memory>;

  /// \brief Allocates the coefficient fields for `layout`; every kernel of
  /// the operator runs on `exec`. Not collective.
  HeatOperator(const CartesianLayout& layout, Preconditioner preconditioner,
               const Exec& exec = Exec());

  /// \brief Computes the scaled face conductivities dt K / h^2 from
  /// `density` (whose ghosts must hold the neighbours' values), zero on the
  /// global boundary, and the preconditioner's data. Not collective.
  void assemble(const Field& density, double dt, const std::array<double, 3>& spacing,
                Coefficient coefficient);

  const CartesianLayout& layout() const noexcept { return layout_; }
  bool three_d() const noexcept { return layout_.ndim() == 3; }
  Preconditioner preconditioner() const noexcept { return preconditioner_; }
  /// \brief The execution space instance the operator's kernels run on.
  const Exec& exec() const noexcept { return exec_; }
  /// \brief The cells this rank owns.
  Box owned() const noexcept { return layout_.interior(); }

  /// \brief Calls f(Stencil<false>) in 2-D or f(Stencil<true>) in 3-D.
  template <class F>
  decltype(auto) visit(F&& f) const {
    if (three_d()) return f(Stencil<true, Memory>{ax_, ay_, az_});
    return f(Stencil<false, Memory>{ax_, ay_, az_});
  }

  /// \brief z = M^-1 r on the owned cells (M: identity, diagonal, or
  /// tridiagonal y-blocks).
  void precondition(const Field& r, const Field& z) const;

  /// \brief As precondition, and adds the local sum of r z to `rz` (in the
  /// same kernel with jac_diag).
  void precondition(const Field& r, const Field& z, DeviceSums<double, Exec>& rz) const;

  /// \brief z = M^-1 r on `box`, which may reach into the ghost layers (all
  /// but the outermost): none and jac_diag only.
  void precondition_box(const Field& r, const Field& z, const Box& box) const;

  /// \brief The largest sum of scaled face conductivities over this rank's
  /// cells (local; FTCS is stable while the global maximum is <= 1).
  double max_face_sum() const;

  Field dinv() const noexcept { return dinv_; }

 private:
  CartesianLayout layout_;
  Preconditioner preconditioner_;
  Exec exec_;
  Field ax_, ay_, az_;
  Field dinv_, cp_, bfp_;
  long block_head_ = 0;
  long block_count_ = 0;
};

/// \brief The owned cells split for overlap: the inner box reads no ghost
/// that an exchange fills, the faces (one layer at each side with a
/// neighbour) do.
inline Shell exchange_shell(const CartesianLayout& layout) {
  bool peel[3][2] = {};
  for (int d = 0; d < layout.ndim(); ++d) {
    for (int side = 0; side < 2; ++side) peel[d][side] = !layout.physical_boundary(d, side);
  }
  return shell_of(layout.interior(), peel);
}

/// \brief Enqueues a reducing kernel over the owned cells on `exec` while
/// `halo` fills the ghosts it reads: start, the cells one layer in from the
/// block's faces with a neighbour, finish, then that layer. Each part adds its
/// local sum to `sums` (read with sums.fetch; V is double or Sums<N>); nothing
/// waits but the exchange (the fence before MPI reads the packed faces). An
/// exchange its caller already posted (`halo.in_flight()`) is only finished.
/// Time in the exchange goes to `t.halo_s`.
template <class Exec, class K, class V>
void overlapped_reduce(const Exec& exec, const char* label, const CartesianLayout& layout,
                       const K& kernel, HaloExchange<double, Exec>& halo, DeviceSums<V, Exec>& sums,
                       Timings& t) {
  const Box owned = layout.interior();
  if (halo.neighbor_count() == 0) {
    sums.add(exec, label, owned, kernel);
    return;
  }
  double t0 = MPI_Wtime();
  if (!halo.in_flight()) halo.start(exec);
  t.halo_s += MPI_Wtime() - t0;
  const Shell shell = exchange_shell(layout);
  sums.add(exec, label, shell.inner, kernel);
  t0 = MPI_Wtime();
  halo.finish(exec);  // the faces' kernels follow the unpacking on `exec`
  t.halo_s += MPI_Wtime() - t0;
  for (int f = 0; f < shell.count; ++f) sums.add(exec, label, shell.faces[f], kernel);
}

/// \brief The slabs an overlapped kernel's inner box runs in when something
/// else waits on MPI meanwhile (overlapped_for's `between`).
inline constexpr int progress_slabs = 4;

/// \brief As overlapped_reduce, for a kernel without a reduction. An
/// exchange its caller already posted (HaloExchange::pack, a fence the
/// caller needed anyway, post: `halo.in_flight()`) is only finished. With
/// `between` (a callable), the inner box runs in progress_slabs slabs
/// along the outermost dimension and between() is called after each: an
/// MPI_Test there moves a non-blocking reduction on while the stencil runs,
/// since MPI progresses it only inside MPI calls (no progress thread). That
/// helps only where a launch returns when its kernel is done (host
/// backends): callers pass no `between` on device backends.
template <class Exec, class K, class Between = std::nullptr_t>
void overlapped_for(const Exec& exec, const char* label, const CartesianLayout& layout,
                    const K& kernel, HaloExchange<double, Exec>& halo, Timings& t,
                    const Between& between = nullptr) {
  constexpr bool progress = !std::is_same_v<Between, std::nullptr_t>;
  const Box owned = layout.interior();
  if (halo.neighbor_count() == 0) {
    for_cells(exec, label, owned, kernel);
    if constexpr (progress) between();
    return;
  }
  double t0 = MPI_Wtime();
  if (!halo.in_flight()) halo.start(exec);
  t.halo_s += MPI_Wtime() - t0;
  const Shell shell = exchange_shell(layout);
  if constexpr (progress) {
    const int d = layout.ndim() - 1;  // the outermost dimension: whole rows in each slab
    const long lo = shell.inner.lo[d];
    const long extent = shell.inner.hi[d] - lo;
    for (int slab = 0; slab < progress_slabs; ++slab) {
      Box part = shell.inner;
      part.lo[d] = lo + extent * slab / progress_slabs;
      part.hi[d] = lo + extent * (slab + 1) / progress_slabs;
      for_cells(exec, label, part, kernel);
      between();
    }
  } else {
    for_cells(exec, label, shell.inner, kernel);
  }
  t0 = MPI_Wtime();
  halo.finish(exec);
  t.halo_s += MPI_Wtime() - t0;
  for (int f = 0; f < shell.count; ++f) for_cells(exec, label, shell.faces[f], kernel);
}

/// \brief A plain exchange on `exec`, timed into `t.halo_s`: work enqueued on
/// `exec` afterwards sees the ghosts.
template <class Exec>
void timed_exchange(const Exec& exec, HaloExchange<double, Exec>& halo, Timings& t) {
  const double t0 = MPI_Wtime();
  halo.exchange(exec);
  t.halo_s += MPI_Wtime() - t0;
}

}  // namespace kpmap::sim
