// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/base/fault.hpp>

#include <kpmap/base/error.hpp>

#include <unistd.h>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>

namespace kpmap::fault {

namespace {

bool g_write_fails = false;

[[noreturn]] void bad(const std::string& value, const std::string& why) {
  throw InputError(
      "environment variable KPMAP_FAULT_INJECT='" + value + "': " + why +
          " (expected RANK:STEP[:KIND], KIND one of error, exit, kill, hang, signal, nan, io; "
          "see docs/reliability.md)",
      ErrorScope::all_ranks);
}

long long whole_number(const std::string& value, const std::string& field, const char* what,
                       long long min) {
  if (field.empty() || field.size() > 12 ||
      field.find_first_not_of("0123456789") != std::string::npos) {
    bad(value, std::string(what) + " '" + field + "' is not a whole number");
  }
  const long long n = std::stoll(field);
  if (n < min) bad(value, std::string(what) + " must be at least " + std::to_string(min));
  return n;
}

}  // namespace

Injection parse(const std::string& value) {
  const auto first = value.find(':');
  if (first == std::string::npos) bad(value, "no ':' between RANK and STEP");
  const auto second = value.find(':', first + 1);
  Injection in;
  in.text = value;
  in.rank = static_cast<int>(whole_number(value, value.substr(0, first), "RANK", 0));
  in.step = whole_number(value, value.substr(first + 1, second - first - 1), "STEP", 1);
  if (second != std::string::npos) {
    const std::string kind = value.substr(second + 1);
    if (kind == "error") {
      in.kind = Kind::error;
    } else if (kind == "exit") {
      in.kind = Kind::exit;
    } else if (kind == "kill") {
      in.kind = Kind::kill;
    } else if (kind == "hang") {
      in.kind = Kind::hang;
    } else if (kind == "signal") {
      in.kind = Kind::signal;
    } else if (kind == "nan") {
      in.kind = Kind::nan;
    } else if (kind == "io") {
      in.kind = Kind::io;
    } else {
      bad(value, "unknown KIND '" + kind + "'");
    }
  }
  return in;
}

const std::optional<Injection>& planned() {
  static const std::optional<Injection> plan = []() -> std::optional<Injection> {
    const char* v = std::getenv("KPMAP_FAULT_INJECT");
    if (v == nullptr || *v == '\0') return std::nullopt;
    return parse(v);
  }();
  return plan;
}

void check_ranks(int ranks) {
  const auto& plan = planned();
  if (plan && plan->rank >= ranks) {
    bad(plan->text, "RANK " + std::to_string(plan->rank) + " is not a rank of this job of " +
                        std::to_string(ranks) + " rank" + (ranks == 1 ? "" : "s") + " (0 to " +
                        std::to_string(ranks - 1) + ")");
  }
}

bool at_step(long long step, int rank) {
  const auto& plan = planned();
  if (!plan || plan->rank != rank || plan->step != step) return false;
  const std::string where =
      "step " + std::to_string(step) + " (KPMAP_FAULT_INJECT=" + plan->text + ")";
  switch (plan->kind) {
    case Kind::error:
      throw Error("injected error at " + where);
    case Kind::exit: {
      // As a crashed process: no MPI_Finalize, no clean-up; the launcher
      // must notice and end the other ranks.
      const std::string line =
          "kpmap: rank " + std::to_string(rank) + ": injected exit at " + where + "\n";
      [[maybe_unused]] auto n = ::write(STDERR_FILENO, line.data(), line.size());
      std::_Exit(exit_code::failure);
    }
    case Kind::kill: {
      // As the OOM killer or a scheduler's memory limit ends a process.
      const std::string line =
          "kpmap: rank " + std::to_string(rank) + ": injected SIGKILL at " + where + "\n";
      [[maybe_unused]] auto n = ::write(STDERR_FILENO, line.data(), line.size());
      std::raise(SIGKILL);
      return false;
    }
    case Kind::hang:
      // Alive but stuck, as in a hung file system: the other ranks wait in
      // their next collective until a watchdog or the launcher ends the job.
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    case Kind::signal:
      std::raise(SIGTERM);
      return false;
    case Kind::nan:
      return true;
    case Kind::io:
      g_write_fails = true;
      return false;
  }
  return false;
}

bool write_fails() noexcept { return g_write_fails; }

}  // namespace kpmap::fault
