// SPDX-License-Identifier: BSD-3-Clause
// The heat-conduction library against values derived independently of it:
// the exact decay of a discrete cosine mode, conservation of energy, the
// same summary on one rank and on all of them, TeaLeaf's published answer,
// the eigenvalues of a known tridiagonal matrix, and bit-for-bit restarts.

#include "support/mpi_test.hpp"

#include <kpmap_builtin_names.hpp>

#include <kpmap/base/detail/backend.hpp>
#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/deck/deck.hpp>
#include <kpmap/runtime/runtime.hpp>
#include <kpmap/sim/config.hpp>
#include <kpmap/sim/loops.hpp>
#include <kpmap/sim/simulation.hpp>
#include <kpmap/sim/solvers/cg.hpp>
#include <kpmap/sim/solvers/solver.hpp>
#include <kpmap/sim/stencil.hpp>

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <set>
#include <string>
#include <tuple>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;
using kpmap::test::all_ranks;
using kpmap::test::world_rank;
using kpmap::test::world_size;
namespace sim = kpmap::sim;
// The tests run the simulation on the default execution space unless they say otherwise.
using Exec = Kokkos::DefaultExecutionSpace;
using Memory = Exec::memory_space;
using ScalarField = sim::CellField<Memory>;

namespace {

constexpr double pi = 3.14159265358979323846;

sim::HeatConfig config_of(const std::string& toml, const std::vector<std::string>& sets = {}) {
  return sim::from_deck(kpmap::deck::parse(sim::heat_schema(), toml, "test.toml", sets));
}

// TeaLeaf's five benchmark states on a 10 x 10 domain.
const std::string tea_states =
    "[states.1]\ndensity = 100.0\nenergy = 0.0001\n"
    "[states.2]\ndensity = 0.1\nenergy = 25.0\nlower = [0.0, 1.0]\nupper = [1.0, 2.0]\n"
    "[states.3]\ndensity = 0.1\nenergy = 0.1\nlower = [1.0, 1.0]\nupper = [6.0, 2.0]\n"
    "[states.4]\ndensity = 0.1\nenergy = 0.1\nlower = [5.0, 1.0]\nupper = [6.0, 8.0]\n"
    "[states.5]\ndensity = 0.1\nenergy = 0.1\nlower = [5.0, 7.0]\nupper = [10.0, 8.0]\n";

std::string tea_deck(int cells, const std::string& solver) {
  return "[mesh]\ncells = [" + std::to_string(cells) + ", " + std::to_string(cells) +
         "]\nupper = [10.0, 10.0]\n" + tea_states +
         "[time]\ndt = 0.004\nend_step = 10\n[solver]\n" + solver + "\n";
}

// Sets energy so that u = 1 + 0.5 prod_d cos(pi m_d (g_d + 1/2) / N_d) on the owned cells.
void set_cosine_mode(sim::Simulation<>& s, const std::array<int, 3>& m) {
  const auto& l = s.layout();
  auto e = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s.energy());
  auto rho = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s.density());
  const auto box = l.interior();
  for (long k = box.lo[2]; k < box.hi[2]; ++k) {
    for (long j = box.lo[1]; j < box.hi[1]; ++j) {
      for (long i = box.lo[0]; i < box.hi[0]; ++i) {
        const long loc[3] = {i, j, k};
        double mode = 0.5;
        for (int d = 0; d < l.ndim(); ++d) {
          const double g = double(l.offset(d) + loc[d] - box.lo[d]);
          mode *= std::cos(pi * m[d] * (g + 0.5) / double(l.global_cells(d)));
        }
        e(k, j, i) = (1.0 + mode) / rho(k, j, i);
      }
    }
  }
  Kokkos::deep_copy(s.energy(), e);
}

// Largest |u - (1 + factor * mode)| over this rank's cells.
double mode_error(sim::Simulation<>& s, const std::array<int, 3>& m, double factor) {
  const auto& l = s.layout();
  auto u = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s.u());
  const auto box = l.interior();
  double worst = 0.0;
  for (long k = box.lo[2]; k < box.hi[2]; ++k) {
    for (long j = box.lo[1]; j < box.hi[1]; ++j) {
      for (long i = box.lo[0]; i < box.hi[0]; ++i) {
        const long loc[3] = {i, j, k};
        double mode = 0.5;
        for (int d = 0; d < l.ndim(); ++d) {
          const double g = double(l.offset(d) + loc[d] - box.lo[d]);
          mode *= std::cos(pi * m[d] * (g + 0.5) / double(l.global_cells(d)));
        }
        worst = std::max(worst, std::abs(u(k, j, i) - (1.0 + factor * mode)));
      }
    }
  }
  double global = 0.0;
  MPI_Allreduce(&worst, &global, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return global;
}

double rel(double a, double b) { return std::abs(a - b) / std::abs(b); }

// Owned cells of a 2-D run whose energies differ between two runs on the same
// layout (this rank's count).
std::size_t differing_energies(const sim::Simulation<>& x, const sim::Simulation<>& y) {
  auto a = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x.energy());
  auto b = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y.energy());
  const auto box = x.layout().interior();
  std::size_t differ = 0;
  for (long j = box.lo[1]; j < box.hi[1]; ++j) {
    for (long i = box.lo[0]; i < box.hi[0]; ++i) differ += a(0, j, i) != b(0, j, i);
  }
  return differ;
}

}  // namespace

