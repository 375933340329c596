// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Finalize hooks: what a layer must release before Kokkos and MPI end
/// (a staging pool's pinned memory, the trace file). kpmap::Runtime runs them,
/// newest first, when it ends; Runtime::at_finalize registers one too. A leaf,
/// so that the layers below Runtime register theirs without knowing it. Abort
/// hooks: the same for a process that ends the job.

#include <cstddef>
#include <functional>

namespace kpmap::detail {

/// \brief Registers `hook` to run when the Runtime ends, before Kokkos and MPI
/// are finalized.
void at_finalize(std::function<void()> hook);

/// \brief Runs and forgets every registered hook, newest first (a hook may
/// register another). Called by kpmap::Runtime.
void run_finalize_hooks();

/// \brief Registers `hook` to run when this process ends the job on purpose
/// (kpmap::abort_job, the watchdog): a layer's last word to its peers, such
/// as the host monitor's farewell. Up to 8; async-signal-safe hooks only.
void at_abort(void (*hook)() noexcept);

/// \brief Runs every registered abort hook (once; later calls do nothing).
void run_abort_hooks() noexcept;

/// \brief A process's last words as it ends the job on purpose: runs the
/// abort hooks (its peers take the end for an error, not a lost host), then
/// writes `line` (`length` bytes; none where 0) to standard error in one
/// write(), so that the lines of several ranks do not interleave.
/// Async-signal-safe, and no stdio: a signal handler or a thread calls it
/// while the main thread may be anywhere, even inside stdio.
void last_words(const char* line, std::size_t length) noexcept;

/// \brief last_words(line, length), then std::_Exit(code): how the
/// watchdog and the host monitor end a process (the Runtime's abort_job adds
/// MPI_Abort between the two).
[[noreturn]] void end_process(const char* line, std::size_t length, int code) noexcept;

}  // namespace kpmap::detail
