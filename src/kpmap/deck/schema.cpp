// SPDX-License-Identifier: BSD-3-Clause
// The schema: the keys a program knows, their types, defaults and ranges, and
// the tables --help-deck prints.

#include "detail/text.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <string>

namespace kpmap::deck {

using namespace detail;

Schema& Schema::add(Key key) {
  for (const auto& k : keys_) {
    if (k.path == key.path) {
      throw Error("kpmap::deck::Schema: key '" + key.path + "' declared twice");
    }
  }
  const auto segs = segments(key.path);
  const auto hashes = std::count(segs.begin(), segs.end(), "#");
  if (hashes > 1 || (hashes == 1 && (segs.front() == "#" || segs.back() == "#"))) {
    throw Error("kpmap::deck::Schema: key '" + key.path + "' may hold one '#' segment, " +
                "between a section and a key");
  }
  keys_.push_back(std::move(key));
  return *this;
}

Schema& Schema::boolean(const std::string& path, std::optional<bool> fallback,
                        const std::string& description) {
  Key k{path, Type::boolean, {}, {}, {}, "", description, {}, 1, {}};
  if (fallback) k.fallback = *fallback;
  return add(std::move(k));
}

Schema& Schema::integer(const std::string& path, std::optional<long long> fallback, Range range,
                        const std::string& unit, const std::string& description) {
  Key k{path, Type::integer, {}, range, {}, unit, description, {}, 1, {}};
  if (fallback) k.fallback = *fallback;
  return add(std::move(k));
}

Schema& Schema::real(const std::string& path, std::optional<double> fallback, Range range,
                     const std::string& unit, const std::string& description) {
  Key k{path, Type::real, {}, range, {}, unit, description, {}, 1, {}};
  if (fallback) k.fallback = *fallback;
  return add(std::move(k));
}

Schema& Schema::string(const std::string& path, std::optional<std::string> fallback,
                       std::vector<std::string> choices, const std::string& description) {
  Key k{path, Type::string, {}, {}, std::move(choices), "", description, {}, 1, {}};
  if (fallback) k.fallback = *fallback;
  return add(std::move(k));
}

Schema& Schema::integer_list(const std::string& path,
                             std::optional<std::vector<long long>> fallback, Range range,
                             const std::string& unit, const std::string& description) {
  Key k{path, Type::integer_list, {}, range, {}, unit, description, {}, 1, {}};
  if (fallback) k.fallback = *fallback;
  return add(std::move(k));
}

Schema& Schema::real_list(const std::string& path, std::optional<std::vector<double>> fallback,
                          Range range, const std::string& unit, const std::string& description) {
  Key k{path, Type::real_list, {}, range, {}, unit, description, {}, 1, {}};
  if (fallback) k.fallback = *fallback;
  return add(std::move(k));
}

const Key* Schema::find(std::string_view path) const {
  for (const auto& k : keys_) {
    if (k.path.find('#') == std::string::npos && k.path == path) return &k;
  }
  for (const auto& k : keys_) {
    if (k.path.find('#') != std::string::npos && matches(k.path, path, false)) return &k;
  }
  return nullptr;
}

Schema& Schema::renamed(const std::string& old_path, const std::string& new_path,
                        const std::string& until) {
  if (find(new_path) == nullptr) {
    throw Error("kpmap::deck::Schema::renamed: '" + new_path + "' is no key of " + app_ +
                " (declare it before its old name)");
  }
  if (find(old_path) != nullptr || renamed_from(old_path) != nullptr) {
    throw Error("kpmap::deck::Schema::renamed: '" + old_path + "' is a key of " + app_ +
                " already");
  }
  renames_.push_back({old_path, new_path, until});
  return *this;
}

const Schema::Rename* Schema::renamed_from(std::string_view path) const {
  for (const auto& r : renames_) {
    if (r.old_path == path) return &r;
  }
  return nullptr;
}

Schema& Schema::merge(const std::string& prefix, const std::string& owner, const Schema& keys,
                      const std::string& selector) {
  for (const Key& k : keys.keys()) {
    Key key = k;
    key.path = prefix + k.path;
    key.description = owner + ": " + k.description;
    auto same =
        std::find_if(keys_.begin(), keys_.end(), [&](const Key& e) { return e.path == key.path; });
    if (same == keys_.end()) {
      owners_[key.path] = owner;
      if (!selector.empty()) key.when.push_back({selector, {owner}, true, true});
      add(std::move(key));
      continue;
    }
    const auto by = owners_.find(key.path);
    if (by == owners_.end()) {
      throw Error("kpmap::deck::Schema: key '" + key.path + "' of " + owner + " is a key of " +
                  app_ + " itself; give it another name");
    }
    const bool agree = same->type == k.type && same->fallback == k.fallback &&
                       same->range.min == k.range.min && same->range.max == k.range.max &&
                       same->range.above_min == k.range.above_min && same->choices == k.choices &&
                       same->unit == k.unit;
    if (!agree) {
      throw Error("kpmap::deck::Schema: key '" + key.path + "' is declared by " + by->second +
                  " and by " + owner +
                  " with another type, default, range, choices or unit; a key that several "
                  "declare must mean one thing (or give it another name)");
    }
    same->description += "; " + key.description;
    owners_[key.path] += ", " + owner;
    for (Condition& c : same->when) {
      if (c.pieces && c.key == selector) c.values.push_back(owner);
    }
  }
  return *this;
}

namespace {

Key& declared(std::vector<Key>& keys, const std::string& app, const std::string& path,
              const char* who) {
  for (Key& k : keys) {
    if (k.path == path) return k;
  }
  throw Error(std::string("kpmap::deck::Schema::") + who + ": '" + path + "' is no key of " + app +
              " (declare it first)");
}

// `path`'s table index ("states.2.radius" -> 2), 0 outside a numbered table.
int table_index(const std::string& pattern, const std::string& path) {
  const auto p = segments(pattern);
  const auto q = segments(path);
  for (std::size_t i = 0; i < p.size() && i < q.size(); ++i) {
    if (p[i] == "#") return std::stoi(std::string(q[i]));
  }
  return 0;
}

// `key` with its `#` segment, if any, replaced by `path`'s index.
std::string in_table(const std::string& key, int index) {
  const auto at = key.find(".#.");
  return at == std::string::npos
             ? key
             : key.substr(0, at + 1) + std::to_string(index) + key.substr(at + 2);
}

// A value as a condition names it: a string's text, "true"/"false", a number.
std::string condition_word(const Value& v) {
  if (const auto* t = std::get_if<std::string>(&v)) return *t;
  return format_value(v);
}

// "\"hdf5\" or \"idx\"" (quoted), "cg, ppcg" (the pieces that read a key)
std::string either(const std::vector<std::string>& values, bool quoted) {
  std::string s;
  for (std::size_t i = 0; i < values.size(); ++i) {
    s += i == 0 ? "" : !quoted ? ", " : i + 1 == values.size() ? " or " : ", ";
    s += quoted ? "\"" + values[i] + "\"" : values[i];
  }
  return s;
}

// "read only where data.kind is \"hdf5\" or \"idx\"; from states.2 on (...)"
// (a piece's key says whose it is in its description).
std::string condition_text(const Key& k) {
  std::string s;
  for (const Condition& c : k.when) {
    if (c.pieces) continue;
    s += (s.empty() ? "" : "; ") + ("read only where " + c.key + " is " + either(c.values, c.text));
  }
  if (k.first_table > 1) {
    const std::string group = group_of(k.path);
    s += (s.empty() ? "read from " : "; from ") + group.substr(0, group.size() - 2) + "." +
         std::to_string(k.first_table) + " on (" + k.first_table_reason + ")";
  }
  return s;
}

}  // namespace

Schema& Schema::when(const std::string& path, const std::string& key,
                     std::vector<std::string> values) {
  const bool text = declared(keys_, app_, key, "when").type == Type::string;
  declared(keys_, app_, path, "when").when.push_back({key, std::move(values), false, text});
  return *this;
}

Schema& Schema::from_table(const std::string& path, int first, const std::string& why) {
  Key& k = declared(keys_, app_, path, "from_table");
  if (group_of(path).empty() || first < 1) {
    throw Error("kpmap::deck::Schema::from_table: '" + path +
                "' is no key of a numbered table, or the first table is below 1");
  }
  k.first_table = first;
  k.first_table_reason = why;
  return *this;
}

std::string Schema::no_effect(const Deck& d, const std::string& path) const {
  const Key* k = find(path);
  if (k == nullptr || !d.given(path) || (k->fallback && d.value(path) == *k->fallback)) return "";
  const int index = table_index(k->path, path);
  const std::string start = d.where(path) + "key " + d.named(path) + ": ";
  if (index > 0 && index < k->first_table) {
    const std::string group = group_of(k->path);
    return start + "it would have no effect in " + path.substr(0, path.rfind('.')) + " (" +
           k->first_table_reason + "; " + k->path + " is read from " +
           group.substr(0, group.size() - 2) + "." + std::to_string(k->first_table) + " on)";
  }
  for (const Condition& c : k->when) {
    const std::string key = in_table(c.key, index);
    const std::string value = condition_word(d.value(key));
    if (std::find(c.values.begin(), c.values.end(), value) != c.values.end()) continue;
    // A piece's key is named as the piece declares it ("omega" of solver.omega).
    const std::string name = c.pieces ? path.substr(section_of(c.key).size() + 1) : path;
    return start + key + " = " + (c.text ? "\"" + value + "\"" : value) + " reads no " + name +
           ", it would have no effect (" + name + " is " +
           (c.pieces ? "read by " + either(c.values, false)
                     : "read only where " + key + " is " + either(c.values, c.text)) +
           ")";
  }
  return "";
}

void check_registration(const std::string& who, const std::string& kind, const std::string& name,
                        const Schema& keys,
                        const std::vector<std::pair<std::string, const Schema*>>& others) {
  const bool word = !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::islower(c) || std::isdigit(c) || c == '_';
  });
  if (!word) {
    throw Error(who + ": the name '" + name +
                "' is not a deck word (lower-case letters, digits and '_')");
  }
  const std::string a =
      !kind.empty() && std::string("aeiou").find(kind[0]) != std::string::npos ? "an " : "a ";
  for (const auto& other : others) {
    if (other.first == name) {
      throw Error(who + ": " + a + kind + " named '" + name + "' is registered already");
    }
  }
  for (const Key& k : keys.keys()) {
    if (!k.fallback) {
      throw Error(who + ": key '" + k.path + "' of " + kind + " '" + name + "' has no default (" +
                  a + kind + "'s keys are optional in a deck)");
    }
  }
  // A key this piece shares with another must be declared alike.
  Schema all(kind);
  for (const auto& other : others) all.merge("", other.first, *other.second);
  all.merge("", name, keys);
}

