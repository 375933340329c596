// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/run/phases.hpp>
#include <kpmap/transport/host.hpp>

#include <nlohmann/json.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdio>

namespace kpmap {

PhaseTimes::Scope::Scope(PhaseTimes& times, Phase phase, bool fence)
    : times_(times), phase_(phase), fence_(fence), start_(MPI_Wtime()) {}

PhaseTimes::Scope::~Scope() {
  if (fence_) {
    kpmap::detail::fence(Kokkos::DefaultExecutionSpace(), "kpmap::phase: end of a timed phase");
  }
  times_.add(phase_, MPI_Wtime() - start_);
}

PhaseTimes::Report PhaseTimes::reduce(double wall_seconds, MPI_Comm comm) const {
  Report r;
  MPI_Comm_size(comm, &r.ranks);
  double max[phase_count + 1] = {wall_seconds};
  std::copy(local_.begin(), local_.end(), max + 1);
  std::array<double, phase_count> min = local_;
  std::array<double, phase_count> sum = local_;
  transport::host_allreduce(max, phase_count + 1, MPI_MAX, comm);
  transport::host_allreduce(min.data(), phase_count, MPI_MIN, comm);
  transport::host_allreduce(sum.data(), phase_count, MPI_SUM, comm);
  r.wall = max[0];
  for (std::size_t i = 0; i < phase_count; ++i) {
    r.max[i] = max[i + 1];
    r.min[i] = min[i];
    r.mean[i] = sum[i] / r.ranks;
  }
  return r;
}

std::string phase_table(const PhaseTimes::Report& r) {
  std::string out = "time per phase over " + std::to_string(r.ranks) +
                    (r.ranks == 1 ? " rank" : " ranks") +
                    " (seconds: min / mean / max, and the max's share of the wall time):\n";
  char line[160];
  for (std::size_t i = 0; i < phase_count; ++i) {
    std::snprintf(line, sizeof line, "  %-12s %10.3f / %10.3f / %10.3f  %5.1f %%\n",
                  word_of(static_cast<Phase>(i)), r.min[i], r.mean[i], r.max[i],
                  r.wall > 0 ? 100.0 * r.max[i] / r.wall : 0.0);
    out += line;
  }
  std::snprintf(line, sizeof line, "  %-12s %10s   %10s   %10.3f\n", "wall", "", "", r.wall);
  return out + line;
}

nlohmann::ordered_json to_json(const PhaseTimes::Report& r) {
  nlohmann::ordered_json j;
  j["wall_s"] = r.wall;
  for (std::size_t i = 0; i < phase_count; ++i) {
    const std::string name = word_of(static_cast<Phase>(i));
    j[name + "_s"] = r.max[i];
    j[name + "_min_s"] = r.min[i];
    j[name + "_mean_s"] = r.mean[i];
  }
  return j;
}

}  // namespace kpmap
