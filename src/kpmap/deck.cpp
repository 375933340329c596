#include <kpmap/deck.hpp>
#include <kpmap/files.hpp>

#include <kpmap/transport/mpi_ops.hpp>

#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

namespace kpmap::deck {

namespace {

const char* type_word(Type t) {
  switch (t) {
    case Type::boolean:
      return "boolean";
    case Type::integer:
      return "integer";
    case Type::real:
      return "real";
    case Type::string:
      return "string";
    case Type::integer_list:
      return "list of integers";
    case Type::real_list:
      return "list of reals";
  }
  return "?";
}

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

std::string format_real(double d) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d);
  std::string s(buf, end);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // stays a TOML float
  return s;
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

std::string format_value(const Value& v) {
  struct {
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(long long i) const { return std::to_string(i); }
    std::string operator()(double d) const { return format_real(d); }
    std::string operator()(const std::string& s) const { return quote(s); }
    std::string operator()(const std::vector<long long>& l) const {
      std::string s = "[";
      for (std::size_t i = 0; i < l.size(); ++i) s += (i ? ", " : "") + std::to_string(l[i]);
      return s + "]";
    }
    std::string operator()(const std::vector<double>& l) const {
      std::string s = "[";
      for (std::size_t i = 0; i < l.size(); ++i) s += (i ? ", " : "") + format_real(l[i]);
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
    return integral ? std::to_string(static_cast<long long>(d)) : format_real(d);
  };
  if (k.range.min && k.range.max) return "[" + num(*k.range.min) + ", " + num(*k.range.max) + "]";
  if (k.range.min) return ">= " + num(*k.range.min);
  return "<= " + num(*k.range.max);
}

// What a TOML node holds, for "found ..." in messages.
std::string describe(const toml::node& n) {
  std::ostringstream s;
  if (auto v = n.as_string()) return "a string (" + quote(v->get()) + ")";
  if (auto v = n.as_integer()) return "an integer (" + std::to_string(v->get()) + ")";
  if (auto v = n.as_floating_point()) return "a number (" + format_real(v->get()) + ")";
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

}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_word(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::string::npos;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best_d <= std::max<std::size_t>(2, word.size() / 3) ? best : "";
}

// ---- Schema ------------------------------------------------------------------

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

std::string Schema::closest(std::string_view path) const {
  std::string best;
  std::size_t best_d = std::string::npos;
  const std::string_view leaf =
      path.substr(path.rfind('.') == std::string_view::npos ? 0 : path.rfind('.') + 1);
  const auto given = segments(path);
  for (const auto& k : keys_) {
    // A numbered key is compared with the index the user wrote in its place.
    std::string candidate = k.path;
    const auto segs = segments(k.path);
    if (segs.size() == given.size() && k.path.find('#') != std::string::npos) {
      candidate.clear();
      for (std::size_t i = 0; i < segs.size(); ++i) {
        candidate += std::string(i ? "." : "") +
                     std::string(segs[i] == "#" && is_index(given[i]) ? given[i] : segs[i]);
      }
    }
    std::size_t d = edit_distance(path, candidate);
    // A right key name in the wrong section is close too.
    const std::string_view kleaf = std::string_view(k.path).substr(
        k.path.rfind('.') == std::string::npos ? 0 : k.path.rfind('.') + 1);
    if (kleaf == leaf) d = std::min<std::size_t>(d, 2);
    if (d < best_d) {
      best_d = d;
      best = candidate;
    }
  }
  return best_d <= std::max<std::size_t>(2, path.size() / 3) ? best : "";
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

// ---- parsing -------------------------------------------------------------------

class Parser {
 public:
  Parser(const Schema& schema, std::string source, const Translation* translation)
      : schema_(schema), source_(std::move(source)), translation_(translation) {}

  Deck run(std::string_view text, const std::vector<std::string>& overrides) {
    deck_.app_ = schema_.app();
    deck_.source_ = source_;
    screen(text);
    toml::table root;
    try {
      root = toml::parse(text, source_);
    } catch (const toml::parse_error& e) {
      const auto& b = e.source().begin;
      std::string what(e.description());
      if (what.find("cannot redefine") != std::string::npos) {
        throw InputError(at(b.line, b.column) + "duplicate key or table: " + what +
                         " (each key may appear once)");
      }
      throw InputError(at(b.line, b.column) + "syntax error: " + what);
    }
    if (root.empty()) {
      throw InputError(source_ + ": the deck is empty (it sets no keys); see --help-deck for " +
                       "the keys of " + schema_.app());
    }
    if (translation_ != nullptr) {
      for (const auto& [path, o] : translation_->origins) {
        if (o.line > 0) deck_.lines_[path] = o.line;
        deck_.origins_[path] = o;
      }
    }
    walk(root, "");
    for (const auto& o : overrides) apply_override(o);
    // Every key, in schema order; a numbered table's keys once per instance
    // (in increasing index), where its first key is declared.
    std::vector<std::pair<std::string, const Key*>> all;
    std::vector<std::string> groups_done;
    for (const auto& k : schema_.keys()) {
      const std::string group = group_of(k.path);
      if (group.empty()) {
        all.emplace_back(k.path, &k);
        continue;
      }
      if (std::find(groups_done.begin(), groups_done.end(), group) != groups_done.end()) continue;
      groups_done.push_back(group);
      const std::string stem = group.substr(0, group.size() - 1);  // "states."
      for (int index : instances(stem.substr(0, stem.size() - 1))) {
        for (const auto& k2 : schema_.keys()) {
          if (group_of(k2.path) != group) continue;
          all.emplace_back(stem + std::to_string(index) + k2.path.substr(group.size()), &k2);
        }
      }
    }
    std::string missing;
    for (const auto& [path, k] : all) {
      if (deck_.values_.count(path)) continue;
      if (k->fallback) {
        deck_.values_[path] = *k->fallback;
      } else {
        missing += (missing.empty() ? "" : ", ") + path + " (" + type_word(k->type) + ": " +
                   k->description + ")";
      }
    }
    if (!missing.empty()) {
      throw InputError(source_ + ": missing required key" +
                       (missing.find(", ") != std::string::npos ? "s " : " ") + missing);
    }
    for (const auto& [path, k] : all) {
      deck_.order_.push_back(path);
      deck_.types_[path] = k->type;
    }
    return std::move(deck_);
  }

 private:
  // A light scan before toml++ 3.3 sees the text. TOML allows no control
  // characters but tab and line ends, and only ASCII outside strings and
  // comments; toml++ 3.3 *assumes* some of this (a table header that does not
  // start with a key, some non-ASCII whitespace: undefined behaviour in its
  // release build, found by fuzzing), so such decks are refused here with a
  // message instead.
  void screen(std::string_view text) const {
    enum class State { code, basic, literal, ml_basic, ml_literal, comment };
    State st = State::code;
    std::size_t line = 1;
    std::size_t column = 1;
    bool line_start = true;  // only whitespace so far on this line (in code)
    for (std::size_t i = 0; i < text.size(); ++i, ++column) {
      const auto c = static_cast<unsigned char>(text[i]);
      if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
        char code[8];
        std::snprintf(code, sizeof(code), "U+%04X", c);
        throw InputError(at(line, column) + "syntax error: control character " + code +
                         " is not allowed in a deck");
      }
      auto starts = [&](const char* s3) { return text.compare(i, 3, s3) == 0; };
      if (c == '\n') {
        ++line;
        column = 0;
        if (st == State::comment || st == State::basic || st == State::literal) st = State::code;
        line_start = st == State::code;
        continue;
      }
      if (c >= 0x80 && st != State::comment) {
        // toml++ 3.3 misclassifies many non-ASCII characters wherever it
        // looks for whitespace (undefined behaviour, found by fuzzing), and
        // where that is cannot be known without its parser state: decks are
        // ASCII, with \uXXXX escapes for other characters in strings.
        throw InputError(at(line, column) + "syntax error: non-ASCII character; decks are " +
                         "ASCII outside comments (write \\uXXXX in a string for other "
                         "characters)");
      }
      switch (st) {
        case State::code:
          if (line_start && c == '[') {
            std::size_t k = i + 1;
            if (k < text.size() && text[k] == '[') ++k;
            while (k < text.size() && (text[k] == ' ' || text[k] == '\t')) ++k;
            const char h = k < text.size() ? text[k] : '\0';
            if (!(std::isalnum(static_cast<unsigned char>(h)) || h == '_' || h == '-' || h == '"' ||
                  h == '\'' || h == ']')) {
              throw InputError(
                  at(line, column + (k - i)) + "syntax error: a table header " +
                  "must start with a key (letters, digits, '_', '-' or a quoted name)");
            }
          }
          if (c != ' ' && c != '\t') line_start = false;
          if (c == '#') {
            st = State::comment;
          } else if (starts("\"\"\"")) {
            st = State::ml_basic;
            i += 2;
            column += 2;
          } else if (starts("'''")) {
            st = State::ml_literal;
            i += 2;
            column += 2;
          } else if (c == '"') {
            st = State::basic;
          } else if (c == '\'') {
            st = State::literal;
          }
          break;
        case State::basic:
          if (c == '\\') {
            check_escape(text, i, line, column, false);
            ++i;  // the escaped character
            ++column;
          } else if (c == '"') {
            st = State::code;
          }
          break;
        case State::literal:
          if (c == '\'') st = State::code;
          break;
        case State::ml_basic:
          if (c == '\\') {
            check_escape(text, i, line, column, true);
            ++i;
            ++column;
          } else if (starts("\"\"\"")) {
            st = State::code;
            i += 2;
            column += 2;
          }
          break;
        case State::ml_literal:
          if (starts("'''")) {
            st = State::code;
            i += 2;
            column += 2;
          }
          break;
        case State::comment:
          break;
      }
    }
  }

  // TOML escapes: \b \t \n \f \r \" \\ \uXXXX \UXXXXXXXX, and in multi-line
  // strings a backslash before whitespace or a line end.
  void check_escape(std::string_view text, std::size_t i, std::size_t line, std::size_t column,
                    bool multiline) const {
    const char e = i + 1 < text.size() ? text[i + 1] : '\0';
    const bool ok = std::string_view("btnfr\"\\uU").find(e) != std::string_view::npos ||
                    (multiline && (e == ' ' || e == '\t' || e == '\n' || e == '\r'));
    if (!ok || e == '\0') {
      throw InputError(at(line, column) + "syntax error: invalid escape sequence in a string");
    }
  }

  std::string at(std::size_t line, std::size_t column) const {
    return source_ + ":" + std::to_string(line) + ":" + std::to_string(column) + ": ";
  }

  // The indices of the instances of numbered tables `group` set so far.
  std::vector<int> instances(const std::string& group) const { return deck_.indices(group); }

  // Whether `path` names a table that holds keys of the schema.
  bool known_section(const std::string& path) const {
    for (const auto& k : schema_.keys()) {
      if (matches(k.path, path, true)) return true;
    }
    return false;
  }
  std::string at(const toml::node& n) const {
    return at(n.source().begin.line, n.source().begin.column);
  }

  void unknown(const std::string& path, const std::string& where) const {
    std::string msg = where + "unknown key '" + path + "'";
    if (known_section(path)) {
      throw InputError(where + "'" + path + "' is a section: write [" + path +
                       "] and its keys below it (see --help-deck)");
    }
    if (auto c = schema_.closest(path); !c.empty()) msg += "; did you mean '" + c + "'?";
    throw InputError(msg + " (" + schema_.app() + " knows the keys listed by --help-deck)");
  }

  // Where the user's text set `path`: its TOML line (a translated deck's
  // lines are its origins, noted in run()).
  void note_line(const std::string& path, const toml::node& node) {
    if (translation_ == nullptr) deck_.lines_[path] = static_cast<int>(node.source().begin.line);
  }

  void walk(const toml::table& table, const std::string& prefix) {
    for (const auto& [key, node] : table) {
      const std::string path =
          prefix.empty() ? std::string(key.str()) : prefix + "." + std::string(key.str());
      // TOML reads "train.epochs" (quoted) as one key whose name holds a
      // dot, not as epochs in [train]: no schema key is named so.
      if (key.str().find('.') != std::string_view::npos) {
        throw InputError(at(node) + "key \"" + std::string(key.str()) +
                         "\": a quoted key is one key, and no key's name holds a dot; for '" +
                         path + "' write it without quotes");
      }
      note_line(path, node);
      if (const Key* k = schema_.find(path)) {
        // A translated deck's messages cite the user's key and line, not the TOML's.
        const std::string where = translation_ ? deck_.where(path) : at(node);
        deck_.values_[path] = convert(*k, node, where, "key " + deck_.named(path));
      } else if (const auto* sub = node.as_table()) {
        if (!known_section(path) && sub->empty()) unknown(path, at(node));
        walk(*sub, path);
      } else if (const auto* arr = node.as_array(); arr && known_section(path + ".1")) {
        // A list of tables (`layers = [{...}, {...}]` or `[[layers]]`) is the
        // numbered tables path.1, path.2, ...
        for (std::size_t i = 0; i < arr->size(); ++i) {
          const auto& e = *arr->get(i);
          const auto* item = e.as_table();
          if (item == nullptr) {
            throw InputError(at(e) + "key '" + path + "' element " + std::to_string(i + 1) +
                             ": expected a table { ... }, found " + describe(e));
          }
          const std::string name = path + "." + std::to_string(i + 1);
          note_line(name, e);
          if (item->empty()) {
            throw InputError(at(e) + "key '" + path + "' element " + std::to_string(i + 1) +
                             " is empty (see --help-deck for its keys)");
          }
          walk(*item, name);
        }
      } else {
        unknown(path, at(node));
      }
    }
  }

  double check_number(const Key& k, double d, const std::string& where,
                      const std::string& what) const {
    if (!std::isfinite(d)) {
      throw InputError(where + what + ": expected a finite number, found " + format_real(d));
    }
    if ((k.range.min && d < *k.range.min) || (k.range.max && d > *k.range.max)) {
      const bool integral = k.type == Type::integer || k.type == Type::integer_list;
      throw InputError(where + what + " is out of range: must be " + format_range(k) +
                       (k.unit.empty() ? "" : " " + k.unit) + ", found " +
                       (integral ? std::to_string(static_cast<long long>(d)) : format_real(d)));
    }
    return d;
  }

  // An integer against its range in integer arithmetic: through a double,
  // 2^63 - 1 would pass a maximum of 9.2e18 and print as another number.
  long long to_integer(const Key& k, const toml::node& n, const std::string& where,
                       const std::string& what) const {
    if (auto v = n.as_integer()) {
      const long long x = v->get();
      // Schema bounds are whole numbers within the 64-bit range, or beyond it.
      auto bound = [](double b) {
        if (b >= 9.2233720368547758e18) return std::numeric_limits<long long>::max();
        if (b <= -9.2233720368547758e18) return std::numeric_limits<long long>::min();
        return static_cast<long long>(b);
      };
      if ((k.range.min && x < bound(std::ceil(*k.range.min))) ||
          (k.range.max && x > bound(std::floor(*k.range.max)))) {
        throw InputError(where + what + " is out of range: must be " + format_range(k) +
                         (k.unit.empty() ? "" : " " + k.unit) + ", found " + std::to_string(x));
      }
      return x;
    }
    throw InputError(where + what + ": expected an integer, found " + describe(n));
  }

  double to_real(const Key& k, const toml::node& n, const std::string& where,
                 const std::string& what) const {
    if (auto v = n.as_floating_point()) return check_number(k, v->get(), where, what);
    if (auto v = n.as_integer()) return check_number(k, static_cast<double>(v->get()), where, what);
    throw InputError(where + what + ": expected a number, found " + describe(n));
  }

  Value convert(const Key& k, const toml::node& n, const std::string& where,
                const std::string& what) const {
    switch (k.type) {
      case Type::boolean:
        if (auto v = n.as_boolean()) return v->get();
        break;
      case Type::integer:
        return to_integer(k, n, where, what);
      case Type::real:
        return to_real(k, n, where, what);
      case Type::string:
        if (auto v = n.as_string()) {
          const std::string s = v->get();
          if (!k.choices.empty() &&
              std::find(k.choices.begin(), k.choices.end(), s) == k.choices.end()) {
            throw InputError(where + what + ": must be " + format_range(k) + ", found " + quote(s));
          }
          return s;
        }
        break;
      case Type::integer_list:
      case Type::real_list:
        if (auto arr = n.as_array()) {
          std::vector<long long> ints;
          std::vector<double> reals;
          for (std::size_t i = 0; i < arr->size(); ++i) {
            const auto& e = *arr->get(i);
            const std::string ewhat = what + " element " + std::to_string(i);
            if (k.type == Type::integer_list) {
              ints.push_back(to_integer(k, e, where, ewhat));
            } else {
              reals.push_back(to_real(k, e, where, ewhat));
            }
          }
          if (k.type == Type::integer_list) return ints;
          return reals;
        }
        break;
    }
    throw InputError(where + what + ": expected " + expected_phrase(k.type) + ", found " +
                     describe(n));
  }

  void apply_override(const std::string& text) {
    const std::string where = "--set " + text + ": ";
    // One key and one value: a newline (or any control character) would
    // smuggle a second line into the deck, or into a string value.
    const auto control = std::find_if(text.begin(), text.end(),
                                      [](unsigned char c) { return c < 0x20 || c == 0x7f; });
    if (control != text.end()) {
      char code[8];
      std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned char>(*control));
      throw InputError(where + "a control character (" + code +
                       ") in the argument; a --set is one section.key=value on one line");
    }
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw InputError(where + "expected section.key=value");
    }
    const std::string path = text.substr(0, eq);
    const std::string value = text.substr(eq + 1);
    const Key* k = schema_.find(path);
    if (k == nullptr) unknown(path, where);
    toml::table parsed;
    // toml++ 3.3 meets undefined behaviour on non-ASCII characters where it
    // looks for whitespace (see screen()): such a value never reaches its
    // parser. A string key takes it as it is; any other key refuses it below.
    bool ok = std::all_of(value.begin(), value.end(),
                          [](unsigned char c) { return (c >= 0x20 && c < 0x7f) || c == '\t'; });
    if (ok) {
      try {
        parsed = toml::parse("v = " + value);
      } catch (const toml::parse_error&) {
        ok = false;
      }
    }
    // Later messages about the key cite this argument, not the deck.
    deck_.lines_.erase(path);
    deck_.origins_[path] = Origin{0, path, text};
    if (ok && parsed.contains("v")) {
      deck_.values_[path] = convert(*k, *parsed.get("v"), where, "key '" + path + "'");
    } else if (k->type == Type::string) {
      toml::value<std::string> raw(value);
      deck_.values_[path] = convert(*k, raw, where, "key '" + path + "'");
    } else {
      throw InputError(where + "key '" + path + "': expected " + expected_phrase(k->type) +
                       ", found '" + value + "'");
    }
  }

