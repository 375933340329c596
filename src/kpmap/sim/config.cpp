// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/sim/config.hpp>

#include <kpmap/base/error.hpp>
#include <kpmap/sim/solvers/info.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <limits>
#include <sstream>

namespace kpmap::sim {

namespace {

deck::Schema build_schema() {
  using L = std::vector<long long>;
  using R = std::vector<double>;
  const std::optional<double> none;
  deck::Schema s("kpmap-heat");
  s.integer_list("mesh.cells", std::nullopt, {1, none}, "",
                 "cells along x and y (2-D) or x, y and z (3-D)")
      .real_list("mesh.lower", R{}, {}, "m", "lower corner of the domain (empty: the origin)")
      .real_list("mesh.upper", std::nullopt, {}, "m", "upper corner of the domain")
      .integer("mesh.halo_depth", 1, {1, 8}, "",
               "ghost layers per block (TeaLeaf's halo_depth): PPCG's inner steps exchange "
               "this deep, once every halo_depth steps")
      .integer_list("mesh.ranks", L{}, {0, none}, "",
                    "process grid, x first (empty or 0 entries: chosen by MPI_Dims_create)");
  s.real("states.#.density", std::nullopt, {0.0, none}, "kg/m^3", "density (> 0)")
      .real("states.#.energy", std::nullopt, {0.0, none}, "J/kg", "specific energy")
      .string("states.#.geometry", "rectangle",
              {"rectangle", "cuboid", "circle", "sphere", "point"},
              "region of a state after the first (state 1 fills the domain)")
      .real_list("states.#.lower", R{}, {}, "m", "lower corner of a rectangle or cuboid")
      .real_list("states.#.upper", R{}, {}, "m", "upper corner of a rectangle or cuboid")
      .real_list("states.#.centre", R{}, {}, "m", "centre of a circle or sphere; a point")
      .real("states.#.radius", 0.0, {0.0, none}, "m", "radius of a circle or sphere");
  s.real("time.dt", std::nullopt, {0.0, none}, "s", "time step (> 0; TeaLeaf's initial_timestep)")
      .real("time.end_time", 10.0, {0.0, none}, "s", "stop once the simulated time reaches this")
      .integer("time.end_step", 0, {0, none}, "", "stop after this many steps (0: no limit)")
      .string("time.scheme", "implicit", enum_words<Scheme>(),
              "backward Euler with a linear solve, or explicit FTCS (refuses an unstable dt)");
  deck::Registry<SolverInfo>& solvers = solver_registry();
  s.string("solver.method", "cg", solvers.names(), "linear solver (" + solvers.described() + ")")
      .string("solver.preconditioner", "none", enum_words<Preconditioner>(),
              "preconditioner of the linear solve (of the methods that apply one)")
      .real("solver.eps", 1e-10, {0.0, 1.0}, "",
            "relative tolerance: stop when sqrt(|rho|) < eps ||r0|| as TeaLeaf does")
      .integer("solver.max_iters", 1000, {1, 1e9}, "",
               "iterations per solve; not converged by then is a failed solve (exit code 3)")
      .integer("solver.presteps", 25, {1, 1e6}, "",
               "CG iterations before Chebyshev or PPCG estimate eigenvalues")
      .real("solver.epslim", 1.0, {0.0, none}, "",
            "... and only once the CG error is below this (TeaLeaf's tl_ch_cg_epslim)")
      .boolean("solver.check_result", false,
               "recompute the true residual after each solve and report it")
      .string("solver.coefficient", "density", enum_words<Coefficient>(),
              "conductivity: mean of 1/density (TeaLeaf's default) or of density");
  solvers.merge_keys(s, "solver.", "solver.method");
  // When each key takes effect: a key given where it would do nothing is
  // refused (Schema::when). A solver that declares no fields for a
  // preconditioner (Jacobi) applies none.
  std::vector<std::string> preconditioned;
  for (const SolverInfo* i : solvers.all()) {
    if (i->preconditioned_fields > 0) preconditioned.push_back(i->name);
  }
  s.when("solver.preconditioner", "solver.method", preconditioned);
  // Only the methods that switch from CG to a polynomial read the switch's keys.
  s.when("solver.presteps", "solver.method", {"chebyshev", "ppcg"})
      .when("solver.epslim", "solver.method", {"chebyshev", "ppcg"});
  // The explicit scheme solves nothing: no key of the linear solve acts there.
  for (const char* key :
       {"solver.method", "solver.preconditioner", "solver.eps", "solver.max_iters",
        "solver.presteps", "solver.epslim", "solver.check_result"}) {
    s.when(key, "time.scheme", {"implicit"});
  }
  const std::string fills = "state 1 fills the domain";
  for (const char* key : {"geometry", "lower", "upper", "centre", "radius"}) {
    s.from_table(std::string("states.#.") + key, 2, fills);
  }
  s.when("states.#.lower", "states.#.geometry", {"rectangle", "cuboid"})
      .when("states.#.upper", "states.#.geometry", {"rectangle", "cuboid"})
      .when("states.#.centre", "states.#.geometry", {"circle", "sphere", "point"})
      .when("states.#.radius", "states.#.geometry", {"circle", "sphere"});
  declare_output_keys(s, "kpmap-heat", "steps");
  s.integer("output.summary_every", 10, {0, none}, "",
            "print the field summary every this many steps, and at the start and end (0: "
            "those only; history.csv has every step)")
      .integer("output.fields_every", 0, {0, none}, "",
               "HDF5 + XDMF field dump every this many steps (0: none; TeaLeaf's visit_frequency)")
      .integer("output.test_problem", 0, {0, 6}, "",
               "TeaLeaf benchmark case: compare the final U with TeaLeaf's published value");
  return s;
}

std::string fmt(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

// A list of 0 or `want` reals at `path`; empty -> `fallback`.
std::array<double, 3> vec3(const deck::Deck& d, const std::string& path, int want,
                           std::array<double, 3> fallback, bool allow_empty) {
  const auto& v = d.real_list(path);
  if (v.empty() && allow_empty) return fallback;
  if (static_cast<int>(v.size()) != want) {
    throw InputError(d.where(path) + "key " + d.named(path) + ": expected " + std::to_string(want) +
                         " numbers for a " + std::to_string(want) + "-D mesh, found " +
                         std::to_string(v.size()),
                     ErrorScope::all_ranks);
  }
  std::array<double, 3> out = fallback;
  for (int i = 0; i < want; ++i) out[i] = v[i];
  return out;
}

// Each section of the deck into its part of the run, in the order the
// later ones need (the states and the solver need the mesh's dimensions).

// [mesh]: cells, corners, ghost width, process grid.
void read_mesh(const deck::Deck& d, HeatConfig& c) {
  const auto& cells = d.integer_list("mesh.cells");
  if (cells.size() != 2 && cells.size() != 3) {
    throw d.bad("mesh.cells", "expected 2 (x, y) or 3 (x, y, z) cell counts, found " +
                                  std::to_string(cells.size()));
  }
  c.ndim = static_cast<int>(cells.size());
  // The mesh's cell count must fit the 64-bit indices that count it (the
  // schema keeps each entry >= 1; their product is unbounded).
  long long total = 1;
  for (int i = 0; i < c.ndim; ++i) {
    if (total > std::numeric_limits<long long>::max() / cells[i]) {
      throw d.bad("mesh.cells", "the mesh has more cells than a 64-bit integer counts");
    }
    total *= cells[i];
    c.cells[i] = static_cast<std::size_t>(cells[i]);
  }
  c.lower = vec3(d, "mesh.lower", c.ndim, {0, 0, 0}, true);
  c.upper = vec3(d, "mesh.upper", c.ndim, {1, 1, 1}, false);
  for (int i = 0; i < c.ndim; ++i) {
    if (!(c.upper[i] > c.lower[i])) {
      throw d.bad(d.element("mesh.upper", i),
                  "must exceed the lower corner (mesh.lower) in every dimension; dimension " +
                      std::to_string(i) + " has lower " + fmt(c.lower[i]) + " and upper " +
                      fmt(c.upper[i]));
    }
  }
  c.halo_depth = static_cast<int>(d.integer("mesh.halo_depth"));
  c.depth_key = d.where("mesh.halo_depth") + "key " + d.named("mesh.halo_depth");
  if (d.given("mesh.ranks")) c.ranks_key = d.where("mesh.ranks") + "key " + d.named("mesh.ranks");
  for (long long r : d.integer_list("mesh.ranks")) {
    if (r > std::numeric_limits<int>::max()) {
      throw d.bad("mesh.ranks",
                  "an entry of " + std::to_string(r) + " is more ranks than MPI counts");
    }
    c.ranks.push_back(static_cast<int>(r));
  }
  if (!c.ranks.empty() && static_cast<int>(c.ranks.size()) != c.ndim) {
    throw d.bad("mesh.ranks", "expected " + std::to_string(c.ndim) + " entries (one per " +
                                  "dimension), found " + std::to_string(c.ranks.size()));
  }
}

// [states.N]: the background (1) and the regions painted over it.
void read_states(const deck::Deck& d, HeatConfig& c) {
  const std::string& src = d.source();
  const auto indices = d.indices("states");
  if (indices.empty()) {
    throw InputError(src + ": no states: a deck needs at least [states.1] (the background) " +
                         "with a density and an energy",
                     ErrorScope::all_ranks);
  }
  for (std::size_t n = 0; n < indices.size(); ++n) {
    if (indices[n] != static_cast<int>(n) + 1) {
      throw InputError(src + ": states are numbered 1, 2, 3, ... without gaps; states." +
                           std::to_string(n + 1) + " is missing",
                       ErrorScope::all_ranks);
    }
    const std::string p = "states." + std::to_string(n + 1) + ".";
    State s;
    s.density = d.real(p + "density");
    if (!(s.density > 0)) throw d.bad(p + "density", "must be positive, found " + fmt(s.density));
    s.energy = d.real(p + "energy");
    const std::string& g = d.string(p + "geometry");
    if (g == "rectangle" || g == "cuboid") {
      s.geometry = Geometry::rectangle;
    } else if (g == "circle" || g == "sphere") {
      s.geometry = Geometry::circle;
    } else {
      s.geometry = Geometry::point;
    }
    s.radius = d.real(p + "radius");
    if (n > 0) {  // state 1 is the background: its region is the whole domain
      if (s.geometry == Geometry::rectangle) {
        s.lower = vec3(d, p + "lower", c.ndim, {0, 0, 0}, false);
        s.upper = vec3(d, p + "upper", c.ndim, {0, 0, 0}, false);
        for (int i = 0; i < c.ndim; ++i) {
          if (!(s.upper[i] > s.lower[i])) {
            throw d.bad(p + "upper", "must exceed " + d.named(p + "lower") + " in every dimension");
          }
        }
      } else {
        s.centre = vec3(d, p + "centre", c.ndim, {0, 0, 0}, false);
        if (s.geometry == Geometry::circle && !(s.radius > 0)) {
          throw d.bad(p + "radius", "a " + g + " needs a positive radius");
        }
      }
    }
    c.states.push_back(s);
  }
}

// [time]: step, end, scheme.
void read_time(const deck::Deck& d, HeatConfig& c) {
  c.dt = d.real("time.dt");
  if (!(c.dt > 0)) throw d.bad("time.dt", "must be positive, found " + fmt(c.dt));
  c.end_time = d.real("time.end_time");
  c.end_step = static_cast<long>(d.integer("time.end_step"));
  // A run ends once time + dt / 1e9 reaches end_time (Simulation::done):
  // an end time within that of 0 runs no step at all.
  if (!(c.end_time > 1e-9 * c.dt)) {
    char text[160];
    std::snprintf(text, sizeof text,
                  "the run ends at %g s, before its first step of %g s: it would do nothing "
                  "(raise time.end_time)",
                  c.end_time, c.dt);
    throw d.bad("time.end_time", text);
  }
  c.scheme = *enum_of<Scheme>(d.string("time.scheme"));  // one of the schema's choices
}

// [solver]: the method, its own keys, and what every method reads.
void read_solver(const deck::Deck& d, HeatConfig& c) {
  c.solver.method = d.string("solver.method");
  // A key only other methods read was refused as the deck was read
  // (Registry::merge_keys).
  c.solver.keys = solver_registry().own_keys(d, "solver.", c.solver.method);
  c.solver.preconditioner = *enum_of<Preconditioner>(d.string("solver.preconditioner"));
  c.solver.eps = d.real("solver.eps");
  if (!(c.solver.eps > 0)) {
    // A tolerance of 0 (or one that underflowed to 0, as 1d-400) is never
    // met: the run would iterate to solver.max_iters and end as unconverged.
    throw d.bad("solver.eps",
                "0 is a tolerance no solve reaches (a residual is never exactly 0 in floating "
                "point); give a positive one, such as 1e-10");
  }
  c.solver.max_iters = static_cast<long>(d.integer("solver.max_iters"));
  c.solver.presteps = static_cast<int>(d.integer("solver.presteps"));
  c.solver.epslim = d.real("solver.epslim");
  c.solver.check_result = d.boolean("solver.check_result");
  c.solver.coefficient = *enum_of<Coefficient>(d.string("solver.coefficient"));
  if (c.solver.preconditioner == Preconditioner::jac_block && c.halo_depth > 1) {
    throw d.bad("solver.preconditioner",
                "jac_block works with mesh.halo_depth = 1 only (as in TeaLeaf), found " +
                    std::to_string(c.halo_depth));
  }
}

// [output]: the keys every run shares (run/output_keys.hpp) and kpmap-heat's own.
void read_output(const deck::Deck& d, HeatConfig& c) {
  c.output = read_output_keys(d);
  c.summary_every = static_cast<long>(d.integer("output.summary_every"));
  c.fields_every = static_cast<long>(d.integer("output.fields_every"));
  c.test_problem = static_cast<int>(d.integer("output.test_problem"));
}

}  // namespace

deck::Schema heat_schema() { return build_schema(); }

HeatConfig from_deck(const deck::Deck& d) {
  // A refused value's message cites the line (and, for a TeaLeaf deck, the
  // TeaLeaf keys) that set it (Deck::bad).
  HeatConfig c;
  read_mesh(d, c);
  read_states(d, c);
  read_time(d, c);
  read_solver(d, c);
  read_output(d, c);
  // The method's own keys against the whole run (sim/solvers/info.hpp).
  if (const auto& configure = solver_info(c.solver.method).configure) configure(d, c);
  return c;
}

}  // namespace kpmap::sim
