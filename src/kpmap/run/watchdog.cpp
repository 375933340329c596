// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/run/watchdog.hpp>

#include <kpmap/base/detail/finalize.hpp>
#include <kpmap/base/error.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace kpmap {

namespace {

// The running watchdog of this process (one at a time: a run's), for heartbeat().
std::atomic<Watchdog*> g_active{nullptr};

}  // namespace

double detail::steady_seconds() noexcept {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

Watchdog::Watchdog(double seconds, int rank, std::string what, double floor, Liveness* record)
    : automatic_(seconds < 0),
      floor_(floor),
      limit_(seconds < 0 ? floor : seconds),
      rank_(rank),
      what_(std::move(what)),
      record_(record != nullptr ? *record : own_) {
  record_.alive(detail::steady_seconds());
  if (limit_.load() > 0) {
    thread_ = std::thread([this] { watch(); });
    g_active.store(this);
  }
}

Watchdog::~Watchdog() {
  Watchdog* self = this;
  g_active.compare_exchange_strong(self, nullptr);
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

double Watchdog::from_environment() {
  return seconds_from_environment("KPMAP_WATCHDOG", automatic,
                                  "the longest time a step may take, in seconds (> 0; 0 turns "
                                  "the watchdog off; unset, it is automatic)");
}

void Watchdog::beat(long long step) noexcept {
  const double t = detail::steady_seconds();
  if (automatic_ && record_.step() > 0) {
    // The step that just ended, with its checkpoint, sets the limit.
    longest_ = std::max(longest_, t - record_.last());
    limit_.store(std::max(floor_, automatic_factor * longest_), std::memory_order_relaxed);
  }
  record_.beat(step, t);
}

void Watchdog::alive() noexcept { record_.alive(detail::steady_seconds()); }

void heartbeat() noexcept {
  if (Watchdog* w = g_active.load(std::memory_order_acquire)) w->alive();
}

void Watchdog::watch() {
  // Check a few times per limit, at most once a second.
  const auto period = std::chrono::duration<double>(std::min(1.0, seconds() / 4));
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, period, [this] { return stop_; })) {
    const double idle = detail::steady_seconds() - record_.last();
    const double limit = seconds();
    if (idle <= limit) continue;
    // Only async-safe, lock-free calls from here: the main thread may be
    // stuck anywhere, even inside stdio.
    char line[384];
    if (automatic_) {
      std::snprintf(line, sizeof line,
                    "kpmap: rank %d: no progress for %.0f s in %s %lld (the watchdog's automatic "
                    "limit, %g s; KPMAP_WATCHDOG=SECONDS sets it, 0 turns it off); ending the "
                    "job\n",
                    rank_, idle, what_.c_str(), record_.step(), limit);
    } else {
      std::snprintf(line, sizeof line,
                    "kpmap: rank %d: no progress for %.0f s in %s %lld (KPMAP_WATCHDOG=%g); "
                    "ending the job\n",
                    rank_, idle, what_.c_str(), record_.step(), limit);
    }
    detail::end_process(line, std::strlen(line), exit_code::failure);
  }
}

}  // namespace kpmap