TEST_CASE("extreme eigenvalues of a tridiagonal matrix by bisection", "[heat][solver]") {
  // tridiag(-1, 2, -1) of order n has eigenvalues 2 - 2 cos(k pi / (n + 1)).
  const std::size_t n = 20;
  std::vector<double> diag(n, 2.0), off(n - 1, -1.0);
  const auto [lo, hi] = sim::tridiagonal_extreme_eigenvalues(diag, off);
  CHECK(std::abs(lo - (2 - 2 * std::cos(pi / (n + 1)))) < 1e-14);
  CHECK(std::abs(hi - (2 - 2 * std::cos(n * pi / (n + 1)))) < 1e-14);
  // One CG step on a 1-D system gives T = 1/alpha: its one eigenvalue.
  const auto [a, b] = sim::cg_eigenvalue_estimates({0.25}, {0.5});
  CHECK(std::abs(a - 4.0) < 1e-14);
  CHECK(std::abs(b - 4.0) < 1e-14);
}

TEST_CASE("a cosine mode decays by the scheme's exact amplification factor", "[heat][physics]") {
  const bool three = GENERATE(false, true);
  const bool implicit = GENERATE(true, false);
  const bool inverse = GENERATE(false, true);
  CAPTURE(three, implicit, inverse);
  // Constant density 2: face conductivity K = 1/2 with the default
  // coefficient (the mean of 1/density), K = 2 with inverse_density.
  const double K = inverse ? 2.0 : 0.5;
  const std::string mesh = three ? "cells = [12, 10, 8]\nupper = [3.0, 2.0, 4.0]\n"
                                 : "cells = [24, 16]\nupper = [3.0, 2.0]\n";
  const double dt = (implicit ? 0.01 : 0.002) * (inverse ? 0.25 : 1.0);
  auto c = config_of("[mesh]\n" + mesh + "[states.1]\ndensity = 2.0\nenergy = 1.0\n[time]\ndt = " +
                     std::to_string(dt) + "\nscheme = \"" + (implicit ? "implicit" : "explicit") +
                     "\"\n[solver]\n" + (implicit ? "eps = 1e-15\nmax_iters = 5000\n" : "") +
                     "coefficient = \"" + (inverse ? "inverse_density" : "density") + "\"\n");
  sim::Simulation s(c);
  s.initialise();
  const std::array<int, 3> m{2, 1, 3};
  set_cosine_mode(s, m);
  // Eigenvalue of the zero-flux discrete Laplacian for this mode, times K.
  double lambda = 0.0;
  for (int d = 0; d < c.ndim; ++d) {
    const double h = c.spacing(d);
    const double sn = std::sin(pi * m[d] / (2.0 * c.cells[d]));
    lambda += K * 4.0 / (h * h) * sn * sn;
  }
  const double g = implicit ? 1.0 / (1.0 + dt * lambda) : 1.0 - dt * lambda;
  const int steps = 5;
  for (int n = 0; n < steps; ++n) s.step();
  const double err = mode_error(s, m, std::pow(g, steps));
  INFO("amplification " << g << ", error " << err);
  CHECK(std::pow(g, steps) < 0.99);  // the mode really decays
  CHECK(err < 1e-12);
}

TEST_CASE("the overlap shell covers a block once and peels only the faces named", "[heat][halo]") {
  // Every box and every choice of sides, counted cell by cell: each cell lies
  // in exactly one piece, and the inner piece keeps one cell away from each
  // peeled side (those cells read ghosts an exchange is still filling).
  const long sizes[] = {1, 2, 3, 5};
  for (long nx : sizes) {
    for (long ny : sizes) {
      for (long nz : {1L, 3L}) {
        for (int mask = 0; mask < 64; ++mask) {
          bool peel[3][2] = {};
          for (int b = 0; b < 6; ++b) peel[b / 2][b % 2] = (mask >> b) & 1;
          const kpmap::Box box{{2, 1, 0}, {2 + nx, 1 + ny, nz}};
          const sim::Shell shell = sim::shell_of(box, peel);
          CAPTURE(nx, ny, nz, mask, shell.count);
          std::vector<int> hits(static_cast<std::size_t>(nx * ny * nz), 0);
          auto mark = [&](const kpmap::Box& piece, bool inner) {
            for (long k = piece.lo[2]; k < piece.hi[2]; ++k) {
              for (long j = piece.lo[1]; j < piece.hi[1]; ++j) {
                for (long i = piece.lo[0]; i < piece.hi[0]; ++i) {
                  const long at[3] = {i, j, k};
                  for (int d = 0; d < 3; ++d) {
                    REQUIRE(at[d] >= box.lo[d]);
                    REQUIRE(at[d] < box.hi[d]);
                    if (inner && peel[d][0]) CHECK(at[d] > box.lo[d]);
                    if (inner && peel[d][1]) CHECK(at[d] < box.hi[d] - 1);
                  }
                  ++hits[static_cast<std::size_t>(((k - box.lo[2]) * ny + j - box.lo[1]) * nx + i -
                                                  box.lo[0])];
                }
              }
            }
          };
          mark(shell.inner, true);
          for (int f = 0; f < shell.count; ++f) mark(shell.faces[f], false);
          CHECK(std::count(hits.begin(), hits.end(), 1) == nx * ny * nz);
          if (mask == 0) CHECK(shell.count == 0);  // nothing to wait for: one kernel
        }
      }
    }
  }
}

namespace {

// Fields of an odd-sized box with a smooth, non-constant content.
ScalarField filled_field(const std::string& label, long nx, long ny, long nz, double phase) {
  ScalarField f(label, nz, ny, nx);
  auto h = Kokkos::create_mirror_view(f);
  for (long k = 0; k < nz; ++k) {
    for (long j = 0; j < ny; ++j) {
      for (long i = 0; i < nx; ++i)
        h(k, j, i) = 1.5 + std::sin(phase + 0.37 * i + 0.91 * j + 1.3 * k);
    }
  }
  Kokkos::deep_copy(f, h);
  return f;
}

double max_difference(const ScalarField& a, const ScalarField& b) {
  auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a);
  auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b);
  double m = 0;
  for (std::size_t n = 0; n < ha.size(); ++n)
    m = std::max(m, std::abs(ha.data()[n] - hb.data()[n]));
  return m;
}

}  // namespace

