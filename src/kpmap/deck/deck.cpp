// SPDX-License-Identifier: BSD-3-Clause
// A checked deck: its values, and where the user's text set each of them.

#include "detail/text.hpp"

#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace kpmap::deck {

using namespace detail;

bool Deck::has(std::string_view path) const { return values_.find(path) != values_.end(); }

bool Deck::given(std::string_view path) const {
  return lines_.find(path) != lines_.end() || origins_.find(path) != origins_.end();
}

std::vector<int> Deck::indices(std::string_view group) const {
  std::vector<int> out;
  const std::string stem = std::string(group) + ".";
  for (const auto& [path, value] : values_) {
    if (path.compare(0, stem.size(), stem) != 0) continue;
    const auto rest = std::string_view(path).substr(stem.size());
    const auto seg = rest.substr(0, rest.find('.'));
    if (seg.size() == rest.size() || !is_index(seg)) continue;
    const int index = std::stoi(std::string(seg));
    if (std::find(out.begin(), out.end(), index) == out.end()) out.push_back(index);
  }
  std::sort(out.begin(), out.end());
  return out;
}

int Deck::line(std::string_view path) const {
  auto it = lines_.find(path);
  return it == lines_.end() ? 0 : it->second;
}

std::string Deck::where(std::string_view path) const {
  if (auto it = origins_.find(path); it != origins_.end() && !it->second.set.empty()) {
    return "--set " + it->second.set + ": ";
  }
  const int l = line(path);
  return source_ + (l > 0 ? ":" + std::to_string(l) : "") + ": ";
}

std::string Deck::named(std::string_view path) const {
  auto it = origins_.find(path);
  if (it == origins_.end() || it->second.name.empty() || it->second.name == path) {
    return "'" + std::string(path) + "'";
  }
  std::string shown(path);
  // An element() of a list: "mesh.upper.1" is shown as mesh.upper[1].
  if (const auto dot = shown.rfind('.');
      dot != std::string::npos && dot + 1 < shown.size() && values_.count(path) == 0 &&
      shown.find_first_not_of("0123456789", dot + 1) == std::string::npos) {
    shown = shown.substr(0, dot) + "[" + shown.substr(dot + 1) + "]";
  }
  return "'" + it->second.name + "' (" + shown + ")";
}

InputError Deck::bad(std::string_view path, const std::string& what) const {
  return InputError(where(path) + "key " + named(path) + ": " + what, ErrorScope::all_ranks);
}

std::string Deck::element(std::string_view path, int i) const {
  std::string part = std::string(path) + "." + std::to_string(i);
  return origins_.count(part) != 0 ? part : std::string(path);
}

const Value& Deck::at(std::string_view path) const {
  auto it = values_.find(path);
  if (it == values_.end()) {
    throw Error("kpmap::deck: '" + std::string(path) + "' is not a key of the " + app_ + " schema");
  }
  return it->second;
}

namespace {
template <class T>
const T& get_as(const Value& v, std::string_view path, const char* asked) {
  if (const T* p = std::get_if<T>(&v)) return *p;
  throw Error("kpmap::deck: key '" + std::string(path) + "' is not " + asked);
}
}  // namespace

bool Deck::boolean(std::string_view p) const { return get_as<bool>(at(p), p, "a boolean"); }
long long Deck::integer(std::string_view p) const {
  return get_as<long long>(at(p), p, "an integer");
}
double Deck::real(std::string_view p) const { return get_as<double>(at(p), p, "a real"); }
const std::string& Deck::string(std::string_view p) const {
  return get_as<std::string>(at(p), p, "a string");
}
const std::vector<long long>& Deck::integer_list(std::string_view p) const {
  return get_as<std::vector<long long>>(at(p), p, "a list of integers");
}
const std::vector<double>& Deck::real_list(std::string_view p) const {
  return get_as<std::vector<double>>(at(p), p, "a list of reals");
}

std::string Deck::to_toml() const {
  std::ostringstream s;
  // The file's name as text: a name may hold bytes that are no UTF-8, which
  // TOML refuses even in a comment.
  s << "# " << app_ << " deck, resolved (defaults filled in) from " << printable(source_) << "\n";
  // Top-level keys first: TOML puts every key after a [table] header in that table.
  for (const auto& path : order_) {
    if (section_of(path).empty()) s << path << " = " << format_value(values_.at(path)) << "\n";
  }
  std::vector<std::string> sections;
  for (const auto& path : order_) {
    const std::string sec = section_of(path);
    if (!sec.empty() && std::find(sections.begin(), sections.end(), sec) == sections.end()) {
      sections.push_back(sec);
    }
  }
  for (const auto& sec : sections) {
    s << "\n[" << sec << "]\n";
    for (const auto& path : order_) {
      if (section_of(path) == sec) {
        s << path.substr(sec.size() + 1) << " = " << format_value(values_.at(path)) << "\n";
      }
    }
  }
  return s.str();
}

}  // namespace kpmap::deck
