// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief The environment variables kpmap reads, time limits read from the
/// environment, and the hang limit that kpmap's guards share by default.

namespace kpmap {

/// \brief Every environment variable kpmap reads (docs/reliability.md,
/// "Environment variables"). A job whose ranks see different values of one
/// would act on different settings on different hosts (a launcher passes the
/// variables of its own shell only to the ranks of its own host unless told
/// to, as with `mpirun -x`): the Runtime has every rank agree on them before
/// anything else (lint.environment keeps this list whole).
inline constexpr const char* environment_settings[] = {
    "KPMAP_CHECK",     "KPMAP_DEVICE_BEFORE_MPI", "KPMAP_FAULT_INJECT", "KPMAP_FUSION_THRESHOLD",
    "KPMAP_GPU_AWARE", "KPMAP_HOST_TIMEOUT",      "KPMAP_MEMORY_LIMIT", "KPMAP_STAGING",
    "KPMAP_TRACE",     "KPMAP_TRACE_MAX_EVENTS",  "KPMAP_WATCHDOG"};

namespace detail {
/// \brief The time without progress after which kpmap's guards end a job
/// that sets no limit of its own: the run watchdog's automatic limit's least
/// value (run/watchdog.hpp), and how long the Runtime waits at the end of a
/// program for the ranks that have not reached it (KPMAP_WATCHDOG sets both).
inline constexpr double default_hang_limit = 600;
}  // namespace detail

/// \brief A time limit from the environment variable `name`: seconds (>= 0),
/// or `unset` where it is unset or empty.
/// \throws kpmap::InputError (all ranks) for anything else, naming the
/// variable, its value and `expected` (what it holds).
double seconds_from_environment(const char* name, double unset, const char* expected);

}  // namespace kpmap