// The branch a GPU takes (an MDRange over the box, a flat range over its
// cells for a reduction) and the host's row loop,
// both compiled in every build: the solver kernels with two call operators
// (UpdateR, DiagPrecond) must reduce through either, with the same fields and
// the same sum (to rounding: the order of the sum differs).
// The loops take the GPU's shape in a KPMAP_DEVICE_PATHS build, the host's
// row shape otherwise (on host backends).
static_assert(kpmap::detail::host_shortcut_v<Kokkos::DefaultHostExecutionSpace> ==
              !kpmap::detail::device_paths);
// The box's MDRange walks i (contiguous in the (k, j, i) fields) fastest on
// every backend, whatever the backend's default order (Left on CUDA and HIP).
using BoxPolicy = decltype(kpmap::sim::detail::box_policy(Exec(), kpmap::Box{}));
static_assert(BoxPolicy::outer_direction == Kokkos::Iterate::Right &&
              BoxPolicy::inner_direction == Kokkos::Iterate::Right);
// It carries Kokkos' light-weight hint: on CUDA a closure goes to the kernel
// as a parameter, not through constant memory, whose launch waits on the host
// for the kernel before (kpmap::light_weight; reduce_flat's range carries it too).
static_assert(std::is_same_v<BoxPolicy::work_item_property,
                             Kokkos::Experimental::WorkItemProperty::HintLightWeight_t>);
// ... which is what host backends did by default: stating it changes no CPU loop.
using HostDefault = Kokkos::MDRangePolicy<Kokkos::DefaultHostExecutionSpace, Kokkos::Rank<3>>;
static_assert(HostDefault::outer_direction == Kokkos::Iterate::Right &&
              HostDefault::inner_direction == Kokkos::Iterate::Right);

TEST_CASE("the box loops' tile: a warp along i on a GPU, Kokkos' own on the host", "[heat]") {
  // On a GPU 1 along k and j, 64 along i (contiguous): Kokkos' CUDA MDRange
  // gives threadIdx.x to the tile's first index, so only this tile puts a
  // warp along i.
  const auto gpu = kpmap::detail::row_major_tile<3>(true);
  CHECK(gpu[0] == 1);
  CHECK(gpu[1] == 1);
  CHECK(gpu[2] == 64);
  const auto matrix = kpmap::detail::row_major_tile<2>(true);
  CHECK(matrix[0] == 1);
  CHECK(matrix[1] == 64);
  // Each warp of a block, as Kokkos 4.6's CUDA MDRange maps threads to a
  // tile's cells: its 32 lanes share k and j and walk 32 consecutive i.
  for (int warp = 0; warp < 2; ++warp) {
    const auto first = kpmap::detail::cuda_mdrange_thread_cell<3>(gpu, 32 * warp);
    const auto first2 = kpmap::detail::cuda_mdrange_thread_cell<2>(matrix, 32 * warp);
    for (int lane = 0; lane < 32; ++lane) {
      const auto c = kpmap::detail::cuda_mdrange_thread_cell<3>(gpu, 32 * warp + lane);
      CHECK((c[0] == first[0] && c[1] == first[1] && c[2] == first[2] + lane));
      const auto m = kpmap::detail::cuda_mdrange_thread_cell<2>(matrix, 32 * warp + lane);
      CHECK((m[0] == first2[0] && m[1] == first2[1] + lane));
    }
  }
  // The model of Kokkos' mapping itself: the old tile {1, 4, 32} put lanes
  // 0-3 on four rows at one i (4 rows of 8 cells in a warp).
  const Kokkos::Array<std::int64_t, 3> old_tile{1, 4, 32};
  for (int lane = 0; lane < 4; ++lane) {
    const auto c = kpmap::detail::cuda_mdrange_thread_cell<3>(old_tile, lane);
    CHECK((c[0] == 0 && c[1] == lane && c[2] == 0));
  }
  CHECK(kpmap::detail::cuda_mdrange_thread_cell<3>(old_tile, 31)[2] == 7);
  // Host memory: zeros, which Kokkos replaces by its own tile (whole rows).
  const auto host = kpmap::detail::row_major_tile<3>(false);
  CHECK((host[0] == 0 && host[1] == 0 && host[2] == 0));
  // What box_policy gives on this build's execution space.
  const auto policy = kpmap::sim::detail::box_policy(Exec(), kpmap::Box{{0, 0, 0}, {64, 8, 1}});
  const auto expected = kpmap::detail::row_major_tile<3>(kpmap::detail::gpu_space_v<Exec>);
  if (kpmap::detail::gpu_space_v<Exec>) {
    for (int d = 0; d < 3; ++d) CHECK(policy.m_tile[d] == expected[d]);
  } else {
    // Kokkos' host tile: the whole extent along i (the last index).
    CHECK(policy.m_tile[2] == 64);
  }
}

