// SPDX-License-Identifier: BSD-3-Clause
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
// The second half runs a problem of the same kind on the library's own heat
// loop (kpmap/sim/time_loop.hpp), as kpmap-heat does: TeaLeaf's implicit
// step solved with CG, a per-step history.csv, checkpoints a run restarts
// from, progress lines, stop signals. The program only says what to solve.
//
//   mpiexec -n 3 ./07_halo_heat

#include <kpmap/kpmap.hpp>
#include <kpmap/run/output.hpp>
#include <kpmap/sim/time_loop.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

int hand_written(kpmap::Runtime&) {
  const std::size_t nx = 40, ny = 30;
  const double r = 0.2;  // D dt / h^2; stable up to 0.25
  // [layout]
  kpmap::CartesianLayout layout({nx, ny}, /*ghost=*/1);  // blocks over all ranks
  auto u = layout.allocate<double>("u");                 // (z, y, x) with ghosts
  auto next = layout.allocate<double>("u_next");
  // [end]

  // Where this block sits in the grid: global cell = offset + local - the
  // local index of the first owned cell (the ghost width in this layout;
  // more along x in one made with kpmap::Rows::aligned).
  const long bx = layout.owned_begin(0), by = layout.owned_begin(1);
  const long ox = static_cast<long>(layout.offset(0)), oy = static_cast<long>(layout.offset(1));
  const long gx = static_cast<long>(nx), gy = static_cast<long>(ny);
  const kpmap::Box own = layout.interior();
  const auto cells = kpmap::row_major_range<2>({own.lo[1], own.lo[0]}, {own.hi[1], own.hi[0]});

  // A hot 10 x 10 square (u = 1) in a cold plate (u = 0): total heat 100.
  Kokkos::parallel_for(
      "07_halo_heat::init", cells, KOKKOS_LAMBDA(long j, long i) {
        const long x = ox + i - bx, y = oy + j - by;
        u(0, j, i) = (x >= 10 && x < 20 && y >= 5 && y < 15) ? 1.0 : 0.0;
      });

  // [halo]
  kpmap::HaloExchange<double> halo(layout, {u});  // a persistent plan
  auto fill_ghosts = [&] {
    halo.start();   // pack the edge cells, post Isend/Irecv (device buffers go straight
                    // to a GPU-aware MPI, or through pinned host memory)
    halo.finish();  // wait, unpack into the ghosts
  };
  // [end]
  for (int step = 0; step < 200; ++step) {
    fill_ghosts();
    Kokkos::parallel_for(
        "07_halo_heat::step", cells, KOKKOS_LAMBDA(long j, long i) {
          const long x = ox + i - bx, y = oy + j - by;
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

// A hot 1 x 1 square (energy 1, density 1) in a cold 4 x 3 plate, 40 x 30
// cells, 20 implicit steps. The total energy (1) is conserved to the solver's
// tolerance at every step.
int library_loop(kpmap::Runtime& rt) {
  namespace sim = kpmap::sim;
  sim::HeatConfig c;
  c.cells = {40, 30, 1};
  c.upper = {4.0, 3.0, 1.0};
  sim::State plate;  // state 1 fills the plate
  plate.energy = 0.0;
  sim::State square;
  square.energy = 1.0;
  square.lower = {1.0, 0.5, 0.0};
  square.upper = {2.0, 1.5, 0.0};
  c.states = {plate, square};
  c.dt = 0.01;
  c.end_step = 20;
  c.solver.eps = 1e-12;
  c.output.progress_every = 10;
  c.summary_every = 0;  // the summary table at the start and the end only
  c.output.dir = "07_halo_heat_np" + std::to_string(rt.size());

  // [time_loop]
  kpmap::PhaseTimes times;  // compute, halo, collectives, checkpoint: the loop fills them
  const auto out = kpmap::prepare_output_dir(c.output.dir, rt.comm());
  sim::Simulation s(c);  // the mesh over all ranks, the fields
  sim::TimeLoop loop(s, {out, /*deck=*/"", /*restart=*/""}, times);
  loop.start();      // step 0 (or the restart file's step)
  double worst = 0;  // the largest departure of the total energy from 1
  const sim::LoopResult r = loop.run([&](const sim::StepReport&, const sim::Summary& now) {
    worst = std::max(worst, std::abs(now.energy - 1.0));  // on every rank, after every step
  });
  // [end]
  const bool ok = worst < 1e-9 && r.stopped_by == 0 && s.step_count() == 20;
  if (rt.rank() == 0) {
    std::printf(
        "library loop: %lld CG iterations in 20 steps, energy 1 kept to %.1e, newest checkpoint "
        "%s: %s\n",
        r.iterations, worst, r.checkpoint.c_str(), ok ? "OK" : "WRONG");
  }
  return ok ? 0 : 1;
}

int main(int argc, char** argv) {
  return kpmap::run(argc, argv, [](kpmap::Runtime& rt) {
    const int a = hand_written(rt);
    return library_loop(rt) != 0 ? 1 : a;
  });
}
