// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/collectives/fusion.hpp>

#include <cstdlib>
#include <optional>

namespace kpmap {

namespace {
std::optional<std::size_t> g_fusion_threshold;

std::size_t fusion_threshold_from_env() {
  constexpr std::size_t default_bytes = std::size_t(64) << 20;
  const char* v = std::getenv("KPMAP_FUSION_THRESHOLD");
  if (v == nullptr || *v == '\0') return default_bytes;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (end == v || *end != '\0' || n == 0) {
    throw InputError("environment variable KPMAP_FUSION_THRESHOLD='" + std::string(v) +
                     "' is not allowed: expected a positive number of bytes");
  }
  return static_cast<std::size_t>(n);
}
}  // namespace

std::size_t fusion_threshold() {
  if (!g_fusion_threshold) g_fusion_threshold = fusion_threshold_from_env();
  return *g_fusion_threshold;
}

void set_fusion_threshold(std::size_t bytes) { g_fusion_threshold = bytes > 0 ? bytes : 1; }

namespace detail {
template std::function<void()> start_fused_leaves<LeafExec, LeafExec::memory_space>(
    const LeafExec&, std::vector<FusedLeaf<LeafExec>>, const Axis&, ReduceOp, const char*, double,
    double, transport::Pending*);
}  // namespace detail

}  // namespace kpmap
