// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief sim::Simulation: a heat-conduction run on a CartesianLayout, step
/// by step, with TeaLeaf's field summary and HDF5 checkpoints.
///
/// Each step (TeaLeaf's diffuse loop) sets u = density x energy, solves
/// (I + dt L) u_new = u with the configured linear solver (or takes one
/// explicit FTCS step), sets energy = u_new / density and advances the time.
/// Density never changes. The state that carries from step to step is the
/// energy (plus Chebyshev's and PPCG's eigenvalue estimates), so a run
/// restarted from a checkpoint continues bit for bit.
///
/// Every member function is collective over the layout's ranks unless it
/// says otherwise.

#include <kpmap/deck/deck.hpp>
#include <kpmap/grid/halo.hpp>
#include <kpmap/io/checkpoint.hpp>
#include <kpmap/runtime/mesh.hpp>
#include <kpmap/sim/config.hpp>
#include <kpmap/sim/operator.hpp>
#include <kpmap/sim/solvers/solver.hpp>

#include <memory>
#include <string>

namespace kpmap::sim {

/// \brief TeaLeaf's field summary, summed over all ranks. With V the cell
/// volume: volume = sum V, mass = sum V rho, density = mass / volume,
/// energy = sum V rho e (= sum V u, conserved), u = sum V rho u (TeaLeaf's "U").
struct Summary {
  double volume = 0.0;
  double mass = 0.0;
  double density = 0.0;
  double energy = 0.0;
  double u = 0.0;
};

/// \brief What one step did.
struct StepReport {
  long step = 0;
  double time = 0.0;  ///< simulated time at the end of the step
  double dt = 0.0;
  SolveResult solve;  ///< empty for explicit steps
};

/// \brief A heat-conduction run on execution space Exec (sim/spaces.hpp):
/// its fields live in Exec's memory.
template <class Exec = Kokkos::DefaultExecutionSpace>
class Simulation {
  KPMAP_SIM_REQUIRE_COMPILED_SPACE(Exec);

 public:
  using Memory = typename Exec::memory_space;
  using Field = CellField<Memory>;

  /// \brief Decomposes the mesh over the ranks of `comm` (default: the
  /// Runtime's) and allocates the fields. Collective. Every kernel, copy and
  /// halo exchange of the run goes to the execution space instance `exec`
  /// (a CUDA stream, say), and only that instance is fenced.
  /// \throws kpmap::InputError (all ranks) for a mesh the ranks cannot share,
  /// or one whose memory_estimate() exceeds a rank's memory_budget(), before
  /// anything is allocated.
  explicit Simulation(const HeatConfig& config, MPI_Comm comm = MPI_COMM_NULL,
                      const Exec& exec = Exec());
  ~Simulation();

  /// \brief Bytes one rank of layout `l` allocates for a run of `c`: every
  /// field (owned cells and ghosts) of the state, the operator and the
  /// solver, and checkpoint staging. `breakdown` (optional) says of what.
  static double memory_estimate(const HeatConfig& c, const CartesianLayout& l,
                                std::string* breakdown = nullptr);
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  /// \brief Places the states (step 0, time 0). Collective.
  /// \throws kpmap::InputError (all ranks) when the explicit scheme's time
  /// step exceeds its stability limit.
  void initialise();

  /// \brief Continues from checkpoint `path` (written on any rank count).
  /// \throws kpmap::InputError (all ranks) when the file is missing, not a
  /// kpmap-heat checkpoint, or of another mesh.
  void restart(const std::string& path);

  /// \brief Advances one time step.
  /// \throws kpmap::Error with exit_code::diverged (all ranks) when the
  /// linear solve fails (no convergence in max_iters, NaN).
  StepReport step();

  /// \brief True once the end time or end step is reached. Not collective
  /// (every rank holds the same step and time).
  bool done() const;

  /// \brief The field summary of the current state.
  Summary summary();

  /// \brief Writes a checkpoint (density, energy, u, solver state) to `path`
  /// atomically, with an XDMF sidecar beside it (`.xmf`). `deck` is the
  /// resolved deck text stored in the file.
  void write_checkpoint(const std::string& path, const std::string& deck);

  long step_count() const noexcept { return step_; }
  double time() const noexcept { return time_; }
  const HeatConfig& config() const noexcept { return config_; }
  const CartesianLayout& layout() const noexcept { return layout_; }
  /// \brief The axis over the simulation's ranks (for the caller's own reductions).
  const Axis& axis() const { return mesh_->axis("blocks"); }
  Timings& timings() noexcept { return timings_; }
  /// \brief The execution space instance the run's work goes to.
  const Exec& exec() const noexcept { return exec_; }
  /// \brief The explicit scheme's largest stable time step (0 before
  /// initialise() or for the implicit scheme).
  double stable_dt() const noexcept { return stable_dt_; }

  /// \brief The fields (ghosts included), for tests and tools. Writing
  /// energy between steps changes the next step's u (ghost values are ignored).
  Field density() const noexcept { return density_; }
  Field energy() const noexcept { return energy_; }
  Field u() const noexcept { return u_; }

  /// \brief The checkpoint block of this rank (global extents slowest first).
  checkpoint::Block block() const;

 private:
  void assemble();
  HeatConfig config_;
  CartesianLayout layout_;
  std::unique_ptr<Mesh> mesh_;  // one axis "blocks" over the layout's ranks
  Exec exec_;
  Field density_, energy_, u_, u0_;
  std::unique_ptr<HeatOperator<Exec>> op_;
  std::unique_ptr<Solver<Exec>> solver_;  // the linear solver, or the explicit step
  std::unique_ptr<HaloExchange<double, Exec>> halo_density_;
  Timings timings_;
  long step_ = 0;
  double time_ = 0.0;
  bool assembled_ = false;
  double stable_dt_ = 0.0;
};

/// \brief Refuses a restart from checkpoint `file` written for another
/// problem than deck `d` describes: another domain (mesh.lower, mesh.upper),
/// other cells (mesh.cells) or other states. Collective over `comm`.
/// \throws InputError (all ranks) naming the file, the key with its line and
/// both values.
void check_restart(const deck::Deck& d, const std::string& file, MPI_Comm comm);

}  // namespace kpmap::sim