  const Schema& schema_;
  std::string source_;
  const Translation* translation_;
  Deck deck_;
};

Deck parse(const Schema& schema, std::string_view text, const std::string& source,
           const std::vector<std::string>& overrides, const Translation* translation) {
  // A Translator that passed a TOML deck through gives no origins: its lines are the user's.
  const bool translated = translation != nullptr && !translation->origins.empty();
  return Parser(schema, source, translated ? translation : nullptr).run(text, overrides);
}

namespace {
// The deck file's text; a deck that is no regular file (a FIFO would block,
// /dev/zero never end) is refused before it is read.
std::string read_deck_text(const std::string& path) {
  if (const std::string why = files::not_a_regular_file(path); !why.empty()) {
    throw InputError(path + ": the deck file " + why);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw InputError(path + ": cannot open the deck file (can you read it?)");
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}
}  // namespace

Deck parse_file(const Schema& schema, const std::string& path,
                const std::vector<std::string>& overrides) {
  return parse(schema, read_deck_text(path), path, overrides);
}

Deck load(const Schema& schema, const std::string& path, const std::vector<std::string>& overrides,
          MPI_Comm comm, const Translator& translate) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // Rank 0 parses; everyone receives either the resolved deck or the error.
  std::string payload;
  // Where the user's text set each key, a line per key: path, line, name
  // and --set argument, tab-separated (a deck holds no control characters).
  std::string lines;
  int failed = 0;
  auto resolve = [&](const Deck& d) {
    for (const auto& [key, line] : d.lines_) {
      if (d.origins_.count(key) == 0) lines += key + "\t" + std::to_string(line) + "\t\t\n";
    }
    for (const auto& [key, o] : d.origins_) {
      lines += key + "\t" + std::to_string(o.line) + "\t" + o.name + "\t" + o.set + "\n";
    }
    return d.to_toml();
  };
  if (rank == 0) {
    try {
      if (translate) {
        std::vector<std::string> rewritten = overrides;
        const Translation t = translate(read_deck_text(path), path, rewritten);
        payload = resolve(parse(schema, t.toml, path, rewritten, &t));
      } else {
        payload = resolve(parse_file(schema, path, overrides));
      }
    } catch (const InputError& e) {
      payload = e.what();
      failed = 1;
    }
  }
  MPI_Bcast(&failed, 1, MPI_INT, 0, comm);
  transport::bcast_string(payload, 0, comm);
  if (failed != 0) throw InputError(payload, ErrorScope::all_ranks);
  transport::bcast_string(lines, 0, comm);
  // Every rank (rank 0 too) builds the deck from the same resolved text, and
  // keeps the lines (and names) of the user's text for messages.
  Deck deck = parse(schema, payload, path);
  deck.lines_.clear();
  std::istringstream in(lines);
  for (std::string row; std::getline(in, row);) {
    std::array<std::string, 4> f;
    std::istringstream cells(row);
    for (auto& cell : f) std::getline(cells, cell, '\t');
    Origin o{std::stoi(f[1]), f[2], f[3]};
    if (o.line > 0) deck.lines_[f[0]] = o.line;
    if (!o.name.empty()) deck.origins_[f[0]] = std::move(o);
  }
  return deck;
}

// ---- Deck ----------------------------------------------------------------------

bool Deck::has(std::string_view path) const { return values_.find(path) != values_.end(); }

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
  s << "# " << app_ << " deck, resolved (defaults filled in) from " << source_ << "\n";
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
