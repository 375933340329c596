#pragma once
/// \file
/// \brief Kokkos Tools regions: every public kpmap operation opens one, named
/// `kpmap::<operation>` (a collective adds its axis: `kpmap::psum[devices]`),
/// so a Kokkos tool (the kernel timer, the space-time stack, a profiler's
/// NVTX or ROCTX connector) shows where a run spends its time. See
/// docs/profiling.md.
///
/// With no tool loaded a region costs one check of a global flag: no string
/// is built, nothing is called.

#include <Kokkos_Core.hpp>

#include <string>

namespace kpmap {

/// \brief A Kokkos Tools region for the life of this object (RAII).
class ProfilingRegion {
 public:
  /// \brief The region `name`.
  explicit ProfilingRegion(const char* name) {
    if (Kokkos::Tools::profileLibraryLoaded()) push(name);
  }
  /// \brief The region `name[axis]`, for an operation over a mesh axis.
  ProfilingRegion(const char* name, const std::string& axis) {
    if (Kokkos::Tools::profileLibraryLoaded()) push(std::string(name) + "[" + axis + "]");
  }
  ~ProfilingRegion() {
    if (active_) Kokkos::Tools::popRegion();
  }
  ProfilingRegion(const ProfilingRegion&) = delete;
  ProfilingRegion& operator=(const ProfilingRegion&) = delete;

 private:
  void push(const std::string& name) {
    Kokkos::Tools::pushRegion(name);
    active_ = true;
  }
  bool active_ = false;
};

}  // namespace kpmap