TEST_CASE("the GPU's box loops and the host's row loops give the same answers", "[heat][device]") {
  const long nx = 13, ny = 7, nz = 3;
  const kpmap::Box box{{1, 1, 0}, {nx - 1, ny - 1, nz}};
  const Exec exec;
  auto run = [&](bool gpu_shape, auto make_kernel) {
    auto r = filled_field("test::r", nx, ny, nz, 0.1);
    auto w = filled_field("test::w", nx, ny, nz, 0.7);
    auto z = filled_field("test::z", nx, ny, nz, 1.9);
    auto dinv = filled_field("test::dinv", nx, ny, nz, 2.3);
    const auto f = make_kernel(r, w, z, dinv);
    const double sum = gpu_shape ? sim::detail::reduce_box<double>(exec, "test::box", box, f)
                                 : sim::detail::reduce_rows<double>(exec, "test::rows", box, f);
    if (gpu_shape) {
      sim::detail::for_box(exec, "test::box", box, f);
    } else {
      sim::detail::for_rows(exec, "test::rows", box, f);
    }
    Kokkos::fence();
    return std::make_tuple(sum, r, z);
  };
  auto check = [&](auto make_kernel) {
    const auto [sum_rows, r_rows, z_rows] = run(false, make_kernel);
    const auto [sum_box, r_box, z_box] = run(true, make_kernel);
    CHECK(sum_rows > 0);
    CHECK(std::abs(sum_box - sum_rows) <= 1e-12 * std::abs(sum_rows));
    CHECK(max_difference(r_rows, r_box) == 0);
    CHECK(max_difference(z_rows, z_box) == 0);
  };
  SECTION("UpdateR with the diagonal preconditioner") {
    check([](auto r, auto w, auto z, auto dinv) {
      return sim::kernels::UpdateR<true, Memory>{r, w, z, dinv, 0.25};
    });
  }
  SECTION("UpdateR without") {
    check([](auto r, auto w, auto z, auto dinv) {
      return sim::kernels::UpdateR<false, Memory>{r, w, z, dinv, 0.25};
    });
  }
  SECTION("DiagPrecond") {
    check([](auto r, auto, auto z, auto dinv) {
      return sim::kernels::DiagPrecond<Memory>{r, z, dinv};
    });
  }
}

TEST_CASE("volume, mass and energy are conserved", "[heat][physics]") {
  const auto solver = GENERATE(as<std::string>{}, "method = \"cg\"\neps = 1e-15",
                               "method = \"jacobi\"\neps = 1e-12\nmax_iters = 100000",
                               "method = \"chebyshev\"\neps = 1e-14\nmax_iters = 10000",
                               "method = \"ppcg\"\neps = 1e-14\nmax_iters = 10000\n"
                               "ppcg_inner_steps = 6",
                               "method = \"cg\"\npreconditioner = \"jac_diag\"\neps = 1e-15",
                               "method = \"cg\"\npreconditioner = \"jac_block\"\neps = 1e-15");
  CAPTURE(solver);
  auto c = config_of(tea_deck(20, solver));
  sim::Simulation s(c);
  s.initialise();
  const auto start = s.summary();
  for (int n = 0; n < 5; ++n) s.step();
  const auto end = s.summary();
  CHECK(rel(end.volume, start.volume) < 1e-14);
  CHECK(rel(end.mass, start.mass) < 1e-14);
  CHECK(rel(end.energy, start.energy) < 1e-12);
  CHECK(std::abs(start.volume - 100.0) < 1e-12);
  // Heat flows from the hot strips into the dense background: U changes.
  CHECK(rel(end.u, start.u) > 1e-3);
}

TEST_CASE("a key that other keys make useless is refused, naming when it takes effect",
          "[heat][deck]") {
  const std::string deck = tea_deck(8, "method = \"cg\"");
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"solver.method=\"jacobi\"", "solver.preconditioner=\"jac_diag\""},
       "key 'solver.preconditioner': solver.method = \"jacobi\" reads no solver.preconditioner"},
      {{"solver.ppcg_inner_steps=5"}, "solver.method = \"cg\" reads no ppcg_inner_steps"},
      {{"solver.method=\"pipecg\"", "solver.presteps=5"},
       "key 'solver.presteps': solver.method = \"pipecg\" reads no solver.presteps"},
      {{"solver.method=\"cgsr\"", "solver.epslim=0.5"},
       "key 'solver.epslim': solver.method = \"cgsr\" reads no solver.epslim"},
      {{"time.scheme=\"explicit\"", "solver.max_iters=7"},
       "key 'solver.max_iters': time.scheme = \"explicit\" reads no solver.max_iters"},
      {{"states.2.radius=1.0"},
       "key 'states.2.radius': states.2.geometry = \"rectangle\" reads no states.2.radius"},
      {{"states.6.density=1.0", "states.6.energy=1.0", "states.6.geometry=\"circle\"",
        "states.6.centre=[1.0, 1.0]", "states.6.radius=1.0", "states.6.upper=[3.0, 3.0]"},
       "key 'states.6.upper': states.6.geometry = \"circle\" reads no states.6.upper"},
      {{"states.1.lower=[0.0, 0.0]"},
       "key 'states.1.lower': it would have no effect in states.1 (state 1 fills the domain"},
      {{"states.1.geometry=\"circle\""}, "key 'states.1.geometry': it would have no effect"},
  };
  for (const auto& [sets, expect] : cases) {
    CAPTURE(sets);
    CHECK_THROWS_WITH(config_of(deck, sets), StartsWith("--set ") && ContainsSubstring(expect));
  }
  // Where they take effect, the same keys are read.
  const auto c = config_of(deck, {"states.6.density=1.0", "states.6.energy=1.0",
                                  "states.6.geometry=\"circle\"", "states.6.centre=[1.0, 1.0]",
                                  "states.6.radius=1.5", "solver.preconditioner=\"jac_diag\""});
  CHECK(c.states.at(5).radius == 1.5);
  CHECK(c.solver.preconditioner == sim::Preconditioner::jac_diag);
}

