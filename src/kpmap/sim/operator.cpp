// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/sim/operator.hpp>

namespace kpmap::sim {

namespace {

/// Scaled conductivity of every face whose two cells lie inside the global
/// grid; zero elsewhere (the global boundary, and faces beyond it).
template <bool ThreeD, class M>
struct FaceCoefficients {
  CellField<M> density, ax, ay, az;
  double rx, ry, rz;  // dt / h^2
  bool inverse;       // Coefficient::inverse_density
  long gx, gy, gz;    // local index of the first owned cell along x, y, z
  long ox, oy, oz;    // global offsets of the block
  long nx, ny, nz;    // global cells

  // TeaLeaf's face coefficient from the two cells' w (w = density, or its
  // inverse): (w1 + w2) / (2 w1 w2), the mean of 1/w.
  KOKKOS_INLINE_FUNCTION double conductivity(double rho1, double rho2) const {
    const double w1 = inverse ? 1.0 / rho1 : rho1;
    const double w2 = inverse ? 1.0 / rho2 : rho2;
    return (w1 + w2) / (2.0 * w1 * w2);
  }

  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i) const {
    const long gi = ox + i - gx;
    const long gj = oy + j - gy;
    const long gk = oz + k - gz;
    const bool in_x = gi >= 0 && gi < nx;
    const bool in_y = gj >= 0 && gj < ny;
    const bool in_z = gk >= 0 && gk < nz;
    const double rho = density(k, j, i);
    ax(k, j, i) = i >= 1 && gi >= 1 && in_x && in_y && in_z
                      ? rx * conductivity(density(k, j, i - 1), rho)
                      : 0.0;
    ay(k, j, i) = j >= 1 && gj >= 1 && in_x && in_y && in_z
                      ? ry * conductivity(density(k, j - 1, i), rho)
                      : 0.0;
    if constexpr (ThreeD) {
      az(k, j, i) = k >= 1 && gk >= 1 && in_x && in_y && in_z
                        ? rz * conductivity(density(k - 1, j, i), rho)
                        : 0.0;
    }
  }
};

Box whole(const CartesianLayout& l) {
  Box b;
  for (int d = 0; d < 3; ++d) b.hi[d] = static_cast<long>(l.extent(d));
  return b;
}

}  // namespace

template <class Exec>
HeatOperator<Exec>::HeatOperator(const CartesianLayout& layout, Preconditioner preconditioner,
                                 const Exec& exec)
    : layout_(layout), preconditioner_(preconditioner), exec_(exec) {
  ax_ = layout.allocate<double, Memory>("kpmap::sim::ax");
  ay_ = layout.allocate<double, Memory>("kpmap::sim::ay");
  // 2-D operators never read az; a 1 x 1 x 1 placeholder keeps the View valid.
  az_ = layout.ndim() == 3 ? layout.allocate<double, Memory>("kpmap::sim::az")
                           : Field("kpmap::sim::az", 1, 1, 1);
  if (preconditioner == Preconditioner::jac_diag) {
    dinv_ = layout.allocate<double, Memory>("kpmap::sim::dinv");
  } else if (preconditioner == Preconditioner::jac_block) {
    cp_ = layout.allocate<double, Memory>("kpmap::sim::block_cp");
    bfp_ = layout.allocate<double, Memory>("kpmap::sim::block_bfp");
    // Blocks of 4 rows start at global y indices divisible by 4.
    const long block = kernels::ColumnBlocks<false>::block;
    const long rows = static_cast<long>(layout.local_cells(1));
    const long into = static_cast<long>(layout.offset(1)) % block;
    block_head_ = std::min(rows, into == 0 ? block : block - into);
    block_count_ = 1 + (rows - block_head_ + block - 1) / block;
  }
}

