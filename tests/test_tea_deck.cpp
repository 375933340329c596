// SPDX-License-Identifier: BSD-3-Clause
// TeaLeaf's `*tea` decks: every spelling real decks use resolves to the same
// run as the equivalent native deck, implementation-only keys are noted,
// and every malformed deck is refused with the file, line and key.

#include "support/mpi_test.hpp"

#include <kpmap/deck/deck.hpp>
#include <kpmap/sim/config.hpp>
#include <kpmap/sim/solvers/info.hpp>
#include <kpmap/sim/tea_deck.hpp>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;
namespace sim = kpmap::sim;

namespace {

// TeaLeaf_ref's Benchmarks/tea_bm_1.in (the 2-D 10 x 10 CG benchmark).
const std::string tea_bm_1 =
    "*tea\n"
    "state 1 density=100.0 energy=0.0001\n"
    "state 2 density=0.1 energy=25.0 geometry=rectangle xmin=0.0 xmax=1.0 ymin=1.0 ymax=2.0\n"
    "state 3 density=0.1 energy=0.1 geometry=rectangle xmin=1.0 xmax=6.0 ymin=1.0 ymax=2.0\n"
    "state 4 density=0.1 energy=0.1 geometry=rectangle xmin=5.0 xmax=6.0 ymin=1.0 ymax=8.0\n"
    "state 5 density=0.1 energy=0.1 geometry=rectangle xmin=5.0 xmax=10.0 ymin=7.0 ymax=8.0\n"
    "x_cells=10\ny_cells=10\nxmin=0.0\nymin=0.0\nxmax=10.0\nymax=10.0\n"
    "initial_timestep=0.004\nend_step=10\ntl_max_iters=10000\ntl_use_cg\ntl_eps 1.0e-15\n"
    "test_problem 1\n*endtea\n";

// The same run as a native deck.
const std::string native_bm_1 =
    "[mesh]\ncells = [10, 10]\nlower = [0.0, 0.0]\nupper = [10.0, 10.0]\n"
    "[states.1]\ndensity = 100.0\nenergy = 0.0001\n"
    "[states.2]\ndensity = 0.1\nenergy = 25.0\nlower = [0.0, 1.0]\nupper = [1.0, 2.0]\n"
    "[states.3]\ndensity = 0.1\nenergy = 0.1\nlower = [1.0, 1.0]\nupper = [6.0, 2.0]\n"
    "[states.4]\ndensity = 0.1\nenergy = 0.1\nlower = [5.0, 1.0]\nupper = [6.0, 8.0]\n"
    "[states.5]\ndensity = 0.1\nenergy = 0.1\nlower = [5.0, 7.0]\nupper = [10.0, 8.0]\n"
    "[time]\ndt = 0.004\nend_step = 10\n"
    "[solver]\nmethod = \"cg\"\neps = 1e-15\nmax_iters = 10000\n"
    "[output]\ntest_problem = 1\n";

kpmap::deck::Deck load_text(const std::string& text, std::vector<std::string> sets = {}) {
  const auto t = sim::heat_deck_translator(text, "tea.in", sets);
  return kpmap::deck::parse(sim::heat_schema(), t.toml, "tea.in", sets, &t);
}

// The resolved deck without its first (comment) line, which names the source.
std::string resolved(const kpmap::deck::Deck& d) {
  const std::string t = d.to_toml();
  return t.substr(t.find('\n'));
}

struct Bad {
  const char* name;
  std::string text;
  std::string expect;
};

}  // namespace

TEST_CASE("tea_bm_1.in resolves to the same run as the native deck", "[tea]") {
  CHECK(sim::is_tea_deck(tea_bm_1));
  CHECK_FALSE(sim::is_tea_deck(native_bm_1));
  const auto tea = load_text(tea_bm_1);
  const auto native = kpmap::deck::parse(sim::heat_schema(), native_bm_1, "native.toml");
  CHECK(resolved(tea) == resolved(native));
  const auto c = sim::from_deck(tea);
  CHECK(c.ndim == 2);
  CHECK(c.cells[0] == 10);
  CHECK(c.states.size() == 5);
  CHECK(c.solver.method == "cg");
  CHECK(c.solver.eps == 1e-15);
  CHECK(c.test_problem == 1);
}