TEST_CASE("every solver and preconditioner reaches the same solution", "[heat][solver]") {
  auto reference = config_of(tea_deck(16, "method = \"cg\"\neps = 1e-15"));
  sim::Simulation ref(reference);
  ref.initialise();
  for (int n = 0; n < 3; ++n) ref.step();
  const double u_ref = ref.summary().u;
  // Every registered method (the library's and this program's own, below:
  // a new one is checked as soon as it is registered) with every preconditioner.
  std::size_t methods = 0;
  for (const sim::SolverInfo* m : sim::registered_solvers()) {
    ++methods;
    for (const std::string& pc : kpmap::enum_words<sim::Preconditioner>()) {
      const std::string solver = "method = \"" + m->name + "\"\npreconditioner = \"" + pc +
                                 "\"\neps = 1e-13\nmax_iters = 200000";
      CAPTURE(solver);
      if (pc != "none" && m->preconditioned_fields == 0) {
        // A method that applies no preconditioner (Jacobi) refuses one.
        CHECK_THROWS_WITH(config_of(tea_deck(16, solver)),
                          ContainsSubstring("reads no solver.preconditioner, it would have no "
                                            "effect"));
        continue;
      }
      auto c = config_of(tea_deck(16, solver));
      sim::Simulation s(c);
      s.initialise();
      long iterations = 0;
      for (int n = 0; n < 3; ++n) iterations += s.step().solve.iterations;
      CHECK(iterations > 0);
      CHECK(rel(s.summary().u, u_ref) < 1e-9);
    }
  }
  // The build's built-in solvers and this program's own (keyed_cg, below).
  CHECK(methods == std::size(kpmap::generated::builtin_solvers) + 1);
}

TEST_CASE("each preconditioner has one form the solvers take, and no other value has",
          "[heat][solver]") {
  // The deck's words are the preconditioners; form_of sorts each once.
  CHECK(sim::form_of(sim::Preconditioner::none) == sim::PreconditionerForm::identity);
  CHECK(sim::form_of(sim::Preconditioner::jac_diag) == sim::PreconditionerForm::pointwise);
  CHECK(sim::form_of(sim::Preconditioner::jac_block) == sim::PreconditionerForm::apart);
  for (const auto p : kpmap::enum_values<sim::Preconditioner>()) CHECK_NOTHROW(sim::form_of(p));
  CHECK_THROWS_WITH(sim::form_of(static_cast<sim::Preconditioner>(7)),
                    ContainsSubstring("preconditioner 7 is none of those the solvers know"));
}

// A program's own solver (the mechanism examples/11_custom_solver.cpp uses):
// CG under another name, with a key of its own that it reads.
template <class Exec>
class KeyedCg final : public sim::solvers::Cg<Exec> {
 public:
  KeyedCg(const sim::SolverContext<Exec>& context, const kpmap::deck::Settings& keys)
      : sim::solvers::Cg<Exec>(context), weight_(keys.real("weight")) {}
  double weight() const { return weight_; }

 private:
  double weight_;
};
KPMAP_SIM_REGISTER_SOLVER(KeyedCg, {"keyed_cg", "CG with a key", 3, 1,
                                    kpmap::deck::Schema("solver").real("weight", 1.0, {0.0, 2.0},
                                                                       "", "a number it reads")});

TEST_CASE("a program's own solver is named by decks, and its keys are checked", "[heat][solver]") {
  using Catch::Matchers::ContainsSubstring;
  using Catch::Matchers::StartsWith;
  const auto schema = sim::heat_schema();
  REQUIRE(schema.find("solver.weight") != nullptr);
  CHECK(schema.find("solver.weight")->description == "keyed_cg: a number it reads");
  // Its key: the default, a value, a value out of range (file and line), a
  // misspelling, and the key under a method that does not read it.
  auto c = config_of(tea_deck(16, "method = \"keyed_cg\""));
  CHECK(c.solver.method == "keyed_cg");
  CHECK(c.solver.keys.empty());
  CHECK(sim::solver_settings(c.solver).real("weight") == 1.0);
  c = config_of(tea_deck(16, "method = \"keyed_cg\"\nweight = 1.5"));
  CHECK(sim::solver_settings(c.solver).real("weight") == 1.5);
  // Options a program writes hold the keys it sets, in the same shape.
  sim::SolverOptions by_hand;
  by_hand.method = "keyed_cg";
  by_hand.keys = {{"weight", 0.5}};
  CHECK(sim::solver_settings(by_hand).real("weight") == 0.5);
  by_hand.keys = {{"wieght", 0.5}};
  CHECK_THROWS_WITH(sim::solver_settings(by_hand),
                    StartsWith("kpmap::sim: solver keyed_cg: ") && ContainsSubstring("'wieght'"));
  CHECK_THROWS_WITH(config_of(tea_deck(16, "method = \"keyed_cg\"\nweight = 2.5")),
                    StartsWith("test.toml:") && ContainsSubstring("solver.weight"));
  CHECK_THROWS_WITH(config_of(tea_deck(16, "method = \"keyed_cg\"\nwieght = 1.5")),
                    ContainsSubstring("did you mean 'solver.weight'"));
  CHECK_THROWS_WITH(config_of(tea_deck(16, "method = \"cg\"\nweight = 1.5")),
                    ContainsSubstring("solver.method = \"cg\" reads no weight, it would have no "
                                      "effect (weight is read by keyed_cg)"));
  // A resolved deck (deck.toml: every key with its value, weight's default
  // under cg included) reads back as the run it came from.
  const auto resolved =
      kpmap::deck::parse(sim::heat_schema(), tea_deck(16, "method = \"cg\""), "test.toml")
          .to_toml();
  CHECK(config_of(resolved).solver.method == "cg");
  CHECK_THROWS_WITH(config_of(tea_deck(16, "method = \"keyed_gc\"")),
                    ContainsSubstring("keyed_cg"));
  // It solves: the solution of the built-in CG, which it is.
  c = config_of(tea_deck(16, "method = \"keyed_cg\"\neps = 1e-15"));
  auto reference = config_of(tea_deck(16, "method = \"cg\"\neps = 1e-15"));
  sim::Simulation mine(c), theirs(reference);
  mine.initialise();
  theirs.initialise();
  for (int n = 0; n < 3; ++n) {
    CHECK(mine.step().solve.iterations == theirs.step().solve.iterations);
  }
  CHECK(mine.summary().u == theirs.summary().u);
  CHECK(sim::solver_fields(sim::Scheme::implicit, c.solver) == 3);
  // A name given twice, a key without a default, a name that is no deck word.
  CHECK_THROWS_WITH(sim::register_solver<KeyedCg>({"keyed_cg", "again", 3, 1}),
                    ContainsSubstring("a solver named 'keyed_cg' is registered already"));
  CHECK_THROWS_WITH(
      sim::register_solver<KeyedCg>(
          {"keyed_cg2", "", 3, 1,
           kpmap::deck::Schema("solver").real("weight", std::nullopt, {}, "", "required")}),
      ContainsSubstring("key 'weight' of solver 'keyed_cg2' has no default"));
  CHECK_THROWS_WITH(sim::register_solver<KeyedCg>(
                        {"keyed_cg3", "", 3, 1,
                         kpmap::deck::Schema("solver").real("weight", 0.5, {}, "", "other")}),
                    ContainsSubstring("declared by keyed_cg and by keyed_cg3"));
  CHECK_THROWS_WITH(sim::register_solver<KeyedCg>({"Keyed CG", "", 3, 1}),
                    ContainsSubstring("is not a deck word"));
  // Nothing refused was registered: the built-ins and keyed_cg.
  CHECK(sim::registered_solvers().size() == std::size(kpmap::generated::builtin_solvers) + 1);
}

