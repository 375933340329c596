// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/run/stop.hpp>

#include <kpmap/base/error.hpp>
#include <kpmap/transport/host.hpp>

#include <atomic>

namespace kpmap {

namespace {

constexpr int stop_signals[3] = {SIGTERM, SIGINT, SIGUSR1};
volatile std::sig_atomic_t g_pending = 0;
volatile std::sig_atomic_t g_ending = 0;  // a SIGTERM came: the launcher's or the scheduler's
std::atomic<void (*)() noexcept> g_on_end{nullptr};
static_assert(std::atomic<void (*)() noexcept>::is_always_lock_free, "read in a signal handler");
bool g_installed = false;

extern "C" void on_stop_signal(int sig) {
  if (sig == SIGTERM) {
    g_ending = 1;
    // The host monitor's last word where a host is silent (it may end the
    // process here): a launcher's SIGKILL follows its SIGTERM within
    // milliseconds, too soon for any thread to notice the SIGTERM.
    if (auto* hook = g_on_end.load(std::memory_order_acquire)) hook();
  }
  if (g_pending != 0) {
    // Asked twice: stop waiting for the end of the step. Only
    // async-signal-safe calls here.
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_pending = sig;
}

}  // namespace

StopSignals::StopSignals() {
  if (g_installed) throw Error("kpmap::StopSignals: another instance is alive");
  g_pending = 0;
  g_ending = 0;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // system calls in flight carry on
  for (int i = 0; i < 3; ++i) sigaction(stop_signals[i], &action, &previous_[i]);
  g_installed = true;
}

StopSignals::~StopSignals() {
  for (int i = 0; i < 3; ++i) sigaction(stop_signals[i], &previous_[i], nullptr);
  g_installed = false;
}

int StopSignals::pending() const noexcept { return static_cast<int>(g_pending); }

bool StopSignals::ending() const noexcept { return g_ending != 0; }

void StopSignals::on_end(void (*hook)() noexcept) noexcept {
  g_on_end.store(hook, std::memory_order_release);
}

int StopSignals::poll(MPI_Comm comm) const {
  int any = pending();
  transport::host_allreduce(&any, 1, MPI_MAX, comm);
  return any;
}

std::string StopSignals::name(int signal) {
  switch (signal) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGUSR1:
      return "SIGUSR1";
    default:
      return "signal " + std::to_string(signal);
  }
}

}  // namespace kpmap