TEST_CASE("a translated TeaLeaf deck writes its numbers as a TOML deck does", "[tea]") {
  // The shortest text that reads back the same double (deck::toml_number):
  // TeaLeaf's 0.1 is 0.1 in the translation, not 0.10000000000000001.
  std::vector<std::string> sets;
  const std::string toml = sim::heat_deck_translator(tea_bm_1, "tea.in", sets).toml;
  CHECK(toml.find("density = 0.1\n") != std::string::npos);
  CHECK(toml.find("energy = 25.0\n") != std::string::npos);
  CHECK(toml.find("0000000") == std::string::npos);
}

TEST_CASE("every spelling of a TeaLeaf deck reads the same", "[tea]") {
  const auto reference = resolved(load_text(tea_bm_1));
  const std::vector<std::string> spellings = {
      // key value, key = value, upper case, comments, blank lines, tabs, CRLF
      "! TeaLeaf benchmark 1\n\n*TEA\n"
      "state 1 density 100.0 energy 0.0001   ! the background\n"
      "STATE 2 DENSITY = 0.1 ENERGY = 25.0 GEOMETRY = RECTANGLE XMIN = 0.0 XMAX = 1.0 "
      "YMIN = 1.0 YMAX = 2.0\n"
      "state 3 density=0.1,energy=0.1,geometry=rectangle,xmin=1.0,xmax=6.0,ymin=1.0,ymax=2.0\r\n"
      "state\t4 density=0.1 energy=0.1 geometry=rectangle xmin=5.0 xmax=6.0 ymin=1.0 ymax=8.0\n"
      "state 5 density=0.1 energy=0.1 geometry=rectangle xmin=5 xmax=10 ymin=7 ymax=8 ; c\n"
      "\n  x_cells = 10   y_cells = 10\nxmin 0 ymin 0 xmax 10.0 ymax 1.0d1\n"
      "initial_timestep=4.0d-3\nend_step=10\ntl_max_iters 10000 tl_use_cg tl_eps=1e-15\n"
      "test_problem=1\n*endtea\nanything after the block is ignored\n",
      // The C++ ports' un-prefixed names (UoB-HPC/TeaLeaf's benchmark decks).
      "*tea\n" + tea_bm_1.substr(5, tea_bm_1.find("x_cells") - 5) +
          "x_cells=10\ny_cells=10\nxmin=0.0\nymin=0.0\nxmax=10.0\nymax=10.0\n"
          "initial_timestep=0.004\nend_step=10\nmax_iters=10000\nuse_cg\neps 1.0e-15\n"
          "test_problem 1\nuse_c_kernels\n*endtea\n",
      // A UTF-8 byte-order mark before the block is skipped, as in a TOML deck.
      "\xEF\xBB\xBF" + tea_bm_1,
      // Of two solver switches the later wins, as in TeaLeaf.
      [] {
        std::string t = tea_bm_1;
        t.erase(t.find("tl_use_cg\n"), 10);
        return t.substr(0, t.size() - 8) + "tl_use_jacobi\ntl_use_cg\n*endtea\n";
      }(),
  };
  for (const auto& text : spellings) {
    CAPTURE(text);
    CHECK(resolved(load_text(text)) == reference);
  }
}

