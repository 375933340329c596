// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief The backward-Euler heat-conduction operator, matrix-free, and the
/// fused kernels the solvers are built from.
///
/// Units and scaling: u is the energy density (density x specific energy) in
/// each cell. A face between cells c and c' carries the scaled conductivity
/// a = dt K / h^2 (h the cell width across the face, K the face conductivity
/// from sim::Coefficient), zero on the boundary of the global domain (no heat
/// flows out: reflective walls). One time step of backward Euler solves
///
///   (A u)_c = u_c + sum over faces f of c: a_f (u_c - u_neighbour(f)) = u0_c,
///
/// A symmetric and positive definite with diagonal 1 + sum_f a_f. The scaled
/// conductivities of the x, y and z faces are stored in fields ax, ay, az:
/// ax(k, j, i) belongs to the face between cells i-1 and i (TeaLeaf's Kx).

#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/sim/loops.hpp>

#include <Kokkos_Core.hpp>

namespace kpmap::sim {

/// \brief The operator's coefficients: read (A p) at one cell.
template <bool ThreeD, class M>
struct Stencil {
  static constexpr bool three_d = ThreeD;
  using Field = CellField<M>;
  Field ax, ay, az;

  /// \brief 1 + the sum of the scaled conductivities of the cell's faces.
  KOKKOS_INLINE_FUNCTION double diagonal(long k, long j, long i) const {
    double d = 1.0 + ax(k, j, i) + ax(k, j, i + 1) + ay(k, j, i) + ay(k, j + 1, i);
    if constexpr (ThreeD) d += az(k, j, i) + az(k + 1, j, i);
    return d;
  }

  /// \brief The sum over the cell's faces of a_f p(neighbour), and the
  /// diagonal in `diag`; p's neighbours must be current.
  KOKKOS_INLINE_FUNCTION double neighbours(const Field& p, long k, long j, long i,
                                           double& diag) const {
    const double xl = ax(k, j, i);
    const double xh = ax(k, j, i + 1);
    const double yl = ay(k, j, i);
    const double yh = ay(k, j + 1, i);
    diag = 1.0 + xl + xh + yl + yh;
    double off =
        xl * p(k, j, i - 1) + xh * p(k, j, i + 1) + yl * p(k, j - 1, i) + yh * p(k, j + 1, i);
    if constexpr (ThreeD) {
      const double zl = az(k, j, i);
      const double zh = az(k + 1, j, i);
      diag += zl + zh;
      off += zl * p(k - 1, j, i) + zh * p(k + 1, j, i);
    }
    return off;
  }

  /// \brief (A p) at cell (k, j, i); p's neighbours must be current.
  /// Written as the flux sum p_c + sum_f a_f (p_c - p_f): each coefficient
  /// and neighbour is used once, so a vectorised loop loads each once (the
  /// diagonal form 'diagonal() p_c - neighbours()' reads the coefficients
  /// twice, and the compiler folds a second load into each use), and the
  /// differences of nearly equal neighbours lose less to rounding.
  /// `p` is a Field, or anything called as p(k, j, i) for a value (a
  /// vector formed on the fly from others: solvers/fusedcg.cpp).
  template <class P>
  KOKKOS_INLINE_FUNCTION double apply(const P& p, long k, long j, long i) const {
    return with_fluxes<1>(p, k, j, i);
  }

  /// \brief p_c - sum_f a_f (p_c - p_f) = ((2 I - A) p) at cell (k, j, i):
  /// one explicit (FTCS) step, in the same flux form as apply().
  KOKKOS_INLINE_FUNCTION double step(const Field& p, long k, long j, long i) const {
    return with_fluxes<-1>(p, k, j, i);
  }

