// SPDX-License-Identifier: BSD-3-Clause
#include "detail/text.hpp"

#include <kpmap/base/error.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <sstream>
#include <string_view>
#include <utility>

namespace kpmap::deck::detail {

const char* expected_phrase(Type t) {
  switch (t) {
    case Type::boolean:
      return "a boolean (true or false)";
    case Type::integer:
      return "an integer";
    case Type::real:
      return "a number";
    case Type::string:
      return "a string";
    case Type::integer_list:
      return "a list of integers";
    case Type::real_list:
      return "a list of numbers";
  }
  return "?";
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

}  // namespace kpmap::deck::detail

namespace kpmap::deck {

namespace {
// The UTF-8 sequence at s[i] (a lead byte >= 0x80): its length and code
// point, or length 0 where the bytes are no valid, shortest sequence.
std::pair<std::size_t, std::uint32_t> utf8_at(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  const std::size_t n = c >= 0xF0 && c < 0xF5   ? 4
                        : c >= 0xE0 && c < 0xF0 ? 3
                        : c >= 0xC2 && c < 0xE0 ? 2
                                                : 0;
  std::uint32_t cp = n == 4 ? c & 0x07u : n == 3 ? c & 0x0Fu : c & 0x1Fu;
  bool ok = n > 0 && i + n <= s.size();
  for (std::size_t k = 1; ok && k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    ok = (b & 0xC0u) == 0x80u;
    cp = (cp << 6) | (b & 0x3Fu);
  }
  ok = ok && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF) &&
       cp >= (n == 2   ? 0x80u
              : n == 3 ? 0x800u
                       : 0x10000u);
  return {ok ? n : 0, cp};
}
}  // namespace

std::string utf8_problem(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const std::size_t n = utf8_at(s, i).first;
    if (n == 0) return "byte " + std::to_string(i + 1);
    i += n;
  }
  return "";
}

std::string printable(std::string_view s) {
  std::string out;
  char buf[8];
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t n = c < 0x80 ? 1 : utf8_at(s, i).first;
    if (n == 0 || c < 0x20 || c == 0x7f) {
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
      ++i;
      continue;
    }
    out.append(s.substr(i, n));
    i += n;
  }
  return out;
}

std::string toml_number(double d) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d);
  std::string s(buf, end);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // stays a TOML float
  return s;
}

std::string toml_quoted(const std::string& s) {
  std::string out = "\"";
  char buf[16];
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += static_cast<char>(c);
      } else if (c == '\n') {
        out += "\\n";
      } else if (c == '\t') {
        out += "\\t";
      } else if (c < 0x20 || c == 0x7f) {
        std::snprintf(buf, sizeof buf, "\\u%04X", c);
        out += buf;
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    const auto [n, cp] = utf8_at(s, i);
    if (n == 0) {
      throw InputError("\"" + printable(s) + "\" is not UTF-8 text (byte " + std::to_string(i + 1) +
                       "), which a deck cannot hold");
    }
    std::snprintf(buf, sizeof buf, cp > 0xFFFF ? "\\U%08X" : "\\u%04X", static_cast<unsigned>(cp));
    out += buf;
    i += n;
  }
  return out + "\"";
}

}  // namespace kpmap::deck

namespace kpmap::deck::detail {

std::string format_value(const Value& v) {
  struct {
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(long long i) const { return std::to_string(i); }
    std::string operator()(double d) const { return toml_number(d); }
    std::string operator()(const std::string& s) const { return toml_quoted(s); }
    std::string operator()(const std::vector<long long>& l) const {
      std::string s = "[";
      for (std::size_t i = 0; i < l.size(); ++i) s += (i ? ", " : "") + std::to_string(l[i]);
      return s + "]";
    }
    std::string operator()(const std::vector<double>& l) const {
      std::string s = "[";
      for (std::size_t i = 0; i < l.size(); ++i) s += (i ? ", " : "") + toml_number(l[i]);
      return s + "]";
    }
  } f;
  return std::visit(f, v);
}

std::string format_range(const Key& k) {
  if (!k.choices.empty()) {
    std::string s;
    for (const auto& c : k.choices) s += (s.empty() ? "" : ", ") + quote(c);
    return "one of " + s;
  }
  if (!k.range.min && !k.range.max) return "";
  const bool integral = k.type == Type::integer || k.type == Type::integer_list;
  auto num = [integral](double d) {
    return integral ? std::to_string(static_cast<long long>(d)) : toml_number(d);
  };
  const char* open = k.range.above_min ? "(" : "[";
  if (k.range.min && k.range.max) {
    return open + num(*k.range.min) + ", " + num(*k.range.max) + "]";
  }
  if (k.range.min) return (k.range.above_min ? "> " : ">= ") + num(*k.range.min);
  return "<= " + num(*k.range.max);
}

// What a TOML node holds, for "found ..." in messages.
std::string describe(const toml::node& n) {
  std::ostringstream s;
  if (auto v = n.as_string()) return "a string (" + quote(v->get()) + ")";
  if (auto v = n.as_integer()) return "an integer (" + std::to_string(v->get()) + ")";
  if (auto v = n.as_floating_point()) return "a number (" + toml_number(v->get()) + ")";
  if (auto v = n.as_boolean())
    return std::string("a boolean (") + (v->get() ? "true" : "false") + ")";
  if (n.is_array()) return "a list";
  if (n.is_table()) return "a table";
  return "a date or time";
}

std::string section_of(const std::string& path) {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

std::vector<std::string_view> segments(std::string_view path) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    out.push_back(path.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) return out;
    start = dot + 1;
  }
}

// An instance index of a numbered table: 1 .. 9999, no leading zero.
bool is_index(std::string_view s) {
  if (s.empty() || s.size() > 4 || s[0] == '0') return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Whether `path` matches the key path `pattern` ('#' matching an index). With
// `section`, whether `path` names a table that holds `pattern` (path's
// segments match a strict prefix of pattern's).
bool matches(std::string_view pattern, std::string_view path, bool section) {
  const auto ps = segments(pattern);
  const auto xs = segments(path);
  if (section ? xs.size() >= ps.size() : xs.size() != ps.size()) return false;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (ps[i] == "#" ? !is_index(xs[i]) : ps[i] != xs[i]) return false;
  }
  return true;
}

// "states.#" for "states.#.density"; "" for a key without '#'.
std::string group_of(const std::string& pattern) {
  const auto at = pattern.find(".#.");
  return at == std::string::npos ? "" : pattern.substr(0, at + 2);
}

}  // namespace kpmap::deck::detail