TEST_CASE("TeaLeaf3D decks (cuboids, a closing *tea) are 3-D", "[tea]") {
  const std::string deck =
      "*tea\n"
      "state 1 density=100.0 energy=0.0001\n"
      "state 2 density=0.1 energy=25.0 geometry=cuboid xmin=1.0 xmax=2.0 ymin=1.0 ymax=2.0 "
      "zmin=0.0 zmax=1.0\n"
      "x_cells=10\ny_cells=10\nz_cells=10\nxmin=0.0\nymin=0.0\nzmin=0.0\nxmax=10.0\nymax=10.0\n"
      "zmax=10.0\n\n! Timestep and solver info\ninitial_timestep=0.004\nend_step=10\n"
      "tl_max_iters=10000\n! test_problem 1\ntl_use_cg\ntl_preconditioner_type = none\n"
      "tl_eps=1.0e-15\n*tea";
  const auto c = sim::from_deck(load_text(deck));
  CHECK(c.ndim == 3);
  CHECK(c.cells[2] == 10);
  CHECK(c.upper[2] == 10.0);
  CHECK(c.states[1].geometry == sim::Geometry::rectangle);
  CHECK(c.states[1].lower == std::array<double, 3>{1.0, 1.0, 0.0});
  CHECK(c.states[1].upper == std::array<double, 3>{2.0, 2.0, 1.0});
  CHECK(c.solver.preconditioner == sim::Preconditioner::none);
  CHECK(c.test_problem == 0);  // commented out
}

TEST_CASE("TeaLeaf's defaults fill what a deck leaves out", "[tea]") {
  const auto c = sim::from_deck(load_text("*tea\nstate 1 density=1 energy=2\n*endtea\n"));
  CHECK(c.cells[0] == 10);
  CHECK(c.cells[1] == 10);
  CHECK(c.upper[0] == 100.0);
  CHECK(c.dt == 0.1);
  CHECK(c.solver.method == "jacobi");
  CHECK(c.solver.eps == 1e-10);
  CHECK(c.solver.max_iters == 1000);
  CHECK(c.end_time == 10.0);
  CHECK(c.summary_every == 10);
}

TEST_CASE("every solver key of TeaLeaf_ref maps onto the schema", "[tea]") {
  const auto c = sim::from_deck(
      load_text("*tea\nstate 1 density=1 energy=2\n"
                "state 2 density=2 energy=1 geometry=circle xmin=50 ymin=50 radius=10\n"
                "state 3 density=3 energy=1 geometry=point xmin=20 ymin=30\n"
                "tl_use_chebyshev tl_ch_cg_presteps 30 tl_ch_cg_epslim 0.5 tl_check_result\n"
                "tl_preconditioner_type jac_diag tl_coefficient_inverse_density halo_depth 2\n"
                "tl_ppcg_inner_steps 12 summary_frequency 5 visit_frequency 4 end_time 1.5\n"
                "tl_check_result_every 20\n*endtea\n"));
  CHECK(c.solver.method == "chebyshev");
  CHECK(c.solver.presteps == 30);
  CHECK(c.solver.epslim == 0.5);
  CHECK(c.solver.check_result);
  CHECK(c.solver.preconditioner == sim::Preconditioner::jac_diag);
  CHECK(c.solver.coefficient == sim::Coefficient::inverse_density);
  CHECK(c.halo_depth == 2);
  CHECK(c.summary_every == 5);
  CHECK(c.fields_every == 4);
  CHECK(c.end_time == 1.5);
  // Chebyshev's own key; PPCG's inner steps are PPCG's (below).
  CHECK(sim::solver_settings(c.solver).integer("check_every") == 20);
  CHECK(c.solver.keys.count("ppcg_inner_steps") == 0);
  CHECK_THROWS(sim::solver_settings(c.solver).integer("ppcg_inner_steps"));
  CHECK(c.states[1].geometry == sim::Geometry::circle);
  CHECK(c.states[1].centre[0] == 50.0);
  CHECK(c.states[1].radius == 10.0);
  CHECK(c.states[2].geometry == sim::Geometry::point);
  CHECK(c.states[2].centre[1] == 30.0);
  const auto p =
      sim::from_deck(load_text("*tea\nstate 1 density=1 energy=2\ntl_use_ppcg\n"
                               "tl_ppcg_inner_steps -1\n*endtea\n"));
  CHECK(p.solver.method == "ppcg");
  // TeaLeaf's guess: 4 int(sqrt(sqrt(100))).
  CHECK(sim::solver_settings(p.solver).integer("ppcg_inner_steps") == 4 * 3);
  const auto given = sim::from_deck(load_text(
      "*tea\nstate 1 density=1 energy=2\ntl_use_ppcg\ntl_ppcg_inner_steps 12\n*endtea\n"));
  CHECK(sim::solver_settings(given.solver).integer("ppcg_inner_steps") == 12);
}

