#pragma once
/// \file
/// \brief Time limits read from the environment, and the hang limit that
/// kpmap's guards share by default.

namespace kpmap {

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
