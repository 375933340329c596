// SPDX-License-Identifier: BSD-3-Clause
#include "words.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace kpmap::sim::tea {

std::vector<std::string> words_of(std::string line) {
  const auto cut = line.find_first_of("!;");
  if (cut != std::string::npos) line.resize(cut);
  for (char& c : line) {
    const auto u = static_cast<unsigned char>(c);
    c = u < 32 || c == '=' || c == ',' ? ' ' : static_cast<char>(std::tolower(u));
  }
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

std::optional<long long> to_integer(const std::string& w) {
  long long v = 0;
  const char* b = w.data();
  const char* e = w.data() + w.size();
  if (!w.empty() && w[0] == '+') ++b;
  const auto [p, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || p != e || b == e) return std::nullopt;
  return v;
}

std::optional<double> to_real(std::string w) {
  // Fortran writes a double-precision exponent with d: 1.0d-15.
  for (char& c : w) {
    if (c == 'd') c = 'e';
  }
  if (w.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(w.c_str(), &end);
  if (end != w.c_str() + w.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace kpmap::sim::tea