TEST_CASE("a solver key the deck's method does not read has no effect, as in TeaLeaf", "[tea]") {
  // TeaLeaf reads tl_ppcg_inner_steps and tl_check_result_every whatever the
  // method; kpmap-heat's solvers own them, so the translation drops the one
  // the method does not read, with a note naming who reads it.
  const std::string deck =
      "*tea\nstate 1 density=1 energy=2\ntl_use_cg\ntl_ppcg_inner_steps 12\n"
      "tl_check_result_every 20\n*endtea\n";
  std::vector<std::string> sets;
  auto t = sim::translate_tea_deck(deck, "tea.in", sets);
  REQUIRE(t.notes.size() == 2);
  CHECK(t.notes[0] ==
        "tea.in:5: note: 'tl_check_result_every' accepted without effect: only the "
        "chebyshev method reads it, and this deck uses cg");
  CHECK(t.notes[1] ==
        "tea.in:4: note: 'tl_ppcg_inner_steps' accepted without effect: only the "
        "ppcg method reads it, and this deck uses cg");
  CHECK_THAT(t.toml, !ContainsSubstring("ppcg_inner_steps") && !ContainsSubstring("check_every"));
  CHECK(sim::from_deck(load_text(deck)).solver.method == "cg");
  // The method a --set chooses, in either form, decides.
  for (const std::string method : {"use_ppcg", "solver.method=ppcg", "solver.method=\"ppcg\""}) {
    CAPTURE(method);
    const auto c = sim::from_deck(load_text(deck, {method}));
    CHECK(c.solver.method == "ppcg");
    CHECK(sim::solver_settings(c.solver).integer("ppcg_inner_steps") == 12);
  }
  // A kpmap-heat deck that gives another method's key is refused, as before.
  CHECK_THROWS_WITH(sim::from_deck(load_text(native_bm_1, {"solver.check_every=20"})),
                    ContainsSubstring("solver.method = \"cg\" reads no check_every"));
}

