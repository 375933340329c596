// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Kokkos Tools regions: every public kpmap operation opens one, named
/// `kpmap::<operation>` (a collective adds its axis: `kpmap::psum[devices]`),
/// so a Kokkos tool (the kernel timer, the space-time stack, a profiler's
/// NVTX or ROCTX connector) shows where a run spends its time; with
/// `KPMAP_TRACE` or `--trace`, each region is also an event of the run's
/// timeline (kpmap/tools/trace.hpp). See docs/profiling.md.
///
/// With no tool loaded and no trace recording, a region costs two checks of a
/// flag: no string is built, nothing is called.

#include <kpmap/tools/trace.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>

namespace kpmap {

namespace detail {
/// The collective this thread is in, for a message when MPI reports an error
/// inside it (Runtime's MPI error handler): its region name and axis, kept
/// without allocating (a copy of two words and the axis name per collective).
struct CollectiveSite {
  const char* name = nullptr;
  char axis[48] = {};
};
inline CollectiveSite& collective_site() noexcept {
  thread_local CollectiveSite site;
  return site;
}

/// Whether a Kokkos tool is loaded. Kokkos loads tools in Kokkos::initialize,
/// and Kokkos 3.4 answers by comparing its whole table of callbacks: the
/// answer is taken once, at the first region (after initialize), and kept.
inline bool tool_loaded() {
  static const bool loaded = Kokkos::Tools::profileLibraryLoaded();
  return loaded;
}
}  // namespace detail

/// \brief A Kokkos Tools region, and a trace event, for the life of this
/// object (RAII).
class ProfilingRegion {
 public:
  /// \brief The region `name`, on the compute track of a trace.
  explicit ProfilingRegion(const char* name, trace::Track track = trace::Track::compute) {
    if (detail::tool_loaded() || trace::enabled()) push(name, track);
  }
  /// \brief The region `name[axis]` of an operation over a mesh axis, on the
  /// communication track of a trace.
  ProfilingRegion(const char* name, const std::string& axis,
                  trace::Track track = trace::Track::communication);
  ~ProfilingRegion() {
    if (site_ || tool_ || traced_) end();
  }
  ProfilingRegion(const ProfilingRegion&) = delete;
  ProfilingRegion& operator=(const ProfilingRegion&) = delete;

  /// \brief Whether a trace records this region (then note() is worth calling).
  bool traced() const noexcept { return traced_; }
  /// \brief Adds what `args` sets to the trace event.
  void note(const trace::Args& args) {
    if (traced_) args_ += args;
  }

 private:
  // Out of line (tools/profiling.cpp): what a region does when it is seen,
  // compiled once instead of in every collective.
  void push(const std::string& name, trace::Track track);
  void end();
  detail::CollectiveSite outer_;  // the enclosing collective's, restored at the end
  bool site_ = false;
  bool tool_ = false;
  bool traced_ = false;
  trace::Args args_;
};

}  // namespace kpmap
