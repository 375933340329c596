// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief kpmap's exception types and the process exit codes the apps promise.

#include <stdexcept>
#include <string>
#include <utility>

namespace kpmap {

/// \brief Exit codes of kpmap programs (documented in docs/reliability.md).
namespace exit_code {
inline constexpr int success = 0;
inline constexpr int failure = 1;    ///< an unexpected error (a bug, a system failure)
inline constexpr int bad_input = 2;  ///< bad deck, bad command line, bad environment, bad file
inline constexpr int diverged = 3;   ///< the numerics produced NaN or Inf
/// A stop signal (SIGTERM, SIGINT, SIGUSR1) ended the run early, after a
/// last checkpoint: restart from it to go on.
inline constexpr int stopped = 4;
/// The run finished, but its answer failed the check it carries (a TeaLeaf
/// test problem's published value).
inline constexpr int check_failed = 5;

/// \brief The exit codes as a program's --help lists them: "Exit codes: 0
/// success, ..., 5 ... (see docs/reliability.md)." Codes 3 and 5 are in the
/// program's own words (what diverges, what the check is).
inline std::string help(const std::string& diverged_what, const std::string& check_failed_what) {
  const std::pair<int, std::string> meanings[] = {
      {success, "success"},
      {failure, "an unexpected error"},
      {bad_input, "bad input"},
      {diverged, diverged_what},
      {stopped, "stopped by SIGTERM, SIGINT or SIGUSR1 after writing a checkpoint"},
      {check_failed, check_failed_what},
  };
  std::string text = "Exit codes:";
  for (const auto& [code, what] : meanings) {
    text += (code == success ? " " : ", ") + std::to_string(code) + " " + what;
  }
  return text + " (see docs/reliability.md).";
}
}  // namespace exit_code

/// \brief Whether every rank raised the same error (and so can leave cleanly),
/// or only this rank did (and so the job must be aborted, or the others hang).
/// `all_ranks_abort`: every rank raised it together, but a library holds
/// state that its own clean-up would hang or crash on (a parallel HDF5 file
/// that a full disk left half written): the message is printed once and the
/// job is aborted rather than finalised.
enum class ErrorScope { this_rank, all_ranks, all_ranks_abort };

/// \brief Base of every error kpmap throws. Carries the exit code the process
/// should end with and whether all ranks raised it together.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, int code = exit_code::failure,
                 ErrorScope scope = ErrorScope::this_rank)
      : std::runtime_error(message), code_(code), scope_(scope) {}

  /// \brief The process exit code this error maps to.
  int code() const noexcept { return code_; }
  /// \brief True when every rank of the job threw this error in step and
  /// may still do collective clean-up on the way out.
  bool all_ranks() const noexcept { return scope_ == ErrorScope::all_ranks; }
  ErrorScope scope() const noexcept { return scope_; }

 private:
  int code_;
  ErrorScope scope_;
};

/// \brief Bad input from the user: a deck, a command line, an environment
/// variable or an input file. Exit code 2.
class InputError : public Error {
 public:
  explicit InputError(const std::string& message, ErrorScope scope = ErrorScope::this_rank)
      : Error(message, exit_code::bad_input, scope) {}
};

}  // namespace kpmap
