// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/base/environment.hpp>

#include <kpmap/base/error.hpp>

#include <cmath>
#include <cstdlib>
#include <string>

namespace kpmap {

double seconds_from_environment(const char* name, double unset, const char* expected) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return unset;
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  if (end == v || *end != '\0' || !std::isfinite(s) || s < 0) {
    throw InputError(
        std::string("environment variable ") + name + "='" + v + "': expected " + expected,
        ErrorScope::all_ranks);
  }
  return s;
}

}  // namespace kpmap