TEST_CASE("every built-in solver file registers its solver, and decks name each",
          "[heat][solver]") {
  // The KPMAP_SIM_BUILTIN_SOLVER lines the build found in src/kpmap/sim/solvers/
  // (the list its generated registration calls are written from): each must
  // be in the registry and named by decks.
  const std::set<std::string> in_files(std::begin(kpmap::generated::builtin_solvers),
                                       std::end(kpmap::generated::builtin_solvers));
  std::set<std::string> expected = in_files;
  REQUIRE(in_files.size() == std::size(kpmap::generated::builtin_solvers));
  REQUIRE_FALSE(in_files.empty());
  // This program registers one more (keyed_cg, above).
  std::set<std::string> registered;
  for (const sim::SolverInfo* s : sim::registered_solvers()) registered.insert(s->name);
  expected.insert("keyed_cg");
  CHECK(registered == expected);
  const auto schema = sim::heat_schema();
  const auto& choices = schema.find("solver.method")->choices;
  CHECK(std::set<std::string>(choices.begin(), choices.end()) == expected);
  for (const std::string& name : expected) {
    CAPTURE(name);
    CHECK(sim::solver_info(name).name == name);
    CHECK(config_of(tea_deck(16, "method = \"" + name + "\"")).solver.method == name);
  }
  CHECK_THROWS_WITH(sim::solver_info("gmres"),
                    Catch::Matchers::ContainsSubstring("no solver is registered as 'gmres'"));
  // The explicit step reads the step's start from u0: no fields of its own.
  sim::SolverOptions options;
  CHECK(sim::solver_fields(sim::Scheme::explicit_ftcs, options) == 0);
  options.method = "ppcg";
  options.preconditioner = sim::Preconditioner::jac_diag;
  CHECK(sim::solver_fields(sim::Scheme::implicit, options) == 9);
}

TEST_CASE("a deep halo gives PPCG's inner steps the same result with fewer messages",
          "[heat][solver]") {
  const auto precond = GENERATE(as<std::string>{}, "none", "jac_diag");
  CAPTURE(precond);
  double u[3] = {0, 0, 0};
  long inner[3] = {0, 0, 0};
  for (int depth = 1; depth <= 3; ++depth) {
    auto c = config_of(tea_deck(16,
                                "method = \"ppcg\"\neps = 1e-13\nmax_iters = 5000\n"
                                "ppcg_inner_steps = 7\npresteps = 4\npreconditioner = \"" +
                                    precond + "\""),
                       {"mesh.halo_depth=" + std::to_string(depth)});
    sim::Simulation s(c);
    s.initialise();
    for (int n = 0; n < 3; ++n) inner[depth - 1] += s.step().solve.inner_iterations;
    u[depth - 1] = s.summary().u;
  }
  CHECK(inner[0] > 0);
  // Ghost cells compute what their owners compute, bit for bit.
  CHECK(u[1] == u[0]);
  CHECK(u[2] == u[0]);
  CHECK(inner[1] == inner[0]);
}

