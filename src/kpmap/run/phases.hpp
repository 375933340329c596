// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Where the time of a run goes: per-phase timers each rank keeps,
/// reduced over the ranks at the end (the slowest rank sets the pace; the
/// minimum and mean show imbalance without a tool).
///
///   kpmap::PhaseTimes times;
///   { auto t = times.scope(kpmap::Phase::io); read_data(); }
///   times.add(kpmap::Phase::halo, seconds);
///   const auto report = times.reduce(wall, comm);  // collective
///   std::printf("%s", kpmap::phase_table(report).c_str());

#include <kpmap/base/words.hpp>

#include <nlohmann/json_fwd.hpp>

#include <mpi.h>

#include <array>
#include <cstddef>
#include <iterator>
#include <string>
#include <utility>

namespace kpmap {

enum class Phase { compute, halo, collectives, io, checkpoint };
/// \brief The phases' words in tables and result.json, in the order of Phase.
template <>
struct EnumWords<Phase> {
  static constexpr std::pair<Phase, const char*> list[] = {{Phase::compute, "compute"},
                                                           {Phase::halo, "halo"},
                                                           {Phase::collectives, "collectives"},
                                                           {Phase::io, "io"},
                                                           {Phase::checkpoint, "checkpoint"}};
};
inline constexpr std::size_t phase_count = std::size(EnumWords<Phase>::list);

class PhaseTimes {
 public:
  /// \brief Adds the time between construction and destruction to a phase.
  /// With `fence`, the default execution space is fenced before the clock
  /// stops, so asynchronous kernels are charged to the phase that launched them.
  class Scope {
   public:
    Scope(PhaseTimes& times, Phase phase, bool fence);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    PhaseTimes& times_;
    Phase phase_;
    bool fence_;
    double start_;
  };

  Scope scope(Phase phase, bool fence = true) { return Scope(*this, phase, fence); }
  void add(Phase phase, double seconds) { local_[static_cast<std::size_t>(phase)] += seconds; }
  double local(Phase phase) const { return local_[static_cast<std::size_t>(phase)]; }
  /// \brief Adds another account's seconds, phase by phase (a loop's own
  /// times into the run's).
  PhaseTimes& operator+=(const PhaseTimes& other) {
    for (std::size_t i = 0; i < phase_count; ++i) local_[i] += other.local_[i];
    return *this;
  }

  /// \brief Seconds of wall time and of each phase over the ranks: per phase
  /// the minimum, the mean and the maximum.
  struct Report {
    double wall = 0;
    int ranks = 1;
    std::array<double, phase_count> min{}, mean{}, max{};
  };
  /// \brief Collective over `comm`: the wall time's maximum, and each phase's.
  Report reduce(double wall_seconds, MPI_Comm comm) const;

 private:
  std::array<double, phase_count> local_{};
};

/// \brief The end-of-run table: each phase's min / mean / max seconds over
/// the ranks, and the max's share of the wall time.
std::string phase_table(const PhaseTimes::Report& report);

/// \brief The report as a JSON object: `wall_s`, then per phase `NAME_s`
/// (the max), `NAME_min_s` and `NAME_mean_s`.
nlohmann::ordered_json to_json(const PhaseTimes::Report& report);

}  // namespace kpmap
