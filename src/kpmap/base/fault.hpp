// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Fault injection for reliability tests: `KPMAP_FAULT_INJECT=RANK:STEP[:KIND]`
/// makes one rank fail in a chosen way at a chosen step of an application.
///
/// The applications call fault::at_step() at the start of every step (a time
/// step of kpmap-heat, an optimizer step of kpmap-train, counted from 1 over
/// the whole run and continued after a restart). On rank RANK, at step STEP:
///
/// | KIND     | what happens                                                          |
/// |----------|-----------------------------------------------------------------------|
/// | `error`  | the rank throws kpmap::Error (the default): the job must end promptly |
/// | `exit`   | the rank exits at once without finalising MPI, as a crashed process   |
/// | `kill`   | the rank sends itself SIGKILL, as the OOM killer or `kill -9` would    |
/// | `hang`   | the rank stops making progress forever (KPMAP_WATCHDOG ends the job)  |
/// | `signal` | the rank sends itself SIGTERM: the job must stop gracefully           |
/// | `nan`    | at_step() returns true and the app puts a NaN into its state          |
/// | `io`     | every checkpoint write from this step on fails on the rank            |
///
/// Without the variable nothing happens and at_step() costs one branch.
/// docs/reliability.md lists what each app promises for each kind.

#include <optional>
#include <string>

namespace kpmap::fault {

enum class Kind { error, exit, kill, hang, signal, nan, io };

/// \brief A fault to inject, as parsed from KPMAP_FAULT_INJECT.
struct Injection {
  int rank = 0;
  long long step = 1;
  Kind kind = Kind::error;
  std::string text;  ///< the variable's value, for messages
};

/// \brief Parses `RANK:STEP[:KIND]`.
/// \throws kpmap::InputError naming KPMAP_FAULT_INJECT and what is wrong.
Injection parse(const std::string& value);

/// \brief The injection KPMAP_FAULT_INJECT asks for (read once per process).
/// \throws kpmap::InputError (all ranks: every rank reads the same value) on a bad value.
const std::optional<Injection>& planned();

/// \brief Checks the planned injection against a job of `ranks` ranks.
/// \throws kpmap::InputError (all ranks) when its RANK is none of the job's,
/// so a test that means to inject a fault never passes by doing nothing.
void check_ranks(int ranks);

/// \brief Called by an app on every rank at the start of step `step`. Acts
/// on the `error`, `exit`, `hang`, `signal` and `io` kinds when this rank and step
/// are the chosen ones; returns true when the app must inject a NaN now.
/// `rank` is the caller's rank in the job's communicator.
bool at_step(long long step, int rank);

/// \brief True on the chosen rank once an `io` injection is armed: checkpoint
/// writers then report a failed write (checkpoint::Writer asks).
bool write_fails() noexcept;

}  // namespace kpmap::fault