TEST_CASE("a state's key that its geometry or its number makes useless is refused", "[tea]") {
  const std::string head = "*tea\nx_cells=4\ny_cells=4\nxmax=10.0\nymax=10.0\n";
  // TeaLeaf reads a radius for circles only, and state 1 fills the domain.
  const std::pair<std::string, std::string> cases[] = {
      {"state 1 density=1 energy=1\nstate 2 density=2 energy=2 geometry=rectangle radius=2.0 "
       "xmin=1 xmax=2 ymin=1 ymax=2\n",
       "tea.in:7: key 'state 2 radius' (states.2.radius): states.2.geometry = \"rectangle\" reads "
       "no states.2.radius, it would have no effect"},
      {"state 1 density=1 energy=1 geometry=circle\n",
       "tea.in:6: key 'state 1 geometry' (states.1.geometry): it would have no effect in states.1 "
       "(state 1 fills the domain"},
      {"state 1 density=1 energy=1 xmin=1.0 xmax=2.0\n",
       "tea.in:6: key 'state 1 xmin/ymin' (states.1.lower): it would have no effect in states.1"},
      // A circle's centre is its xmin, ymin: an xmax, ymax was dropped without a word.
      {"state 1 density=1 energy=1\nstate 2 density=2 energy=2 geometry=circle xmin=5.0 "
       "ymin=5.0 xmax=9.0 ymax=9.0 radius=1.5\n",
       "tea.in:7: key 'state 2 xmax/ymax' (states.2.upper): states.2.geometry = \"circle\" reads "
       "no states.2.upper, it would have no effect"},
      // A point has neither a radius nor an upper corner.
      {"state 1 density=1 energy=1\nstate 2 density=2 energy=2 geometry=point xmin=5.0 "
       "ymin=5.0 radius=1.5\n",
       "tea.in:7: key 'state 2 radius' (states.2.radius): states.2.geometry = \"point\" reads "
       "no states.2.radius, it would have no effect"},
      {"state 1 density=1 energy=1\nstate 2 density=2 energy=2 geometry=point xmin=5.0 "
       "ymin=5.0 xmax=6.0\n",
       "tea.in:7: key 'state 2 xmax/ymax' (states.2.upper): states.2.geometry = \"point\" reads "
       "no states.2.upper"},
      // A 2-D mesh (no z_cells, zmin, zmax): a state in z made the run 3-D
      // with TeaLeaf's default z extent.
      {"state 1 density=1 energy=1\nstate 2 density=2 energy=2 geometry=rectangle xmin=1 xmax=2 "
       "ymin=1 ymax=2 zmin=0.0 zmax=1.0\n",
       "tea.in:7: key 'state 2 zmin': it bounds the state in z, and the mesh is 2-D (the deck "
       "gives no z_cells, zmin or zmax)"},
      {"state 1 density=1 energy=1\nstate 2 density=2 energy=2 geometry=sphere xmin=5 ymin=5 "
       "radius=1\n",
       "tea.in:7: key 'state 2 geometry': a sphere is 3-D, and the mesh is 2-D"},
  };
  for (const auto& [states, expect] : cases) {
    CAPTURE(states);
    CHECK_THROWS_WITH(load_text(head + states + "*endtea\n"), StartsWith(expect));
  }
  // What TeaLeaf's own decks write is read as before: state 1 as a rectangle.
  CHECK(load_text(head + "state 1 density=1 energy=1 geometry=rectangle\n*endtea\n")
            .string("states.1.geometry") == "rectangle");
}

TEST_CASE("keys that only pick TeaLeaf's implementation are accepted with a note", "[tea]") {
  std::vector<std::string> sets;
  const auto t = sim::translate_tea_deck(
      "*tea\nstate 1 density=1 energy=2\nuse_fortran_kernels\nprofiler_on\n"
      "tiles_per_task 4 reflective_boundary\n*endtea\n",
      "tea.in", sets);
  REQUIRE(t.notes.size() == 4);
  CHECK_THAT(t.notes[0],
             StartsWith("tea.in:3: note: 'use_fortran_kernels' accepted without effect"));
  CHECK_THAT(t.notes[1], StartsWith("tea.in:4: note: 'profiler_on'"));
  CHECK_THAT(t.notes[2], StartsWith("tea.in:5: note: 'tiles_per_task'"));
  CHECK_THAT(t.notes[3], ContainsSubstring("zero-flux"));
}

TEST_CASE("--set takes TeaLeaf keys and schema keys alike", "[tea]") {
  const auto d = load_text(
      tea_bm_1, {"tl_max_iters=50", "solver.eps=1e-9", "use_chebyshev", "states.2.energy=30"});
  CHECK(d.integer("solver.max_iters") == 50);
  CHECK(d.real("solver.eps") == 1e-9);
  CHECK(d.string("solver.method") == "chebyshev");
  CHECK(d.real("states.2.energy") == 30.0);
  CHECK_THROWS_WITH(load_text(tea_bm_1, {"tl_max_iterz=5"}),
                    StartsWith("--set tl_max_iterz=5: unknown TeaLeaf key 'tl_max_iterz'; did you "
                               "mean 'tl_max_iters'?"));
  CHECK_THROWS_WITH(load_text(tea_bm_1, {"x_cells=ten"}),
                    StartsWith("--set x_cells=ten: key 'x_cells': expected an integer"));
  // One key per --set: two would be two settings, a state line a third way in.
  CHECK_THROWS_WITH(load_text(tea_bm_1, {"x_cells=12 y_cells=12"}),
                    StartsWith("--set x_cells=12 y_cells=12: a --set gives one key"));
  CHECK_THROWS_WITH(load_text(tea_bm_1, {"tl_eps=1e-12 state 3 density=1"}),
                    StartsWith("--set tl_eps=1e-12 state 3 density=1: a --set gives one key"));
}

