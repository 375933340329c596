// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/base/detail/finalize.hpp>

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <utility>
#include <vector>

namespace kpmap::detail {

namespace {
std::vector<std::function<void()>>& hooks() {
  static std::vector<std::function<void()>> registered;
  return registered;
}
}  // namespace

void at_finalize(std::function<void()> hook) { hooks().push_back(std::move(hook)); }

void run_finalize_hooks() {
  auto& h = hooks();
  while (!h.empty()) {
    auto hook = std::move(h.back());
    h.pop_back();
    hook();
  }
}

namespace {
std::atomic<void (*)() noexcept> g_abort_hooks[8];
std::atomic<bool> g_aborting{false};
}  // namespace

void at_abort(void (*hook)() noexcept) {
  for (auto& slot : g_abort_hooks) {
    void (*expected)() noexcept = nullptr;
    if (slot.load() == hook || slot.compare_exchange_strong(expected, hook)) return;
  }
}

void run_abort_hooks() noexcept {
  if (g_aborting.exchange(true)) return;
  for (auto& slot : g_abort_hooks) {
    if (auto hook = slot.load()) hook();
  }
}

void last_words(const char* line, std::size_t length) noexcept {
  run_abort_hooks();
  if (length > 0) {
    [[maybe_unused]] const auto n = ::write(STDERR_FILENO, line, length);
  }
}

void end_process(const char* line, std::size_t length, int code) noexcept {
  last_words(line, length);
  std::_Exit(code);
}

}  // namespace kpmap::detail
