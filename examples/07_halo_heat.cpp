// 07 a minimal halo-exchange heat step on a 2-D mesh.
//
// The grid is split in blocks over the devices (any count); each block has a
// ring of ghost cells that a HaloExchange fills from the neighbouring blocks,
// then one explicit step of the heat equation updates the owned cells:
//
//   u' = u + r sum over the 4 neighbours (u_nb - u)   (no flux out of the grid)
//
// Heat only moves between cells, so the total is conserved: the check.
//
//   mpiexec -n 3 ./07_halo_heat

#include <kpmap/kpmap.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdio>

int heat(kpmap::Runtime&) {
  const std::size_t nx = 40, ny = 30;
  const double r = 0.2;  // D dt / h^2; stable up to 0.25
  kpmap::CartesianLayout layout({nx, ny}, /*ghost=*/1);
  auto u = layout.allocate<double>("u");
  auto next = layout.allocate<double>("u_next");

  // Where this block sits in the grid: global cell = offset + local - ghost.
  const long g = layout.ghost();
  const long ox = static_cast<long>(layout.offset(0)), oy = static_cast<long>(layout.offset(1));
  const long gx = static_cast<long>(nx), gy = static_cast<long>(ny);
  const kpmap::Box own = layout.interior();
  const Kokkos::MDRangePolicy<Kokkos::Rank<2>> cells({own.lo[1], own.lo[0]},
                                                     {own.hi[1], own.hi[0]});

  // A hot 10 x 10 square (u = 1) in a cold plate (u = 0): total heat 100.
  Kokkos::parallel_for(
      "07_halo_heat::init", cells, KOKKOS_LAMBDA(long j, long i) {
        const long x = ox + i - g, y = oy + j - g;
        u(0, j, i) = (x >= 10 && x < 20 && y >= 5 && y < 15) ? 1.0 : 0.0;
      });

  kpmap::HaloExchange<double> halo(layout, {u});
  for (int step = 0; step < 200; ++step) {
    halo.start();   // pack the edge cells, send them to the neighbours
    halo.finish();  // receive and unpack into the ghosts
    Kokkos::parallel_for(
        "07_halo_heat::step", cells, KOKKOS_LAMBDA(long j, long i) {
          const long x = ox + i - g, y = oy + j - g;
          const double c = u(0, j, i);
          double flux = 0;
          if (x > 0) flux += u(0, j, i - 1) - c;  // a neighbour beyond the grid: no flux
          if (x < gx - 1) flux += u(0, j, i + 1) - c;
          if (y > 0) flux += u(0, j - 1, i) - c;
          if (y < gy - 1) flux += u(0, j + 1, i) - c;
          next(0, j, i) = c + r * flux;
        });
    Kokkos::parallel_for(
        "07_halo_heat::copy", cells, KOKKOS_LAMBDA(long j, long i) { u(0, j, i) = next(0, j, i); });
  }

  // The total heat and the hottest cell, over all devices.
  double total = 0, hottest = 0;
  Kokkos::parallel_reduce(
      "07_halo_heat::total", cells, KOKKOS_LAMBDA(long j, long i, double& s) { s += u(0, j, i); },
      total);
  Kokkos::parallel_reduce(
      "07_halo_heat::max", cells,
      KOKKOS_LAMBDA(long j, long i, double& m) { m = u(0, j, i) > m ? u(0, j, i) : m; },
      Kokkos::Max<double>(hottest));
  total = kpmap::psum(total, "devices");
  hottest = kpmap::pmax(hottest, "devices");

  // Checked: the heat put in (100) is conserved, and it spread (max below 1).
  const bool ok = std::abs(total - 100.0) < 1e-10 && hottest < 1.0;
  if (kpmap::axis_index("devices") == 0) {
    std::printf("%s: total heat %.12f (put in: 100), hottest cell %.4f after 200 steps: %s\n",
                layout.describe().c_str(), total, hottest, ok ? "OK" : "WRONG");
  }
  return kpmap::psum(ok ? 0 : 1, "devices") == 0 ? 0 : 1;
}

int main(int argc, char** argv) { return kpmap::run(argc, argv, heat); }
