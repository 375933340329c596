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

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace kpmap {

class Watchdog {
 public:
  /// \param seconds the longest a step (with its checkpoint) may take; 0: off.
  /// \param rank this process's rank, for the message.
  /// \param what names the unit of progress in the message ("step").
  Watchdog(double seconds, int rank, std::string what = "step");
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  /// \brief KPMAP_WATCHDOG (seconds, > 0), or 0 when unset.
  /// \throws kpmap::InputError (all ranks) for a value that is not a positive number.
  static double from_environment();

  /// \brief Records progress: `step` is about to start. Cheap (two atomic stores).
  void beat(long long step) noexcept;

  /// \brief Records progress within the current step: a chunk of an
  /// evaluation, a checkpoint about to be written. Cheap (one atomic store).
  void alive() noexcept;

  double seconds() const noexcept { return seconds_; }

 private:
  void watch();
  double seconds_;
  int rank_;
  std::string what_;
  std::atomic<long long> step_{0};
  std::atomic<double> last_{0.0};
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

}  // namespace kpmap
