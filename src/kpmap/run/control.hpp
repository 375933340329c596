// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief What every long run does around its steps, written once for the
/// training loop and the heat simulation: beat the hang watchdog, watch the
/// other hosts of a job that spans several (HostMonitor), inject
/// test faults, poll stop signals, and write checkpoints so that a failure
/// names the last good one.
///
///   kpmap::RunControl run(comm, out_dir, keep, restart_file);
///   while (...) {
///     if (run.begin_step(step + 1)) poison_state();   // KPMAP_FAULT_INJECT=R:S:nan
///     ...
///     if (run.end_step(step + 1, done, every, [&] { run.checkpoint(...); }) != 0) break;
///   }

#include <kpmap/run/host_monitor.hpp>
#include <kpmap/run/stop.hpp>
#include <kpmap/run/watchdog.hpp>

#include <mpi.h>

#include <functional>
#include <string>
#include <vector>

namespace kpmap {

class RunControl {
 public:
  /// \param dir where checkpoints go; \param keep how many `checkpoint_*`
  /// files to keep there; \param last_good the checkpoint the run started
  /// from, if any. Collective over `comm` here (the host monitor finds the
  /// ranks' hosts) and in poll_stop().
  RunControl(MPI_Comm comm, std::string dir, int keep, std::string last_good = "");

  /// \brief Call before step `step` (1, 2, ...): beats the watchdog; true
  /// when KPMAP_FAULT_INJECT asks this rank to corrupt its state now.
  bool begin_step(long long step);

  /// \brief Collective: the stop signal any rank received (SIGTERM, SIGINT,
  /// SIGUSR1), or 0.
  int poll_stop() const { return stop_.poll(comm_); }

  /// \brief How every loop ends a step (kpmap-heat) or an epoch (kpmap-train):
  /// writes a checkpoint with `write()` when one is due (`done`, the run's
  /// last step, or a multiple of `every` > 0); then, unless `done`, polls
  /// the stop signals and, on one, writes a checkpoint if none was due, so
  /// that a stopped run can restart where it stopped. Returns the signal, or
  /// 0 to go on. Collective unless `done`.
  int end_step(long long step, bool done, long long every, const std::function<void()>& write);

  /// \brief Writes the checkpoint `name` (in the folder) with `write(path)`,
  /// then, if `rotate`, deletes all but the newest `keep` (on rank 0): of
  /// the folder's checkpoints up to step `newest` when the run continues
  /// from a checkpoint in the same folder (they are its run's), else of the
  /// ones this run wrote (the folder's others are another run's). A
  /// failure is rethrown (same exit code) as "WHAT: the checkpoint failed:
  /// ..., the last good checkpoint is ...". Returns the path.
  std::string checkpoint(const std::string& name, const std::string& what,
                         const std::function<void(const std::string& path)>& write,
                         bool rotate = false, long long newest = -1);

  /// \brief The newest checkpoint written (or the restart file), "" if none.
  const std::string& last_good() const noexcept { return last_good_; }
  /// \brief checkpoint::last_good_note(last_good()).
  std::string last_good_note() const;

 private:
  MPI_Comm comm_;
  int rank_ = 0;
  std::string dir_;
  int keep_;
  std::string last_good_;
  bool continues_folder_ = false;     ///< restarted from a checkpoint in dir_
  std::vector<std::string> written_;  ///< rotated checkpoints this run wrote, oldest first
  StopSignals stop_;
  Liveness liveness_;  ///< the step, its clock and the last good checkpoint, for both guards
  Watchdog watchdog_;
  HostMonitor hosts_;
};

}  // namespace kpmap
