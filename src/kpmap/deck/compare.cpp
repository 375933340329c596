// SPDX-License-Identifier: BSD-3-Clause
// A deck against the resolved deck of an earlier run (the text a checkpoint
// stores): what a restart must continue unchanged.

#include "detail/text.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <string_view>

namespace kpmap::deck {

using namespace detail;

namespace {

using Leaves = std::map<std::string, const toml::node*, std::less<>>;

// Every value of `table` that is no table, by its dotted path.
void flatten(const toml::table& table, const std::string& prefix, Leaves& out) {
  for (const auto& [key, node] : table) {
    const std::string path = prefix + std::string(key.str());
    if (const auto* sub = node.as_table()) {
      flatten(*sub, path + ".", out);
    } else {
      out.emplace(path, &node);
    }
  }
}

// A value as a deck writes it: 0.1, [10.0, 10.0], "adam".
std::string shown(const toml::node& n) {
  if (const auto* f = n.as_floating_point()) return toml_number(f->get());
  if (const auto* t = n.as_string()) return quote(t->get());
  if (const auto* list = n.as_array()) {
    std::string s = "[";
    for (std::size_t i = 0; i < list->size(); ++i) {
      s += (i > 0 ? ", " : "") + shown(*list->get(i));
    }
    return s + "]";
  }
  std::ostringstream s;
  n.visit([&](const auto& v) { s << v; });
  return s.str();
}

// Equal values: numbers compare as numbers (1 and 1.0 alike), lists
// element by element, anything else exactly.
bool same(const toml::node& a, const toml::node& b) {
  const auto number = [](const toml::node& n) { return n.is_integer() || n.is_floating_point(); };
  if (number(a) && number(b)) return a.value<double>() == b.value<double>();
  const auto* la = a.as_array();
  const auto* lb = b.as_array();
  if (la != nullptr && lb != nullptr) {
    if (la->size() != lb->size()) return false;
    for (std::size_t i = 0; i < la->size(); ++i) {
      if (!same(*la->get(i), *lb->get(i))) return false;
    }
    return true;
  }
  if (a.type() != b.type()) return false;
  if (const auto* sa = a.as_string()) return sa->get() == b.as_string()->get();
  if (const auto* ba = a.as_boolean()) return ba->get() == b.as_boolean()->get();
  return shown(a) == shown(b);  // a date or time
}

bool under(std::string_view leaf, const std::string& path) {
  return leaf == path || (leaf.size() > path.size() && leaf.compare(0, path.size(), path) == 0 &&
                          leaf[path.size()] == '.');
}

// Whether dotted path `leaf` matches `pattern`, whose `#` segments match
// any run of digits.
bool matches(std::string_view leaf, std::string_view pattern) {
  while (true) {
    const std::size_t a = leaf.find('.'), b = pattern.find('.');
    const std::string_view x = leaf.substr(0, a), y = pattern.substr(0, b);
    const bool index =
        y == "#" && !x.empty() && x.find_first_not_of("0123456789") == std::string_view::npos;
    if (!index && x != y) return false;
    if (a == std::string_view::npos || b == std::string_view::npos) {
      return a == std::string_view::npos && b == std::string_view::npos;
    }
    leaf.remove_prefix(a + 1);
    pattern.remove_prefix(b + 1);
  }
}

}  // namespace

std::string first_difference(const Deck& deck, std::string_view saved,
                             const std::vector<std::string>& paths,
                             const std::vector<std::string>& except) {
  toml::table mine;
  toml::table theirs;
  try {
    mine = toml::parse(deck.to_toml());
    theirs = toml::parse(saved);
  } catch (const toml::parse_error& e) {
    return "its deck cannot be read (" + std::string(e.description()) + ")";
  }
  Leaves now;
  Leaves then;
  flatten(mine, "", now);
  flatten(theirs, "", then);
  for (Leaves* leaves : {&now, &then}) {
    for (auto it = leaves->begin(); it != leaves->end();) {
      const std::string_view leaf = it->first;
      const bool skip = std::any_of(except.begin(), except.end(),
                                    [&](const std::string& p) { return matches(leaf, p); });
      it = skip ? leaves->erase(it) : std::next(it);
    }
  }
  for (const std::string& path : paths) {
    for (const auto& [leaf, old] : then) {
      if (!under(leaf, path)) continue;
      const auto it = now.find(leaf);
      if (it == now.end()) {
        return deck.where(section_of(leaf)) + "key '" + leaf + "' is " + shown(*old) +
               " in the checkpoint and not given here";
      }
      if (!same(*it->second, *old)) {
        return deck.where(leaf) + "key " + deck.named(leaf) + " is " + shown(*it->second) +
               " here and " + shown(*old) + " in the checkpoint";
      }
    }
    // A value the checkpoint lacks differs when its whole table is new (a
    // state the earlier run did not have), not when the key is newer than
    // the checkpoint.
    for (const auto& [leaf, value] : now) {
      if (!under(leaf, path) || then.count(leaf) != 0) continue;
      const std::string table = section_of(leaf);
      const bool known = std::any_of(then.begin(), then.end(),
                                     [&](const auto& kv) { return section_of(kv.first) == table; });
      if (!known) {
        return deck.where(leaf) + "key " + deck.named(leaf) + " is " + shown(*value) +
               " here, and the checkpoint has no [" + table + "]";
      }
    }
  }
  return "";
}

}  // namespace kpmap::deck
