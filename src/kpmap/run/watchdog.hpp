// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief A per-rank watchdog: a job whose steps stop advancing (a rank
/// stuck in a hung file system, a deadlock, a peer that hangs without
/// dying) ends with a message instead of burning its allocation.
///
/// \code
///   kpmap::Watchdog dog(kpmap::Watchdog::from_environment(), rank);  // KPMAP_WATCHDOG=SECONDS
///   while (!done) {
///     dog.beat(step);   // the step about to start
///     step();
///   }
/// \endcode
///
/// A background thread (no MPI calls) checks the time since the last beat.
/// Past the limit it prints `kpmap: rank R: no progress for T s ...` and ends
/// the process without finalising MPI, which makes the launcher end every
/// other rank. A limit of 0 disables the watchdog (no thread).
///
/// On by default: without KPMAP_WATCHDOG the limit is automatic, ten times
/// the longest step seen so far and never under `automatic_floor` seconds,
/// so a run of long steps is never ended for one, while a job hung for good
/// ends on its own. KPMAP_WATCHDOG=SECONDS fixes the limit; 0 turns it off.

#include <kpmap/base/environment.hpp>
#include <kpmap/run/liveness.hpp>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace kpmap {

class Watchdog {
 public:
  /// The automatic limit: at least this many seconds ...
  static constexpr double automatic_floor = detail::default_hang_limit;
  /// ... and at least this many times the longest step seen so far.
  static constexpr double automatic_factor = 10;
  /// What from_environment() gives where KPMAP_WATCHDOG is unset.
  static constexpr double automatic = -1;

  /// \param seconds the longest a step (with its checkpoint) may take; 0: off;
  /// `automatic`: derived from the steps seen (above).
  /// \param rank this process's rank, for the message.
  /// \param what names the unit of progress in the message ("step").
  /// \param floor the automatic limit's least value (tests shorten it).
  /// \param record the run's liveness record, which the watchdog writes and
  /// reads (RunControl's, shared with its host monitor); null: one of its own.
  Watchdog(double seconds, int rank, std::string what = "step", double floor = automatic_floor,
           Liveness* record = nullptr);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  /// \brief KPMAP_WATCHDOG (seconds, >= 0; 0: off), or `automatic` when unset.
  /// \throws kpmap::InputError (all ranks) for a value that is no such number.
  static double from_environment();

  /// \brief Records progress: `step` is about to start. Cheap (two atomic stores).
  void beat(long long step) noexcept;

  /// \brief Records progress within the current step: a chunk of an
  /// evaluation, a checkpoint about to be written. Cheap (one atomic store).
  void alive() noexcept;

  /// \brief The limit now (it grows with the steps when automatic); 0: off.
  double seconds() const noexcept { return limit_.load(std::memory_order_relaxed); }

 private:
  void watch();
  bool automatic_;
  double floor_;
  std::atomic<double> limit_;
  double longest_ = 0;  ///< the longest step so far (main thread only)
  int rank_;
  std::string what_;
  Liveness own_;
  Liveness& record_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

/// \brief Records progress on this process's running watchdog, if there is
/// one (Watchdog::alive): for work inside a step that does not know the run
/// it belongs to, such as a model evaluating a held-out set chunk by chunk.
/// Cheap (two atomic operations); does nothing without KPMAP_WATCHDOG.
void heartbeat() noexcept;

namespace detail {
/// \brief Seconds on the steady clock (the watchdog's and the host
/// monitor's time base).
double steady_seconds() noexcept;
}  // namespace detail

}  // namespace kpmap
