#pragma once
/// \file
/// \brief Finalize hooks: what a layer must release before Kokkos and MPI end
/// (a staging pool's pinned memory, the trace file). kpmap::Runtime runs them,
/// newest first, when it ends; Runtime::at_finalize registers one too. A leaf,
/// so that the layers below Runtime register theirs without knowing it.

#include <functional>

namespace kpmap::detail {

/// \brief Registers `hook` to run when the Runtime ends, before Kokkos and MPI
/// are finalized.
void at_finalize(std::function<void()> hook);

/// \brief Runs and forgets every registered hook, newest first (a hook may
/// register another). Called by kpmap::Runtime.
void run_finalize_hooks();

}  // namespace kpmap::detail
