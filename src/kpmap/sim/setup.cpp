// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/sim/setup.hpp>

namespace kpmap::sim {

namespace {

struct DeviceState {
  double density;
  double energy;
  Geometry geometry;  // an enum: copies to the device as it is
  double lower[3];
  double upper[3];
  double centre[3];
  double radius;
};

template <class M>
struct GenerateStates {
  Kokkos::View<const DeviceState*, M> states;
  CellField<M> density, energy;
  int ndim;
  long begin[3];  // local index of the first owned cell
  long offset[3];
  double origin[3];
  double h[3];

  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i) const {
    const long loc[3] = {i, j, k};
    double lo[3], hi[3], mid[3];
    for (int d = 0; d < 3; ++d) {
      const double g = static_cast<double>(offset[d] + loc[d] - begin[d]);
      lo[d] = origin[d] + h[d] * g;
      hi[d] = origin[d] + h[d] * (g + 1.0);
      mid[d] = origin[d] + h[d] * (g + 0.5);
    }
    double rho = states(0).density;
    double e = states(0).energy;
    // d < 3 as well as ndim: GCC then sees no read past the arrays (with
    // -march=x86-64-v3 it warned of h[3]).
    for (std::size_t s = 1; s < states.extent(0); ++s) {
      const DeviceState& st = states(s);
      bool hit = true;
      if (st.geometry == Geometry::rectangle) {
        for (int d = 0; d < 3 && d < ndim; ++d) {
          const double margin = h[d] / 100.0;
          hit = hit && hi[d] >= st.lower[d] + margin && lo[d] < st.upper[d] - margin;
        }
      } else if (st.geometry == Geometry::circle) {
        double r2 = 0.0;
        for (int d = 0; d < 3 && d < ndim; ++d)
          r2 += (mid[d] - st.centre[d]) * (mid[d] - st.centre[d]);
        hit = r2 <= st.radius * st.radius;
      } else {
        for (int d = 0; d < 3 && d < ndim; ++d)
          hit = hit && lo[d] <= st.centre[d] && st.centre[d] < hi[d];
      }
      if (hit) {
        rho = st.density;
        e = st.energy;
      }
    }
    density(k, j, i) = rho;
    energy(k, j, i) = e;
  }
};

}  // namespace

template <class Exec>
void generate_states(const Exec& exec, const CartesianLayout& layout, const HeatConfig& config,
                     const CellField<typename Exec::memory_space>& density,
                     const CellField<typename Exec::memory_space>& energy) {
  using M = typename Exec::memory_space;
  Kokkos::View<DeviceState*, M> states("kpmap::sim::states", config.states.size());
  auto host = Kokkos::create_mirror_view(states);
  for (std::size_t s = 0; s < config.states.size(); ++s) {
    const State& st = config.states[s];
    DeviceState& d = host(s);
    d.density = st.density;
    d.energy = st.energy;
    d.geometry = st.geometry;
    for (int i = 0; i < 3; ++i) {
      d.lower[i] = st.lower[i];
      d.upper[i] = st.upper[i];
      d.centre[i] = st.centre[i];
    }
    d.radius = st.radius;
  }
  Kokkos::deep_copy(exec, states, host);
  GenerateStates<M> f{states, density, energy, layout.ndim(), {}, {}, {}, {}};
  Box all;
  for (int d = 0; d < 3; ++d) {
    f.begin[d] = layout.owned_begin(d);
    f.offset[d] = static_cast<long>(layout.offset(d));
    f.origin[d] = config.lower[d];
    f.h[d] = d < layout.ndim() ? config.spacing(d) : 1.0;
    all.hi[d] = static_cast<long>(layout.extent(d));
  }
  for_cells(exec, "kpmap::sim::generate_states", all, f);
  // The state table and its host mirror must outlive the copy and the kernel.
  kpmap::detail::fence(exec, "kpmap::sim: states placed");
}

#define KPMAP_SIM_INSTANTIATE(E)                                                     \
  template void generate_states(const E&, const CartesianLayout&, const HeatConfig&, \
                                const CellField<E::memory_space>&,                   \
                                const CellField<E::memory_space>&);
KPMAP_SIM_FOR_EACH_SPACE(KPMAP_SIM_INSTANTIATE)
#undef KPMAP_SIM_INSTANTIATE

}  // namespace kpmap::sim