 private:
  /// p_c + Sign sum_f a_f (p_c - p_f), with the difference negated exactly
  /// for Sign = -1 (p_f - p_c), so both forms are one chain of fused adds.
  template <int Sign>
  KOKKOS_INLINE_FUNCTION static double diff(double c, double f) {
    return Sign > 0 ? c - f : f - c;
  }
  template <int Sign, class P>
  KOKKOS_INLINE_FUNCTION double with_fluxes(const P& p, long k, long j, long i) const {
    const double c = p(k, j, i);
    double v = c + ax(k, j, i) * diff<Sign>(c, p(k, j, i - 1)) +
               ax(k, j, i + 1) * diff<Sign>(c, p(k, j, i + 1)) +
               ay(k, j, i) * diff<Sign>(c, p(k, j - 1, i)) +
               ay(k, j + 1, i) * diff<Sign>(c, p(k, j + 1, i));
    if constexpr (ThreeD) {
      v += az(k, j, i) * diff<Sign>(c, p(k - 1, j, i)) +
           az(k + 1, j, i) * diff<Sign>(c, p(k + 1, j, i));
    }
    return v;
  }
};

namespace kernels {

/// r = b - A x; acc += r^2.
template <bool ThreeD, class M>
struct Residual {
  Stencil<ThreeD, M> s;
  CellField<M> x, b, r;
  /// Without a reduction: only r.
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i) const {
    r(k, j, i) = b(k, j, i) - s.apply(x, k, j, i);
  }
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i, double& acc) const {
    const double v = b(k, j, i) - s.apply(x, k, j, i);
    r(k, j, i) = v;
    acc += v * v;
  }
};

/// w = A p; acc += p w.
template <bool ThreeD, class M>
struct MatvecDot {
  Stencil<ThreeD, M> s;
  CellField<M> p, w;
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i, double& acc) const {
    const double c = p(k, j, i);  // read before w is written: no second load
    const double v = s.apply(p, k, j, i);
    w(k, j, i) = v;
    acc += c * v;
  }
};

/// w = A p (no reduction).
template <bool ThreeD, class M>
struct Matvec {
  Stencil<ThreeD, M> s;
  CellField<M> p, w;
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i) const {
    w(k, j, i) = s.apply(p, k, j, i);
  }
};

/// r -= alpha w; then z = M^-1 r for the diagonal (Jacobi) preconditioner
/// when `Diag` (else z is r itself); acc += r z (or r^2). The matching
/// x += alpha p waits for UpdateXP, which reads p anyway. Diag is a template
/// parameter so that the row loop has no branch and its sum vectorises.
template <bool Diag, class M>
struct UpdateR {
  CellField<M> r, w, z, dinv;
  double alpha;
  /// Without a reduction: only r.
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i) const {
    r(k, j, i) -= alpha * w(k, j, i);
  }
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i, double& acc) const {
    const double rv = r(k, j, i) - alpha * w(k, j, i);
    r(k, j, i) = rv;
    if constexpr (Diag) {
      const double zv = dinv(k, j, i) * rv;
      z(k, j, i) = zv;
      acc += rv * zv;
    } else {
      acc += rv * rv;
    }
  }
};

/// x += alpha p (with the old p); p = z + beta p.
template <class M>
struct UpdateXP {
  CellField<M> x, p, z;
  double alpha, beta;
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i) const {
    const double pv = p(k, j, i);
    x(k, j, i) += alpha * pv;
    p(k, j, i) = z(k, j, i) + beta * pv;
  }
};

/// p = z + beta p.
template <class M>
struct UpdateP {
  CellField<M> p, z;
  double beta;
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i) const {
    p(k, j, i) = z(k, j, i) + beta * p(k, j, i);
  }
};

/// z = dinv r; acc += r z.
template <class M>
struct DiagPrecond {
  CellField<M> r, z, dinv;
  /// Without a reduction: only z.
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i) const {
    z(k, j, i) = dinv(k, j, i) * r(k, j, i);
  }
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i, double& acc) const {
    const double v = dinv(k, j, i) * r(k, j, i);
    z(k, j, i) = v;
    acc += r(k, j, i) * v;
  }
};

/// acc += a b.
template <class M>
struct Dot {
  CellField<M> a, b;
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i, double& acc) const {
    acc += a(k, j, i) * b(k, j, i);
  }
};

/// dst = src.
template <class M>
struct Copy {
  CellField<M> dst, src;
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i) const {
    dst(k, j, i) = src(k, j, i);
  }
};