template <class Exec>
void HeatOperator<Exec>::assemble(const Field& density, double dt,
                                  const std::array<double, 3>& spacing, Coefficient coefficient) {
  const auto& l = layout_;
  auto h2 = [&](int d) { return spacing[d] * spacing[d]; };
  const double rz = l.ndim() == 3 ? dt / h2(2) : 0.0;
  auto run = [&](auto tag) {
    constexpr bool three = decltype(tag)::value;
    FaceCoefficients<three, Memory> f{density,
                                      ax_,
                                      ay_,
                                      az_,
                                      dt / h2(0),
                                      dt / h2(1),
                                      rz,
                                      coefficient == Coefficient::inverse_density,
                                      l.owned_begin(0),
                                      l.owned_begin(1),
                                      l.owned_begin(2),
                                      static_cast<long>(l.offset(0)),
                                      static_cast<long>(l.offset(1)),
                                      static_cast<long>(l.offset(2)),
                                      static_cast<long>(l.global_cells(0)),
                                      static_cast<long>(l.global_cells(1)),
                                      static_cast<long>(l.global_cells(2))};
    for_cells(exec_, "kpmap::sim::face_coefficients", whole(l), f);
  };
  if (three_d()) {
    run(std::true_type{});
  } else {
    run(std::false_type{});
  }
  const Box owned = l.interior();
  visit([&](auto s) {
    constexpr bool three = decltype(s)::three_d;
    if (preconditioner_ == Preconditioner::jac_diag) {
      // Into the ghost layers too (all but the outermost, whose faces the
      // array does not hold): PPCG's inner steps run there with a deep halo.
      Box inside = whole(l);
      for (int d = 0; d < l.ndim(); ++d) {
        inside.lo[d] = 1;
        inside.hi[d] -= 1;
      }
      for_cells(exec_, "kpmap::sim::diagonal_inverse", inside,
                kernels::DiagonalInverse<three, Memory>{s, dinv_});
    } else if (preconditioner_ == Preconditioner::jac_block) {
      Box blocks = owned;
      blocks.lo[1] = 0;
      blocks.hi[1] = block_count_;
      const kernels::ColumnBlocks<three> cb{owned.lo[1], block_head_, owned.hi[1]};
      for_cells(exec_, "kpmap::sim::block_factor", blocks,
                kernels::BlockFactor<three, Memory>{s, cb, cp_, bfp_});
    }
  });
}

template <class Exec>
void HeatOperator<Exec>::precondition(const Field& r, const Field& z) const {
  const Box owned = layout_.interior();
  switch (preconditioner_) {
    case Preconditioner::none:
      if (z.data() != r.data())
        for_cells(exec_, "kpmap::sim::precondition_copy", owned, kernels::Copy<Memory>{z, r});
      return;
    case Preconditioner::jac_diag:
      for_cells(exec_, "kpmap::sim::precondition_diag", owned,
                kernels::DiagPrecond<Memory>{r, z, dinv_});
      return;
    case Preconditioner::jac_block:
      visit([&](auto s) {
        constexpr bool three = decltype(s)::three_d;
        Box blocks = owned;
        blocks.lo[1] = 0;
        blocks.hi[1] = block_count_;
        const kernels::ColumnBlocks<three> cb{owned.lo[1], block_head_, owned.hi[1]};
        for_cells(exec_, "kpmap::sim::precondition_block", blocks,
                  kernels::BlockSolve<three, Memory>{s, cb, cp_, bfp_, r, z});
      });
      return;
  }
}

template <class Exec>
void HeatOperator<Exec>::precondition(const Field& r, const Field& z,
                                      DeviceSums<double, Exec>& rz) const {
  const Box owned = layout_.interior();
  if (preconditioner_ == Preconditioner::jac_diag) {
    rz.add(exec_, "kpmap::sim::precondition_diag", owned,
           kernels::DiagPrecond<Memory>{r, z, dinv_});
    return;
  }
  precondition(r, z);
  rz.add(exec_, "kpmap::sim::dot_rz", owned, kernels::Dot<Memory>{r, z});
}

template <class Exec>
void HeatOperator<Exec>::precondition_box(const Field& r, const Field& z, const Box& box) const {
  if (preconditioner_ == Preconditioner::jac_diag) {
    for_cells(exec_, "kpmap::sim::precondition_diag", box,
              kernels::DiagPrecond<Memory>{r, z, dinv_});
  } else if (preconditioner_ == Preconditioner::none) {
    if (z.data() != r.data())
      for_cells(exec_, "kpmap::sim::precondition_copy", box, kernels::Copy<Memory>{z, r});
  } else {
    throw Error("kpmap::sim::HeatOperator: jac_block has no deep-halo form");
  }
}

template <class Exec>
double HeatOperator<Exec>::max_face_sum() const {
  return visit([&](auto s) {
    constexpr bool three = decltype(s)::three_d;
    double m = 0.0;
    const Box b = layout_.interior();
    if (!b.empty()) {
      reduce_flat<3>("kpmap::sim::max_face_sum", exec_, detail::box_lo(b), detail::box_hi(b),
                     kernels::MaxFaceSum<three, Memory>{s}, Kokkos::Max<double>(m));
    }
    return m;
  });
}

#define KPMAP_SIM_INSTANTIATE(E) template class HeatOperator<E>;
KPMAP_SIM_FOR_EACH_SPACE(KPMAP_SIM_INSTANTIATE)
#undef KPMAP_SIM_INSTANTIATE

}  // namespace kpmap::sim
