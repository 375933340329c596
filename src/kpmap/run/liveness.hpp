// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief A run's liveness record: the step in progress, when the run last
/// made progress (the steady clock), and the note of its last good
/// checkpoint. The main thread writes it; the guards' threads read it (the
/// watchdog: the step and the clock; the host monitor: the step and the
/// note), without a lock, since a guard must speak while the main thread is
/// stuck anywhere. RunControl keeps one for both.

#include <atomic>
#include <cstddef>
#include <cstring>
#include <string>

namespace kpmap {

class Liveness {
 public:
  /// \brief The longest note kept (a longer one is cut).
  static constexpr std::size_t note_capacity = 1024;

  Liveness() = default;
  Liveness(const Liveness&) = delete;
  Liveness& operator=(const Liveness&) = delete;

  /// \brief Step `s` is about to start, now (seconds of the steady clock).
  void beat(long long s, double now) noexcept {
    step_.store(s, std::memory_order_relaxed);
    last_.store(now, std::memory_order_relaxed);
  }
  /// \brief Progress within the step, now.
  void alive(double now) noexcept { last_.store(now, std::memory_order_relaxed); }
  long long step() const noexcept { return step_.load(std::memory_order_relaxed); }
  double last() const noexcept { return last_.load(std::memory_order_relaxed); }

  /// \brief The text a guard's message ends with (the last good checkpoint).
  /// Main thread only: written into the buffer readers do not read, then
  /// made current.
  void note(const std::string& text) noexcept {
    const int next = 1 - current_.load(std::memory_order_relaxed);
    const std::size_t n = text.size() < note_capacity ? text.size() : note_capacity - 1;
    std::memcpy(notes_[next], text.data(), n);
    notes_[next][n] = '\0';
    current_.store(next, std::memory_order_release);
  }
  /// \brief The note, from any thread: no lock, no allocation.
  const char* note() const noexcept { return notes_[current_.load(std::memory_order_acquire)]; }

 private:
  std::atomic<long long> step_{0};
  std::atomic<double> last_{0.0};
  char notes_[2][note_capacity] = {};
  std::atomic<int> current_{0};
};

}  // namespace kpmap