TEST_CASE("the summary does not depend on the rank count", "[heat][mpi]") {
  const bool three = GENERATE(false, true);
  CAPTURE(three);
  const std::string deck = three
                               ? "[mesh]\ncells = [9, 8, 7]\nupper = [10.0, 10.0, 10.0]\n"
                                 "[states.1]\ndensity = 100.0\nenergy = 0.0001\n"
                                 "[states.2]\ndensity = 0.1\nenergy = 25.0\ngeometry = \"cuboid\"\n"
                                 "lower = [1.0, 1.0, 0.0]\nupper = [2.0, 2.0, 1.0]\n"
                                 "[states.3]\ndensity = 0.5\nenergy = 3.0\ngeometry = \"sphere\"\n"
                                 "centre = [6.0, 5.0, 5.0]\nradius = 2.5\n"
                                 "[time]\ndt = 0.04\n[solver]\neps = 1e-15\nmax_iters = 10000\n"
                               : tea_deck(13, "method = \"cg\"\neps = 1e-15");
  auto c = config_of(deck);
  // All ranks together...
  sim::Simulation all(c);
  all.initialise();
  for (int n = 0; n < 4; ++n) all.step();
  const auto s = all.summary();
  // ... and rank 0 alone.
  MPI_Comm alone;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank() == 0 ? 0 : MPI_UNDEFINED, 0, &alone);
  double want[5] = {0, 0, 0, 0, 0};
  if (world_rank() == 0) {
    sim::Simulation one(c, alone);
    one.initialise();
    for (int n = 0; n < 4; ++n) one.step();
    const auto r = one.summary();
    want[0] = r.volume;
    want[1] = r.mass;
    want[2] = r.density;
    want[3] = r.energy;
    want[4] = r.u;
    MPI_Comm_free(&alone);
  }
  MPI_Bcast(want, 5, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  CHECK(rel(s.volume, want[0]) < 1e-12);
  CHECK(rel(s.mass, want[1]) < 1e-12);
  CHECK(rel(s.density, want[2]) < 1e-12);
  CHECK(rel(s.energy, want[3]) < 1e-12);
  CHECK(rel(s.u, want[4]) < 1e-12);
}

TEST_CASE("TeaLeaf's benchmark 1 (10 x 10, CG) gives TeaLeaf's published U", "[heat][tealeaf]") {
  auto c = config_of(tea_deck(10, "method = \"cg\"\neps = 1e-15\nmax_iters = 10000"));
  sim::Simulation s(c);
  s.initialise();
  // TeaLeaf's step-0 summary (tea_bm_1.out): the states cover the cells as TeaLeaf places them.
  const auto start = s.summary();
  CHECK(rel(start.volume, 100.0) < 1e-14);
  CHECK(rel(start.mass, 8401.6) < 1e-14);
  CHECK(rel(start.energy, 3.49) < 1e-13);
  CHECK(rel(start.u, 84.265) < 1e-14);
  long iterations = 0;
  while (!s.done()) iterations += s.step().solve.iterations;
  CHECK(s.step_count() == 10);
  INFO("CG iterations " << iterations << ", U " << s.summary().u);
  // TeaLeaf_ref's Benchmarks/tea_bm_1.out: the final field summary's U.
  const double expected = 157.55084183279294;
  // TeaLeaf's own pass criterion: within 0.001 %.
  CHECK(rel(s.summary().u, expected) < 1e-5);
  // 11 CG iterations a step, as TeaLeaf's log shows ("Iteration count 10" counts from 0).
  CHECK(iterations == 110);
}

TEST_CASE("checks across keys cite the line that set the key, or its --set", "[heat][deck]") {
  const std::string deck =
      "[mesh]\ncells = [10, 10]\nlower = [0.0, 2.0]\nupper = [1.0, 1.0]\n"
      "[states.1]\ndensity = 1.0\nenergy = 1.0\n[time]\ndt = 0.1\n";
  CHECK_THROWS_WITH(
      config_of(deck),
      "test.toml:4: key 'mesh.upper': must exceed the lower corner (mesh.lower) in every "
      "dimension; "
      "dimension 1 has lower 2 and upper 1");
  CHECK_THROWS_WITH(config_of(deck, {"mesh.upper=[1.0, 3.0]", "mesh.ranks=[1, 1, 1]"}),
                    "--set mesh.ranks=[1, 1, 1]: key 'mesh.ranks': expected 2 entries (one per "
                    "dimension), found 3");
  CHECK_THROWS_WITH(
      config_of(deck, {"mesh.upper=[0.5, 1.0]"}),
      ContainsSubstring("--set mesh.upper=[0.5, 1.0]: key 'mesh.upper': must exceed"));
}

TEST_CASE("the explicit scheme refuses an unstable time step", "[heat][physics]") {
  // Constant density 1: K = 1, h = 0.1; FTCS needs dt (2/h^2 + 2/h^2) <= 1, dt <= 0.0025.
  const std::string deck =
      "[mesh]\ncells = [10, 10]\nupper = [1.0, 1.0]\n[states.1]\ndensity = 1.0\nenergy = 1.0\n"
      "[time]\nscheme = \"explicit\"\ndt = ";
  {
    sim::Simulation ok(config_of(deck + "0.0025\n"));
    ok.initialise();
    CHECK(std::abs(ok.stable_dt() - 0.0025) < 1e-15);
  }
  sim::Simulation bad(config_of(deck + "0.003\n"));
  try {
    bad.initialise();
    FAIL_CHECK("accepted an unstable time step");
  } catch (const kpmap::InputError& e) {
    CHECK(e.all_ranks());
    CHECK_THAT(std::string(e.what()),
               ContainsSubstring("time.dt = 3.000000e-03 s exceeds the stability limit "
                                 "2.500000e-03 s of the explicit (FTCS) scheme"));
  }
}

TEST_CASE("a solve that does not converge is an error with exit code 3", "[heat][solver]") {
  auto c = config_of(tea_deck(10, "method = \"cg\"\neps = 1e-15\nmax_iters = 3"));
  sim::Simulation s(c);
  s.initialise();
  try {
    s.step();
    FAIL_CHECK("a 3-iteration CG solve to 1e-15 converged");
  } catch (const kpmap::Error& e) {
    CHECK(e.code() == kpmap::exit_code::diverged);
    CHECK(e.all_ranks());
    CHECK_THAT(std::string(e.what()), ContainsSubstring("cg did not converge in 3 iterations"));
  }
}

