// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Graceful stop: SIGTERM, SIGINT and SIGUSR1 become a request that
/// every rank honours at the same step, so a job can write a last checkpoint
/// before a scheduler's time limit or a Ctrl-C ends it.
///
/// \code
///   kpmap::StopSignals stop;              // handlers installed
///   while (!done) {
///     step();
///     if (int sig = stop.poll(comm)) {    // collective: the same answer everywhere
///       write_checkpoint();
///       return kpmap::exit_code::stopped;
///     }
///   }
/// \endcode
///
/// A signal to any one rank is enough: poll() tells every rank. A second
/// signal while a stop is pending ends the process at once (the default
/// action of that signal), for a user who does not want to wait.

#include <mpi.h>

#include <csignal>
#include <string>

namespace kpmap {

class StopSignals {
 public:
  /// \brief Installs the handlers (and forgets any earlier request);
  /// the destructor restores the previous ones. One instance at a time.
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  /// \brief The signal this process received since construction, or 0. Not collective.
  int pending() const noexcept;

  /// \brief Whether this process received SIGTERM since construction: what
  /// a launcher sends when it ends the job (and a scheduler at a time limit),
  /// unlike SIGUSR1 and SIGINT, which only a user sends. Not collective.
  bool ending() const noexcept;

  /// \brief `hook` (async-signal-safe; nullptr: none) runs first in the
  /// handler of every SIGTERM, and may end the process: the host monitor's,
  /// which, where a host has been silent a while, names it and the last good
  /// checkpoint before the launcher's SIGKILL (Open MPI's follows its SIGTERM
  /// within milliseconds, too soon for a thread to notice).
  static void on_end(void (*hook)() noexcept) noexcept;

  /// \brief Collective over `comm`: the signal any rank received, or 0 on
  /// every rank. One small allreduce; call it once per step.
  int poll(MPI_Comm comm) const;

  /// \brief "SIGTERM", "SIGINT", "SIGUSR1", or "signal N".
  static std::string name(int signal);

 private:
  struct sigaction previous_[3];
};

}  // namespace kpmap