Settings& Settings::set(const std::string& name, Value value) {
  const Key* k = keys_ != nullptr ? keys_->find(name) : nullptr;
  if (k == nullptr) {
    throw Error("kpmap::deck::Settings: no key '" + name + "' is declared" +
                (keys_ != nullptr ? " by " + keys_->app() : std::string()));
  }
  if (value.index() != static_cast<std::size_t>(k->type)) {
    throw Error("kpmap::deck::Settings: key '" + name + "' is " + expected_phrase(k->type));
  }
  values_[name] = std::move(value);
  return *this;
}

const Value& Settings::at(std::string_view name, Type type) const {
  const Key* k = keys_ != nullptr ? keys_->find(name) : nullptr;
  if (k == nullptr || k->type != type) {
    throw Error("kpmap::deck::Settings: no " + std::string(kpmap::word_of(type)) + " key '" +
                std::string(name) + "' is declared" +
                (keys_ != nullptr ? " by " + keys_->app() : std::string()));
  }
  if (auto it = values_.find(name); it != values_.end()) return it->second;
  if (!k->fallback) {
    throw Error("kpmap::deck::Settings: key '" + std::string(name) + "' has no value");
  }
  return *k->fallback;
}

bool Settings::boolean(std::string_view n) const { return std::get<bool>(at(n, Type::boolean)); }
long long Settings::integer(std::string_view n) const {
  return std::get<long long>(at(n, Type::integer));
}
double Settings::real(std::string_view n) const { return std::get<double>(at(n, Type::real)); }
const std::string& Settings::string(std::string_view n) const {
  return std::get<std::string>(at(n, Type::string));
}
const std::vector<long long>& Settings::integer_list(std::string_view n) const {
  return std::get<std::vector<long long>>(at(n, Type::integer_list));
}
const std::vector<double>& Settings::real_list(std::string_view n) const {
  return std::get<std::vector<double>>(at(n, Type::real_list));
}

