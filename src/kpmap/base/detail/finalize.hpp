// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Finalize hooks: what a layer must release before Kokkos and MPI end
/// (a staging pool's pinned memory, the trace file). kpmap::Runtime runs them,
/// newest first, when it ends; Runtime::at_finalize registers one too. A leaf,
/// so that the layers below Runtime register theirs without knowing it. Abort
/// hooks: the same for a process that ends the job.

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

}  // namespace kpmap::detail
