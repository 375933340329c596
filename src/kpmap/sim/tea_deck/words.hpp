// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// How a TeaLeaf deck is read (internal to src/kpmap/sim/tea_deck/): its lines
// as words, its numbers, where a line came from, and what a line set.

#include <optional>
#include <string>
#include <vector>

namespace kpmap::sim::tea {

/// \brief A deck line as TeaLeaf sees it: comments cut, lower case, '=' and ','
/// (and control characters) as blanks, split into words.
std::vector<std::string> words_of(std::string line);

/// \brief A TOML string's text, or a --set value's: `"ppcg"`, ` "ppcg" ` and
/// `ppcg` are all ppcg (blanks and one pair of quotes dropped).
inline std::string unquoted(std::string v) {
  const auto first = v.find_first_not_of(" \t");
  const auto last = v.find_last_not_of(" \t");
  v = first == std::string::npos ? std::string() : v.substr(first, last - first + 1);
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) {
    v = v.substr(1, v.size() - 2);
  }
  return v;
}

/// \brief A whole word as an integer ("+3" too), or nothing.
std::optional<long long> to_integer(const std::string& w);
/// \brief A whole word as a finite real (Fortran's 1.0d-15 too), or nothing.
std::optional<double> to_real(std::string w);

// Where a line came from, for messages: "tea.in:12" (line 12) or
// "--set key=value" (line 0, and the argument).
struct Where {
  std::string text;
  int line = 0;
  std::string set;
  std::string at() const { return text + ": "; }
};

// A kpmap-heat key a TeaLeaf key set: its TOML value, where, and the TeaLeaf key.
struct Setting {
  std::string toml;
  Where where;
  std::string name;
};

/// \brief What a deck's `state N ...` lines gave for one state.
struct TeaStateLine {
  int line_no = 0;
  std::string where;
  std::optional<double> density, energy, radius;
  std::string geometry;
  std::optional<double> bound[3][2];  // [dimension][0: min, 1: max]
};

}  // namespace kpmap::sim::tea