/// dst = scale src.
template <class M>
struct Scale {
  CellField<M> dst, src;
  double scale;
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i) const {
    dst(k, j, i) = scale * src(k, j, i);
  }
};

/// One explicit (FTCS) step: x = xold - (A - I) xold.
template <bool ThreeD, class M>
struct ExplicitStep {
  Stencil<ThreeD, M> s;
  CellField<M> x, xold;
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i) const {
    x(k, j, i) = s.step(xold, k, j, i);
  }
};

/// acc = max over cells of (diagonal - 1): the largest sum of a cell's
/// scaled face conductivities (FTCS is stable while it is at most 1).
template <bool ThreeD, class M>
struct MaxFaceSum {
  Stencil<ThreeD, M> s;
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i, double& acc) const {
    const double v = s.diagonal(k, j, i) - 1.0;
    if (v > acc) acc = v;
  }
};

/// dinv = 1 / diagonal (the diagonal preconditioner).
template <bool ThreeD, class M>
struct DiagonalInverse {
  Stencil<ThreeD, M> s;
  CellField<M> dinv;
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i) const {
    dinv(k, j, i) = 1.0 / s.diagonal(k, j, i);
  }
};

/// The block-Jacobi preconditioner's blocks: the rows of y-columns of
/// `block` cells starting at global y indices divisible by `block` (clipped
/// to this rank's rows), each a tridiagonal system solved exactly. Called as
/// (k, b, i) for column block b.
template <bool ThreeD>
struct ColumnBlocks {
  static constexpr long block = 4;
  long first;  ///< local j of this rank's first owned row
  long head;   ///< rows in block 0 (up to the first global multiple of `block`)
  long end;    ///< one past this rank's last owned row
  KOKKOS_INLINE_FUNCTION long begin_of(long b) const {
    return b == 0 ? first : first + head + (b - 1) * block;
  }
  KOKKOS_INLINE_FUNCTION long end_of(long b) const {
    const long e = b == 0 ? first + head : begin_of(b) + block;
    return e < end ? e : end;
  }
};

/// Factorises every block once per operator (Thomas algorithm): cp holds the
/// modified super-diagonal, bfp the inverse pivots.
template <bool ThreeD, class M>
struct BlockFactor {
  Stencil<ThreeD, M> s;
  ColumnBlocks<ThreeD> blocks;
  CellField<M> cp, bfp;
  KOKKOS_INLINE_FUNCTION void operator()(long k, long b, long i) const {
    const long j0 = blocks.begin_of(b);
    const long j1 = blocks.end_of(b);
    double prev_cp = 0.0;
    for (long j = j0; j < j1; ++j) {
      // Coupling to the row below (inside the block) and above.
      const double lower = j > j0 ? -s.ay(k, j, i) : 0.0;
      const double upper = j + 1 < j1 ? -s.ay(k, j + 1, i) : 0.0;
      const double pivot = 1.0 / (s.diagonal(k, j, i) - lower * prev_cp);
      bfp(k, j, i) = pivot;
      prev_cp = upper * pivot;
      cp(k, j, i) = prev_cp;
    }
  }
};

/// z = (block-diagonal part of A)^-1 r with the factors of BlockFactor.
template <bool ThreeD, class M>
struct BlockSolve {
  Stencil<ThreeD, M> s;
  ColumnBlocks<ThreeD> blocks;
  CellField<M> cp, bfp, r, z;
  KOKKOS_INLINE_FUNCTION void operator()(long k, long b, long i) const {
    const long j0 = blocks.begin_of(b);
    const long j1 = blocks.end_of(b);
    double prev = 0.0;
    for (long j = j0; j < j1; ++j) {
      const double lower = j > j0 ? -s.ay(k, j, i) : 0.0;
      prev = (r(k, j, i) - lower * prev) * bfp(k, j, i);
      z(k, j, i) = prev;
    }
    for (long j = j1 - 2; j >= j0; --j) z(k, j, i) -= cp(k, j, i) * z(k, j + 1, i);
  }
};

}  // namespace kernels

}  // namespace kpmap::sim
