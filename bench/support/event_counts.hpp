// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// What a stretch of a program asks of the device, counted in-process with
// Kokkos Tools callbacks (as tests/support/region_tool.cpp counts them from a
// loaded tool library): kernel launches, reductions, host synchronisations
// (fences, and reductions into host values, which Kokkos 4 reports as fences
// and kpmap reports so under Kokkos 3.4), global fences (of every instance),
// deep copies and allocations.

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kpmap::bench {

struct EventCounts {
  double kernels = 0, reductions = 0, syncs = 0, global_fences = 0, copies = 0, allocations = 0;
  /// Fences by the label the callback gets, "global: " before those of
  /// every instance: where a fence count comes from.
  std::map<std::string, double> fences;

  EventCounts per(double n) const {
    const double d = n > 0 ? n : 1;
    EventCounts c{kernels / d, reductions / d,  syncs / d, global_fences / d,
                  copies / d,  allocations / d, {}};
    for (const auto& [label, count] : fences) c.fences[label] = count / d;
    return c;
  }
  /// The `n` most frequent fence labels with their counts, most first:
  /// "2 kpmap::sim: local sums to the host; 1 kpmap::HaloExchange: ...".
  std::string top_fences(std::size_t n) const {
    std::vector<std::pair<double, std::string>> order;
    for (const auto& [label, count] : fences) order.emplace_back(count, label);
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    std::string out;
    for (std::size_t i = 0; i < order.size() && i < n; ++i) {
      char count[32];
      std::snprintf(count, sizeof count, "%.3g ", order[i].first);
      out += (i ? "; " : "") + std::string(count) + order[i].second;
    }
    return out;
  }
};

namespace detail {
inline EventCounts& live_counts() {
  static EventCounts c;
  return c;
}
inline void on_for(const char*, std::uint32_t, std::uint64_t*) { live_counts().kernels += 1; }
inline void on_reduce(const char*, std::uint32_t, std::uint64_t*) {
  live_counts().kernels += 1;
  live_counts().reductions += 1;
}
inline void on_fence(const char* name, std::uint32_t device_id, std::uint64_t*) {
  live_counts().syncs += 1;
  // Kokkos 4: the low 24 bits name the instance; 0 is "all instances".
  const bool global = (device_id & 0x00ffffffu) == 0;
  if (global) live_counts().global_fences += 1;
  live_counts().fences[(global ? "global: " : "") + std::string(name ? name : "")] += 1;
}
inline void on_copy(Kokkos::Tools::SpaceHandle, const char*, const void*,
                    Kokkos::Tools::SpaceHandle, const char*, const void*, std::uint64_t) {
  live_counts().copies += 1;
}
inline void on_alloc(Kokkos::Tools::SpaceHandle, const char*, const void*, std::uint64_t) {
  live_counts().allocations += 1;
}
}  // namespace detail

/// Counts the events between its construction and stop() (or destruction);
/// one at a time. The callbacks replace a loaded tool library's while it runs.
class CountEvents {
 public:
  CountEvents() {
    detail::live_counts() = {};
    namespace E = Kokkos::Tools::Experimental;
    E::set_begin_parallel_for_callback(detail::on_for);
    E::set_begin_parallel_scan_callback(detail::on_for);
    E::set_begin_parallel_reduce_callback(detail::on_reduce);
    E::set_begin_fence_callback(detail::on_fence);
    E::set_begin_deep_copy_callback(detail::on_copy);
    E::set_allocate_data_callback(detail::on_alloc);
  }
  EventCounts stop() {
    if (running_) {
      namespace E = Kokkos::Tools::Experimental;
      E::set_begin_parallel_for_callback(nullptr);
      E::set_begin_parallel_scan_callback(nullptr);
      E::set_begin_parallel_reduce_callback(nullptr);
      E::set_begin_fence_callback(nullptr);
      E::set_begin_deep_copy_callback(nullptr);
      E::set_allocate_data_callback(nullptr);
      running_ = false;
    }
    return detail::live_counts();
  }
  ~CountEvents() { stop(); }
  CountEvents(const CountEvents&) = delete;
  CountEvents& operator=(const CountEvents&) = delete;

 private:
  bool running_ = true;
};

}  // namespace kpmap::bench
