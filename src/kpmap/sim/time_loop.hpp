// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief sim::TimeLoop: a heat-conduction run from its first step to its
/// last, as train::Trainer runs the epochs. It starts the Simulation (or
/// restarts it from a checkpoint), steps it to the end time or end step, and
/// does what every long run does around the steps, through the run layer
/// (kpmap/run/): the per-step history.csv, progress lines with an ETA,
/// checkpoints at the deck's cadence and rotation, field dumps, stop
/// signals, the hang watchdog, fault injection, and the phase times.
///
///   kpmap::sim::Simulation s(config);
///   kpmap::PhaseTimes times;
///   kpmap::sim::TimeLoop loop(s, {out, deck_text, restart_file}, times);
///   loop.start();                          // initialise() or restart()
///   const kpmap::sim::LoopResult r = loop.run();
///
/// The cadences (output.checkpoint_every, keep_last, fields_every, progress_every,
/// summary_every) are the HeatConfig's. Output goes to rank 0's stdout and to
/// the output folder; every member function is collective.

#include <kpmap/run/phases.hpp>
#include <kpmap/sim/simulation.hpp>

#include <filesystem>
#include <functional>
#include <string>

namespace kpmap::sim {

/// \brief Where a TimeLoop writes and what it continues from.
struct LoopOutput {
  std::filesystem::path dir;  ///< the output folder, prepared (kpmap::prepare_output_dir)
  std::string deck;           ///< the resolved deck text stored in every checkpoint
  std::string restart;        ///< the checkpoint to continue from ("" to start at step 0)
};

/// \brief How a run ended.
struct LoopResult {
  long first_step = 0;  ///< the step the run started from (after a restart)
  int stopped_by = 0;   ///< the signal that stopped it, or 0
  long long iterations = 0, inner_iterations = 0;  ///< of the linear solves, summed
  double last_error = 0.0;                         ///< the last solve's residual
  double last_exact_error = -1.0;  ///< its true error where the solver knows it, else -1
  Summary summary;                 ///< of the final state
  std::string checkpoint;          ///< the newest checkpoint (or the restart file)
};

/// \brief The last step a run of `c` takes: the step limit, or the steps to
/// the end time, whichever comes first.
long last_step(const HeatConfig& c);

/// \brief Runs a Simulation<Exec> (sim/spaces.hpp) to its end.
template <class Exec = Kokkos::DefaultExecutionSpace>
class TimeLoop {
 public:
  /// \brief Collective: creates `output.dir`/fields when the config dumps fields.
  TimeLoop(Simulation<Exec>& simulation, LoopOutput output, PhaseTimes& times);

  /// \brief Collective: places the states at step 0, or continues from
  /// output.restart. \throws InputError (all ranks) when the restart file is
  /// already at the run's end.
  void start();

  /// \brief Collective: steps to the end (or to a stop signal, after which
  /// it writes a checkpoint), calling `on_step` on every rank after each step.
  /// \throws Error (exit_code::diverged, all ranks) naming the last good
  /// checkpoint when a solve fails.
  LoopResult run(const std::function<void(const StepReport&, const Summary&)>& on_step = nullptr);

 private:
  // Adds a stretch of `wall` seconds to the phases: the simulation's own halo
  // and reduction seconds since `before`, the rest compute.
  void account(double wall, const Timings& before);
  void write(const std::string& path);

  Simulation<Exec>& s_;
  LoopOutput out_;
  PhaseTimes& times_;
};

}  // namespace kpmap::sim
