// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/tools/profiling.hpp>

namespace kpmap {

ProfilingRegion::ProfilingRegion(const char* name, const std::string& axis, trace::Track track)
    : outer_(detail::collective_site()), site_(true) {
  auto& site = detail::collective_site();
  site.name = name;
  const std::size_t n = std::min(axis.size(), sizeof(site.axis) - 1);
  axis.copy(site.axis, n);
  site.axis[n] = '\0';
  if (detail::tool_loaded() || trace::enabled()) {
    push(std::string(name) + "[" + axis + "]", track);
    args_.axis = axis;
  }
}

void ProfilingRegion::push(const std::string& name, trace::Track track) {
  if (detail::tool_loaded()) {
    Kokkos::Tools::pushRegion(name);
    tool_ = true;
  }
  if (trace::enabled()) {
    trace::begin(name, track);
    traced_ = true;
  }
}

void ProfilingRegion::end() {
  if (site_) detail::collective_site() = outer_;
  if (tool_) Kokkos::Tools::popRegion();
  if (traced_) trace::end(args_);
}

}  // namespace kpmap
