// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Ends a job that spans several hosts when one of them stops
/// answering: a node that dies takes its network with it, and the ranks left
/// would wait in their next collective for ever (MPI over TCP notices a
/// silent peer only after its keepalive, minutes later, if at all).
///
/// Each host's first rank (its node-local rank 0) keeps a TCP connection to
/// the first rank of the next host and of the previous one, a ring over the
/// hosts, and a thread of its own sends a byte down each every second. A host
/// is lost when its byte has not come for `timeout` seconds, or when it has
/// been silent for `silent_on_stop` seconds and the launcher is ending this
/// rank (SIGTERM: the launcher found the lost host first; a user's SIGUSR1 or
/// SIGINT during a short silence only asks for a stop, which waits for the
/// host as any collective does). A connection that closes without a farewell
/// is no lost host (its kernel still answers) but a first rank that was
/// killed or crashed, unless that host's launcher had said it was ending its
/// ranks (for another rank's failure, which that rank or the launcher names).
/// Then the rank that saw it prints one line naming the host, its ranks, the
/// step and the last good checkpoint, and ends its process without finalising
/// MPI, which makes the launcher end the job (docs/reliability.md, "A lost
/// host").
///
/// Two sockets and one thread per host whatever the job's size, one byte a
/// second each way: nothing in a step waits on it. Off on one host, and with
/// KPMAP_HOST_TIMEOUT=0.

#include <kpmap/run/liveness.hpp>
#include <kpmap/run/stop.hpp>

#include <mpi.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kpmap {

class HostMonitor {
 public:
  /// \brief Collective over `comm`: finds the ranks' hosts and, on more than
  /// one with `timeout` > 0, connects the ring and starts watching. Where the
  /// ring cannot be connected (a firewall), one rank says so once and the job
  /// runs without it. `signals`, if given, are the run's stop signals;
  /// `record`, the run's liveness record, whose step and last good
  /// checkpoint a lost host's message names (null: step 0, no checkpoint).
  HostMonitor(MPI_Comm comm, double timeout, const StopSignals* signals = nullptr,
              const Liveness* record = nullptr);
  /// \brief Says farewell to the neighbours (this host is done, not lost).
  ~HostMonitor();
  HostMonitor(const HostMonitor&) = delete;
  HostMonitor& operator=(const HostMonitor&) = delete;

  /// Silence that, with the launcher ending this rank (SIGTERM), is a lost host (seconds).
  static constexpr double silent_on_stop = 4;

  /// \brief KPMAP_HOST_TIMEOUT (seconds, >= 0; 0: off), or 60 when unset.
  /// \throws kpmap::InputError (all ranks) for a value that is no such number.
  static double timeout_from_environment();

  /// \brief Whether this job spans more than one host and is watched.
  bool watching() const noexcept { return watching_; }
  /// \brief How many hosts the job's ranks are on.
  int hosts() const noexcept { return static_cast<int>(host_names_.size()); }

  /// \brief "host nodeB (ranks 2-3)": a host of this job and its ranks.
  std::string describe(int host) const;

 private:
  struct Peer {
    int fd = -1;
    int host = -1;
    double heard = 0;     ///< when its last byte came
    bool done = false;    ///< it said farewell: no longer watched
    bool ending = false;  ///< its launcher is ending it: its connection closing is no failure
  };
  void connect_ring(MPI_Comm comm, int my_host);
  void watch();
  /// The line that names a host `p` lost (silent `silent` seconds) or, where
  /// its connection `closed`, its first rank ended.
  std::string lost_line(const Peer& p, bool closed, double silent);
  [[noreturn]] void lost(const Peer& p, bool closed, double silent);
  friend void host_monitor_farewell() noexcept;
  friend void host_monitor_on_launcher_end() noexcept;

  double timeout_;
  const StopSignals* signals_;
  bool watching_ = false;
  int rank_ = 0;
  std::vector<std::string> host_names_;       ///< per host, in order of its first rank
  std::vector<std::vector<int>> host_ranks_;  ///< per host, its ranks
  std::vector<Peer> peers_;                   ///< the next host's, the previous host's
  Liveness own_;
  const Liveness& record_;  ///< the step and the last good checkpoint, for the message
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace kpmap