TEST_CASE("malformed TeaLeaf decks are refused with file, line and key", "[tea]") {
  const std::string head = "*tea\nstate 1 density=100.0 energy=0.0001\n";  // lines 1-2
  const std::vector<Bad> cases = {
      {"unknown key", head + "tl_use_cgg\n*endtea\n",
       "tea.in:3: unknown TeaLeaf key 'tl_use_cgg'; did you mean 'tl_use_cg'?"},
      {"unknown key far from any", head + "x_cells=10 frobnicate\n",
       "tea.in:3: unknown TeaLeaf key 'frobnicate' (kpmap-heat reads the keys"},
      {"key of another TeaLeaf", head + "hydro_on\n",
       "tea.in:3: TeaLeaf key 'hydro_on' (of another TeaLeaf version) is not supported"},
      {"missing value", head + "x_cells\n", "tea.in:3: key 'x_cells' needs a value"},
      {"integer given a word", head + "x_cells=ten\n",
       "tea.in:3: key 'x_cells': expected an integer, found 'ten'"},
      {"integer given a real", head + "end_step 2.5\n",
       "tea.in:3: key 'end_step': expected an integer, found '2.5'"},
      {"real given a word", head + "tl_eps=small\n",
       "tea.in:3: key 'tl_eps': expected a number, found 'small'"},
      {"no cells", head + "y_cells 0\n", "tea.in:3: key 'y_cells' must be at least 1, found 0"},
      {"out of range", head + "tl_max_iters 0\n",
       "tea.in:3: key 'tl_max_iters' (solver.max_iters) is out of range: must be >= 1"},
      {"no such test problem", head + "test_problem 9\n",
       "tea.in:3: key 'test_problem' (output.test_problem) is out of range: must be >= 0 and "
       "<= 6, found 9"},
      {"bad preconditioner", head + "tl_preconditioner_type jacobi\n",
       "tea.in:3: key 'tl_preconditioner_type': 'jacobi' is not one of none, jac_diag, "
       "jac_block"},
      {"state after a key on its line", head + "end_step=5 state 2 density=1.0 energy=1\n",
       "tea.in:3: 'state' after '5' on the same line: a state is a line of its own"},
      {"state key twice", head + "state 2 density=1 energy=1 density=5 geometry=rectangle\n",
       "tea.in:3: state 2: key 'density' is given twice on the line; give each key once"},
      {"state bound twice", head + "state 2 density=1 energy=1 ymax=2 ymax=3\n",
       "tea.in:3: state 2: key 'ymax' is given twice on the line; give each key once"},
      {"state twice", head + "state 1 density=1 energy=1\n",
       "tea.in:3: state 1 is defined twice (first at tea.in:2)"},
      {"state key misspelt", head + "state 2 densty=1 energy=1 geometry=rectangle\n",
       "tea.in:3: state 2: unknown key 'densty'; did you mean 'density'?"},
      {"state value missing", head + "state 2 density=1 energy\n",
       "tea.in:3: state 2: key 'energy' needs a value"},
      {"state value not a number", head + "state 2 density=heavy energy=1\n",
       "tea.in:3: state 2: key 'density': expected a number, found 'heavy'"},
      {"state geometry unknown", head + "state 2 density=1 energy=1 geometry=hexagon\n",
       "tea.in:3: state 2: geometry 'hexagon' is not one of rectangle, cuboid, circle, sphere"},
      {"state without energy", head + "state 2 density=1 geometry=rectangle\n",
       "tea.in:3: state 2 needs a density and an energy"},
      {"state without number", head + "state\n", "tea.in:3: 'state' needs a state number"},
      {"state number 0", head + "state 0 density=1 energy=1\n",
       "tea.in:3: 'state 0': a state number is an integer from 1 to 9999"},
      {"state without geometry", head + "state 2 density=1 energy=1 xmin=1\n*endtea\n",
       "tea.in:3: state 2 needs a geometry"},
      {"states with a gap", head + "state 3 density=1 energy=1 geometry=rectangle\n*endtea\n",
       "tea.in: states are numbered 1, 2, 3, ... without gaps; states.2 is missing"},
      {"no states", "*tea\nx_cells 10\n*endtea\n", "tea.in: no states"},
      {"another section", head + "*hydro\n",
       "tea.in:3: '*hydro': kpmap-heat reads the *tea ... *endtea block"},
      {"lower above upper", head + "xmin 10 xmax 0\n*endtea\n",
       "tea.in:3: key 'xmax' (mesh.upper[0]): must exceed the lower corner (mesh.lower) in every "
       "dimension; dimension 0 has lower 10 and upper 0"},
      {"bound on its own line", head + "xmin 0 xmax 10\nymin 5\nymax 1\n*endtea\n",
       "tea.in:5: key 'ymax' (mesh.upper[1]): must exceed the lower corner"},
      // Checks across keys name the TeaLeaf keys the deck wrote, and their line.
      {"state box inside out",
       head +
           "state 2 density=1 energy=1 geometry=rectangle xmin=5 xmax=1 ymin=0 ymax=1\n*endtea\n",
       "tea.in:3: key 'state 2 xmax/ymax' (states.2.upper): must exceed 'state 2 xmin/ymin' "
       "(states.2.lower) in every dimension"},
      {"state density not positive", head + "state 2 density=-1 energy=1 geometry=point\n*endtea\n",
       "tea.in:3: key 'state 2 density' (states.2.density) is out of range: must be >= 0"},
      {"circle without radius",
       head + "state 2 density=1 energy=1 geometry=circle xmin=1\n*endtea\n",
       "tea.in:3: key 'state 2 radius' (states.2.radius): a circle needs a positive radius"},
      {"zero time step", head + "\n\ninitial_timestep 0\n*endtea\n",
       "tea.in:5: key 'initial_timestep' (time.dt): must be positive, found 0"},
      {"cells over lines",
       head + "x_cells 4000000000\n\ny_cells 4000000000 z_cells 4000000000\n*endtea\n",
       "tea.in:3: key 'x_cells/y_cells/z_cells' (mesh.cells): the mesh has more cells"},
      {"implementation key without its number", head + "tiles_per_task many\n",
       "tea.in:3: key 'tiles_per_task': expected an integer, found 'many'"},
      // As strict as a TOML deck: a key given twice, a control character.
      {"key twice", head + "x_cells=10\ny_cells=10 x_cells=12\n",
       "tea.in:4: key 'x_cells' is given twice (first at tea.in:3)"},
      {"switch twice", head + "tl_use_cg\ntl_use_cg\n",
       "tea.in:4: key 'tl_use_cg' is given twice (first at tea.in:3)"},
      // The block's bounds: one block, closed (a cut-off deck would run on
      // defaults; a second block's keys would be ignored, as TeaLeaf does).
      {"no *endtea", head + "x_cells 10\n",
       "tea.in:1: the '*tea' block that begins here has no end: close it with '*endtea'"},
      {"second *tea block", head + "*endtea\n*tea\nx_cells 10\n*endtea\n",
       "tea.in:4: a second '*tea' block (the first ends at tea.in:3)"},
      {"second block after TeaLeaf3D's closing *tea", head + "*tea\n*tea\nx_cells 10\n*tea\n",
       "tea.in:4: a second '*tea' block (the first ends at tea.in:3)"},
      {"no *tea line", "! a TeaLeaf deck\nstate 1 density=100.0 energy=0.0001\n*endtea\n",
       "tea.in:3: '*endtea' without '*tea'"},
      {"no *tea line nor *endtea", "! a TeaLeaf deck\nx_cells 10\n",
       "tea.in: no '*tea' line: a TeaLeaf deck holds its keys between '*tea' and '*endtea'"},
      {"control character", head + "x_cells=1\x01\n",
       "tea.in:3: a control character (U+0001) in column 10; a deck is plain text"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    try {
      sim::from_deck(load_text(c.text));
      FAIL_CHECK("accepted: " << c.name);
    } catch (const kpmap::InputError& e) {
      CHECK_THAT(std::string(e.what()), ContainsSubstring(c.expect));
      CHECK(e.code() == kpmap::exit_code::bad_input);
    }
  }
}

TEST_CASE("meshes and process grids beyond what the indices count are refused", "[tea]") {
  const std::string head = "*tea\nstate 1 density=1 energy=2\ntl_use_ppcg\n";
  // 2^63 - 1 cells and less: TeaLeaf's PPCG guess, 4 (cells)^(1/4), still fits an int.
  const auto c =
      sim::from_deck(load_text(head + "x_cells 3037000499 y_cells 3037000499\n*endtea\n"));
  CHECK(sim::solver_settings(c.solver).integer("ppcg_inner_steps") == 4 * 55108);
  // More is refused; the second mesh also overflowed the PPCG guess (4 x 6.8e8 > 2^31).
  for (const std::string cells :
       {"x_cells 9000000000000 y_cells 9000000000000 z_cells 9000",
        "x_cells 600000000000 y_cells 600000000000 z_cells 600000000000"}) {
    CAPTURE(cells);
    CHECK_THROWS_WITH(
        sim::from_deck(load_text(head + cells + "\n*endtea\n")),
        ContainsSubstring(
            "tea.in:4: key 'x_cells/y_cells/z_cells' (mesh.cells): the mesh has more cells than "
            "a 64-bit integer counts"));
  }
  // A process grid entry beyond an int was cut to its low 32 bits (here: 2).
  CHECK_THROWS_WITH(sim::from_deck(load_text(tea_bm_1, {"mesh.ranks=[4294967298, 1]"})),
                    ContainsSubstring("key 'mesh.ranks': an entry of 4294967298 is more ranks"));
}

TEST_CASE("a TeaLeaf deck loads collectively like a TOML deck", "[tea][mpi]") {
  const std::string path = "test_tea_deck_np" + std::to_string(kpmap::test::world_size()) + ".in";
  if (kpmap::test::world_rank() == 0) std::ofstream(path) << tea_bm_1;
  MPI_Barrier(MPI_COMM_WORLD);
  auto d = kpmap::deck::load(sim::heat_schema(), path, {"tl_eps=1e-12"}, MPI_COMM_WORLD,
                             sim::heat_deck_translator);
  CHECK(d.real("solver.eps") == 1e-12);
  CHECK(d.source() == path);
  try {
    kpmap::deck::load(sim::heat_schema(), path, {"tl_eps=tiny"}, MPI_COMM_WORLD,
                      sim::heat_deck_translator);
    FAIL_CHECK("accepted tl_eps=tiny");
  } catch (const kpmap::InputError& e) {
    CHECK(e.all_ranks());
    CHECK_THAT(std::string(e.what()), ContainsSubstring("key 'tl_eps': expected a number"));
  }
  // Every rank knows where the deck set each key: a check across keys made
  // after the load cites the TeaLeaf key and its line (or its --set).
  d = kpmap::deck::load(sim::heat_schema(), path, {"initial_timestep=0"}, MPI_COMM_WORLD,
                        sim::heat_deck_translator);
  CHECK(d.where("time.dt") == "--set initial_timestep=0: ");
  CHECK(d.named("time.dt") == "'initial_timestep' (time.dt)");
  CHECK(d.where("states.2.density") == path + ":3: ");
  CHECK(d.named("states.2.density") == "'state 2 density' (states.2.density)");
  CHECK_THROWS_WITH(sim::from_deck(d),
                    "--set initial_timestep=0: key 'initial_timestep' (time.dt): must be "
                    "positive, found 0");
  MPI_Barrier(MPI_COMM_WORLD);
  if (kpmap::test::world_rank() == 0) std::remove(path.c_str());
}