std::string Schema::help() const {
  std::ostringstream s;
  s << "Deck keys of " << app_ << " (TOML; set on the command line with --set key=value):\n";
  std::string section = "\x01";
  for (const auto& k : keys_) {
    if (section_of(k.path) != section) {
      section = section_of(k.path);
      s << "\n[" << section << "]";
      if (section.find('#') != std::string::npos) s << "  (# = 1, 2, 3, ...: one table each)";
      s << "\n";
    }
    s << "  " << k.path << " (" << kpmap::word_of(k.type);
    if (k.fallback) {
      s << ", default " << format_value(*k.fallback);
    } else {
      s << (group_of(k.path).empty() ? ", required" : ", required in each table");
    }
    if (auto r = format_range(k); !r.empty()) s << ", " << r;
    if (!k.unit.empty()) s << ", unit " << k.unit;
    s << ")\n      " << k.description << "\n";
    if (auto c = condition_text(k); !c.empty()) s << "      (" << c << ")\n";
  }
  if (!renames_.empty()) {
    s << "\nOld names, still read (with a warning) until the release named:\n";
    for (const auto& r : renames_) {
      s << "  " << r.old_path << " -> " << r.new_path << " (until kpmap " << r.until << ")\n";
    }
  }
  return s.str();
}

std::string Schema::markdown() const {
  std::ostringstream s;
  std::string section = "\x01";
  for (const auto& k : keys_) {
    if (section_of(k.path) != section) {
      section = section_of(k.path);
      s << "\n### `[" << section << "]`\n\n";
      if (section.find('#') != std::string::npos) {
        s << "Numbered tables: `#` stands for 1, 2, 3, ... (one table each).\n\n";
      }
      s << "| key | type | default | allowed | unit | description |\n"
        << "|---|---|---|---|---|---|\n";
    }
    auto cell = [](std::string t) {
      std::string out;
      for (char c : t) out += c == '|' ? std::string("\\|") : std::string(1, c);
      return out;
    };
    s << "| `" << k.path << "` | " << kpmap::word_of(k.type) << " | "
      << (k.fallback ? "`" + cell(format_value(*k.fallback)) + "`" : "**required**") << " | "
      << cell(format_range(k)) << " | " << k.unit << " | " << cell(k.description);
    if (auto c = condition_text(k); !c.empty()) s << " *(" << cell(c) << ")*";
    s << " |\n";
  }
  if (!renames_.empty()) {
    s << "\n### Old names\n\nA deck may still give these keys by their old names, until the "
         "release named; the run then warns with the new name.\n\n"
      << "| old name | key | read until |\n|---|---|---|\n";
    for (const auto& r : renames_) {
      s << "| `" << r.old_path << "` | `" << r.new_path << "` | kpmap " << r.until << " |\n";
    }
  }
  return s.str();
}

}  // namespace kpmap::deck
