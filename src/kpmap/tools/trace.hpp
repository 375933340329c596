// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief A timeline of every rank in one file: Chrome trace-event JSON that
/// Perfetto (ui.perfetto.dev) and chrome://tracing open.
///
/// Recording starts with `KPMAP_TRACE=FILE` in the environment of any kpmap
/// program, or `--trace FILE` on kpmap-heat and kpmap-train. Every
/// ProfilingRegion then becomes an event on its rank's timeline: one process
/// per rank, one track ("thread") for compute and one for communication;
/// collectives carry their axis, bytes and whether MPI took the buffer where
/// it lives ("direct") or through pinned host staging ("staged"). The ranks'
/// clocks are aligned at a barrier when recording starts. When the Runtime
/// ends, rank 0 gathers every rank's events and writes the file (atomically).
/// With recording off, a region costs one check of a flag.

#include <mpi.h>

#include <string>

namespace kpmap::trace {

/// \brief The track of an event.
enum class Track { compute = 0, communication = 1 };

namespace detail {
extern bool g_enabled;
}  // namespace detail

/// \brief Whether events are being recorded.
inline bool enabled() noexcept { return detail::g_enabled; }

/// \brief Collective over `comm`: starts recording on every rank; `path` is
/// written when the Runtime ends (or at finish()). A second call is ignored.
/// \throws kpmap::InputError (every rank) when `path` cannot be written, or
/// is anything but a regular file that is empty or an earlier trace (a
/// device, a FIFO, a link, a folder, an input deck), or its folder is missing.
void start(const std::string& path, MPI_Comm comm);

/// \brief The file the trace goes to while one is recorded, else "".
const std::string& path() noexcept;

/// \brief Stops recording without writing the file (a trace refused once the
/// run's outputs are known must not be written at exit either).
void discard() noexcept;

/// \brief Checks KPMAP_TRACE_MAX_EVENTS where it is set, whether or not a
/// trace is recorded. \throws InputError (all ranks) naming the variable.
void check_environment();

/// \brief Collective over the communicator recording started on: gathers
/// the events, rank 0 writes the file, recording stops. Returns false on
/// every rank when the file could not be written (rank 0 says why); true
/// when it was, or when nothing was recorded.
bool finish();

/// \brief Opens an event on this rank's timeline (ProfilingRegion calls it).
void begin(const std::string& name, Track track);
/// \brief What an event shows besides its name and times (Perfetto's
/// "args"); a field left at its default is not shown.
struct Args {
  std::string axis;            ///< the mesh axis of a collective
  long long bytes = -1;        ///< the bytes it moves (per rank)
  long long arrays = -1;       ///< the arrays of a tree it reduces
  const char* path = nullptr;  ///< "direct", "staged" or "host": where MPI takes the buffer
  /// \brief Takes the fields `more` sets.
  Args& operator+=(const Args& more);
};

/// \brief Closes the innermost open event, with its `args`.
void end(const Args& args);

}  // namespace kpmap::trace