TEST_CASE("a run on an execution space instance of its own matches the default instance",
          "[heat][solver]") {
  // Every kernel, copy and halo exchange of a run goes to the instance it was
  // given (a stream of its own on a GPU): a kernel left on another instance
  // would race with its neighbours and change the answer. Kokkos 3.4 has no
  // partition_space: there both runs share the default instance, and the test
  // checks only that a run repeats itself.
  const auto solver = GENERATE(as<std::string>{}, "method = \"cg\"\neps = 1e-12",
                               "method = \"ppcg\"\neps = 1e-12\npresteps = 5\nmax_iters = 5000");
  CAPTURE(solver);
  const auto c = config_of(tea_deck(14, solver));
  sim::Simulation plain(c);
  sim::Simulation own(c, MPI_COMM_NULL, kpmap::detail::independent_instance(Exec()));
  plain.initialise();
  own.initialise();
  for (int n = 0; n < 3; ++n) {
    const auto a = plain.step();
    const auto b = own.step();
    CHECK(a.solve.iterations == b.solve.iterations);
  }
  CHECK(all_ranks(differing_energies(plain, own) == 0));
}

namespace {

// The execution space (Kokkos Tools' device type, the top bits of a device
// id) of every kernel of the simulation, recorded in-process.
std::set<std::uint32_t>& sim_kernel_spaces() {
  static std::set<std::uint32_t> spaces;
  return spaces;
}
void record_sim_kernel(const char* name, std::uint32_t device_id, std::uint64_t*) {
  if (std::strncmp(name, "kpmap::sim::", 12) == 0) sim_kernel_spaces().insert(device_id >> 24);
}

struct SpaceRun {
  long iterations = 0;
  sim::Summary summary;
  std::set<std::uint32_t> spaces;
};

// Three steps of `c` on execution space E.
template <class E>
SpaceRun run_on(const sim::HeatConfig& c) {
  namespace tools = Kokkos::Tools::Experimental;
  sim_kernel_spaces().clear();
  tools::set_begin_parallel_for_callback(record_sim_kernel);
  tools::set_begin_parallel_reduce_callback(record_sim_kernel);
  SpaceRun run;
  {
    sim::Simulation<E> s(c, MPI_COMM_NULL, E());
    s.initialise();
    for (int n = 0; n < 3; ++n) run.iterations += s.step().solve.iterations;
    run.summary = s.summary();
  }
  tools::set_begin_parallel_for_callback(nullptr);
  tools::set_begin_parallel_reduce_callback(nullptr);
  run.spaces = sim_kernel_spaces();
  return run;
}

// The device type Kokkos Tools reports for work on E.
template <class E>
std::uint32_t space_id() {
  return Kokkos::Tools::Experimental::device_id(E()) >> 24;
}

}  // namespace

TEST_CASE("a simulation runs on the execution space its caller names", "[heat][solver]") {
  // Simulation<E> allocates its fields in E's memory and runs every kernel on
  // E. The OpenMP build runs it on Kokkos::Serial as well as on OpenMP: the
  // same iterations, and the same sums to rounding (a parallel sum adds in
  // another order). Every other space this build compiles is checked the same way.
  const auto solver = GENERATE(as<std::string>{}, "method = \"cg\"\neps = 1e-12",
                               "method = \"ppcg\"\neps = 1e-12\npresteps = 5\nmax_iters = 5000",
                               "method = \"cg\"\neps = 1e-12\npreconditioner = \"jac_block\"");
  CAPTURE(solver);
  const auto c = config_of(tea_deck(14, solver));
  const SpaceRun ref = run_on<Kokkos::DefaultExecutionSpace>(c);
  CHECK(ref.spaces == std::set<std::uint32_t>{space_id<Kokkos::DefaultExecutionSpace>()});
  auto check = [&](auto space) {
    using E = decltype(space);
    static_assert(sim::compiled_space_v<E>);
    static_assert(
        std::is_same_v<typename sim::Simulation<E>::Field::memory_space, typename E::memory_space>);
    CAPTURE(E::name());
    const SpaceRun run = run_on<E>(c);
    CHECK(run.spaces == std::set<std::uint32_t>{space_id<E>()});
    CHECK(run.iterations == ref.iterations);
    CHECK(std::abs(run.summary.u - ref.summary.u) <= 1e-12 * std::abs(ref.summary.u));
    CHECK(std::abs(run.summary.energy - ref.summary.energy) <= 1e-12 * ref.summary.energy);
  };
  check(Kokkos::DefaultHostExecutionSpace());
#if defined(KOKKOS_ENABLE_SERIAL)
  check(Kokkos::Serial());
#endif
}

TEST_CASE("a restart continues bit for bit", "[heat][checkpoint]") {
  const auto solver = GENERATE(as<std::string>{}, "method = \"cg\"\neps = 1e-12",
                               "method = \"ppcg\"\neps = 1e-12\npresteps = 5\nmax_iters = 5000");
  CAPTURE(solver);
  auto c = config_of(tea_deck(14, solver));
  const std::string file = "test_heat_restart_np" + std::to_string(world_size()) + ".h5";
  sim::Simulation straight(c);
  straight.initialise();
  for (int n = 0; n < 4; ++n) straight.step();
  sim::Simulation first(c);
  first.initialise();
  for (int n = 0; n < 2; ++n) first.step();
  first.write_checkpoint(file, "deck");
  sim::Simulation second(c);
  second.restart(file);
  CHECK(second.step_count() == 2);
  for (int n = 0; n < 2; ++n) second.step();
  CHECK(all_ranks(differing_energies(straight, second) == 0));
  CHECK(second.time() == straight.time());
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) {
    std::remove(file.c_str());
    std::remove((file.substr(0, file.size() - 3) + ".xmf").c_str());
  }
}
