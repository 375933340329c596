// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// The TeaLeaf keys kpmap-heat knows (internal to src/kpmap/sim/tea_deck/):
// what each sets in the kpmap-heat schema, the switches, the keys accepted
// with a note, and those refused.

namespace kpmap::sim::tea {

enum class Kind { integer, real };

// A TeaLeaf key that takes a value and sets one kpmap-heat key (or a mesh bound).
struct ValueKey {
  const char* name;
  const char* target;  // a schema key, or "mesh.cells.N" / "mesh.lower.N" / "mesh.upper.N"
  Kind kind;
};

inline constexpr ValueKey value_keys[] = {
    {"initial_timestep", "time.dt", Kind::real},
    {"end_time", "time.end_time", Kind::real},
    {"end_step", "time.end_step", Kind::integer},
    {"xmin", "mesh.lower.0", Kind::real},
    {"ymin", "mesh.lower.1", Kind::real},
    {"zmin", "mesh.lower.2", Kind::real},
    {"xmax", "mesh.upper.0", Kind::real},
    {"ymax", "mesh.upper.1", Kind::real},
    {"zmax", "mesh.upper.2", Kind::real},
    {"x_cells", "mesh.cells.0", Kind::integer},
    {"y_cells", "mesh.cells.1", Kind::integer},
    {"z_cells", "mesh.cells.2", Kind::integer},
    {"visit_frequency", "output.fields_every", Kind::integer},
    {"summary_frequency", "output.summary_every", Kind::integer},
    {"tl_ch_cg_presteps", "solver.presteps", Kind::integer},
    {"presteps", "solver.presteps", Kind::integer},
    {"tl_ppcg_inner_steps", "solver.ppcg_inner_steps", Kind::integer},
    {"ppcg_inner_steps", "solver.ppcg_inner_steps", Kind::integer},
    {"tl_ch_cg_epslim", "solver.epslim", Kind::real},
    {"epslim", "solver.epslim", Kind::real},
    {"tl_max_iters", "solver.max_iters", Kind::integer},
    {"max_iters", "solver.max_iters", Kind::integer},
    {"tl_eps", "solver.eps", Kind::real},
    {"eps", "solver.eps", Kind::real},
    {"tl_check_result_every", "solver.check_every", Kind::integer},
    {"halo_depth", "mesh.halo_depth", Kind::integer},
    {"test_problem", "output.test_problem", Kind::integer},
};

// A TeaLeaf switch that sets one kpmap-heat key to a value.
struct FlagKey {
  const char* name;
  const char* target;
  const char* value;  // as TOML
};

inline constexpr FlagKey flag_keys[] = {
    {"tl_use_jacobi", "solver.method", "\"jacobi\""},
    {"use_jacobi", "solver.method", "\"jacobi\""},
    {"tl_use_cg", "solver.method", "\"cg\""},
    {"use_cg", "solver.method", "\"cg\""},
    {"tl_use_chebyshev", "solver.method", "\"chebyshev\""},
    {"use_chebyshev", "solver.method", "\"chebyshev\""},
    {"tl_use_ppcg", "solver.method", "\"ppcg\""},
    {"use_ppcg", "solver.method", "\"ppcg\""},
    {"tl_coefficient_density", "solver.coefficient", "\"density\""},
    {"coefficient_density", "solver.coefficient", "\"density\""},
    {"tl_coefficient_inverse_density", "solver.coefficient", "\"inverse_density\""},
    {"coefficient_inverse_density", "solver.coefficient", "\"inverse_density\""},
    {"tl_check_result", "solver.check_result", "true"},
    {"check_result", "solver.check_result", "true"},
    // The C++ ports' switch for their (diagonal) Jacobi preconditioner.
    {"preconditioner_on", "solver.preconditioner", "\"jac_diag\""},
};

// Keys that only pick how TeaLeaf runs, not what it computes: accepted with
// a note. The bool says whether the key takes a value.
struct NoteKey {
  const char* name;
  bool has_value;
  const char* why;
};

inline constexpr NoteKey note_keys[] = {
    {"use_fortran_kernels", false, "picks TeaLeaf's Fortran kernels; kpmap-heat has one set"},
    {"use_c_kernels", false, "picks TeaLeaf's C kernels; kpmap-heat has one set"},
    {"use_oa_kernels", false, "picks TeaLeaf's OpenACC kernels; kpmap-heat has one set"},
    {"use_vector_loops", false, "picks TeaLeaf's vector loops; kpmap-heat has one set"},
    {"profiler_on", false, "kpmap-heat always reports its phase times in result.json"},
    {"verbose_on", false, "kpmap-heat prints residuals on its progress line"},
    {"reflective_boundary", false,
     "kpmap-heat's boundaries are always zero-flux, which is what reflective boundaries give"},
    {"tl_ch_cg_errswitch", false,
     "kpmap-heat switches from CG once both the presteps and the epslim condition hold"},
    {"errswitch", false,
     "kpmap-heat switches from CG once both the presteps and the epslim condition hold"},
    {"tiles_per_task", true, "TeaLeaf's tiling; kpmap-heat runs one block per rank"},
    {"sub_tiles_per_tile", true, "TeaLeaf's tiling; kpmap-heat runs one block per rank"},
    {"tiles_per_problem", true, "TeaLeaf's tiling; kpmap-heat runs one block per rank"},
    {"num_chunks_per_rank", true, "TeaLeaf's chunking; kpmap-heat runs one block per rank"},
};

// Keys of other or older TeaLeaf versions that kpmap-heat does not implement.
inline constexpr const char* unsupported_keys[] = {"tl_use_dpcg",
                                                   "tl_preconditioner_on",
                                                   "tl_ppcg_steps_eigmin",
                                                   "tl_ppcg_coarse_eigmin",
                                                   "tl_ppcg_inner_coarse",
                                                   "tl_ppcg_inner_coarse_steps",
                                                   "coarse_solve_eps",
                                                   "coarse_solve_max_iters",
                                                   "coarse_solve_ppcg",
                                                   "coarse_solve_serial",
                                                   "coarse_depth",
                                                   "coarse_halo_depth",
                                                   "hydro_on",
                                                   "hydro_off",
                                                   "no_hydro",
                                                   "use_tea_leaf",
                                                   "tea_leaf_on",
                                                   "tea_leaf_off",
                                                   "no_tea_leaf",
                                                   "xvel",
                                                   "yvel",
                                                   "timestep_rise",
                                                   "max_timestep",
                                                   "total_tiles",
                                                   "profile_solver",
                                                   "tl_coefficient"};

inline constexpr const char* state_keys[] = {"density", "energy", "geometry", "xmin", "xmax",
                                             "ymin",    "ymax",   "zmin",     "zmax", "radius"};

inline constexpr const char* geometries[] = {"rectangle", "cuboid", "circle", "sphere", "point"};

}  // namespace kpmap::sim::tea
