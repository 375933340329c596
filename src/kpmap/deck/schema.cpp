// The schema: the keys a program knows, their types, defaults and ranges, and
// the tables --help-deck prints.

#include "text.hpp"

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
  Key k{path, Type::boolean, {}, {}, {}, "", description};
  if (fallback) k.fallback = *fallback;
  return add(std::move(k));
}

Schema& Schema::integer(const std::string& path, std::optional<long long> fallback, Range range,
                        const std::string& unit, const std::string& description) {
  Key k{path, Type::integer, {}, range, {}, unit, description};
  if (fallback) k.fallback = *fallback;
  return add(std::move(k));
}

Schema& Schema::real(const std::string& path, std::optional<double> fallback, Range range,
                     const std::string& unit, const std::string& description) {
  Key k{path, Type::real, {}, range, {}, unit, description};
  if (fallback) k.fallback = *fallback;
  return add(std::move(k));
}

Schema& Schema::string(const std::string& path, std::optional<std::string> fallback,
                       std::vector<std::string> choices, const std::string& description) {
  Key k{path, Type::string, {}, {}, std::move(choices), "", description};
  if (fallback) k.fallback = *fallback;
  return add(std::move(k));
}

Schema& Schema::integer_list(const std::string& path,
                             std::optional<std::vector<long long>> fallback, Range range,
                             const std::string& unit, const std::string& description) {
  Key k{path, Type::integer_list, {}, range, {}, unit, description};
  if (fallback) k.fallback = *fallback;
  return add(std::move(k));
}

Schema& Schema::real_list(const std::string& path, std::optional<std::vector<double>> fallback,
                          Range range, const std::string& unit, const std::string& description) {
  Key k{path, Type::real_list, {}, range, {}, unit, description};
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
    s << "  " << k.path << " (" << type_word(k.type);
    if (k.fallback) {
      s << ", default " << format_value(*k.fallback);
    } else {
      s << (group_of(k.path).empty() ? ", required" : ", required in each table");
    }
    if (auto r = format_range(k); !r.empty()) s << ", " << r;
    if (!k.unit.empty()) s << ", unit " << k.unit;
    s << ")\n      " << k.description << "\n";
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
    s << "| `" << k.path << "` | " << type_word(k.type) << " | "
      << (k.fallback ? "`" + cell(format_value(*k.fallback)) + "`" : "**required**") << " | "
      << cell(format_range(k)) << " | " << k.unit << " | " << cell(k.description) << " |\n";
  }
  return s.str();
}

}  // namespace kpmap::deck
