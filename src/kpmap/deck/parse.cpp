// SPDX-License-Identifier: BSD-3-Clause
// Reading a deck: the TOML text screened and parsed, every key checked against
// the schema and converted, defaults filled in, --set arguments applied.

#include "detail/text.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <string>

namespace kpmap::deck {

using namespace detail;

class Parser {
 public:
  Parser(const Schema& schema, std::string source, const Translation* translation)
      : schema_(schema), source_(std::move(source)), translation_(translation) {}

  Deck run(std::string_view text, const std::vector<std::string>& overrides) {
    deck_.app_ = schema_.app();
    deck_.source_ = source_;
    // A UTF-8 byte-order mark (editors on Windows write one) says only that
    // the text is UTF-8: skipped, as TOML allows, not an invisible error at 1:1.
    if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
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
        missing += (missing.empty() ? "" : ", ") + path + " (" + kpmap::word_of(k->type) + ": " +
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
    // A key given where it would have no effect (Schema::when, from_table).
    for (const auto& entry : all) {
      if (auto why = schema_.no_effect(deck_, entry.first); !why.empty()) throw InputError(why);
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
    // A number where the schema numbers its tables (model.layers.0,
    // states.02, layer 10000): say how they are numbered.
    const auto segs = detail::segments(path);
    for (std::size_t i = 0; i < segs.size(); ++i) {
      const bool digits =
          !segs[i].empty() && segs[i].find_first_not_of("0123456789") == std::string_view::npos;
      if (!digits || detail::is_index(segs[i])) continue;
      std::string table, numbered;
      for (std::size_t j = 0; j < segs.size(); ++j) {
        numbered += std::string(j ? "." : "") + std::string(j == i ? "1" : segs[j]);
        if (j < i) table += std::string(j ? "." : "") + std::string(segs[j]);
      }
      if (schema_.find(numbered) != nullptr) {
        throw InputError(where + "'" + table + "." + std::string(segs[i]) + "': the tables of " +
                         table + " are numbered 1 to 9999 without leading zeros (" + table +
                         ".1, " + table + ".2, ...)");
      }
    }
    if (auto c = schema_.closest(path); !c.empty()) msg += "; did you mean '" + c + "'?";
    throw InputError(msg + " (" + schema_.app() + " knows the keys listed by --help-deck)");
  }

  // `r.old_path`, given at `where`: the value goes to the new key, whose
  // messages then name what the user wrote, and a warning says the new name.
  void rename(const Schema::Rename& r, const std::string& where) {
    if (deck_.values_.count(r.new_path) != 0) given_twice(r.new_path, where);
    deck_.origins_[r.new_path] = Origin{0, r.old_path, ""};
    deck_.warnings_.push_back(where + "key '" + r.old_path + "' is now called '" + r.new_path +
                              "'; the old name is read until kpmap " + r.until);
  }

  // A key given by its name and by an old name: which one counts would be a guess.
  [[noreturn]] void given_twice(const std::string& path, const std::string& where) const {
    std::string names = "'" + path + "'";
    for (const auto& r : schema_.renames()) {
      if (r.new_path == path) names += " or its old name '" + r.old_path + "'";
    }
    const int first = deck_.line(path);
    throw InputError(where + "key '" + path + "' is given twice (as " + names +
                     (first > 0 ? "; also at line " + std::to_string(first) : std::string()) +
                     "); give it once, by its new name");
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
      if (const auto* r = schema_.renamed_from(path); r != nullptr && !node.is_table()) {
        const std::string where = at(node);
        rename(*r, where);
        note_line(r->new_path, node);
        deck_.values_[r->new_path] =
            convert(*schema_.find(r->new_path), node, where, "key " + deck_.named(r->new_path));
        continue;
      }
      note_line(path, node);
      if (const Key* k = schema_.find(path)) {
        if (deck_.values_.count(path) != 0) given_twice(path, at(node));
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
      throw InputError(where + what + ": expected a finite number, found " + toml_number(d));
    }
    const bool low = k.range.min && (k.range.above_min ? !(d > *k.range.min) : d < *k.range.min);
    if (low || (k.range.max && d > *k.range.max)) {
      const bool integral = k.type == Type::integer || k.type == Type::integer_list;
      throw InputError(where + what + " is out of range: must be " + format_range(k) +
                       (k.unit.empty() ? "" : " " + k.unit) + ", found " +
                       (integral ? std::to_string(static_cast<long long>(d)) : toml_number(d)));
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
          if (s.find('\0') != std::string::npos) {
            // C strings and paths end at a NUL: the rest would be dropped unseen.
            throw InputError(where + what + ": holds a NUL character (\\u0000) at position " +
                             std::to_string(s.find('\0')) + "; everything after it would be lost");
          }
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
    const std::string where = "--set " + printable(text) + ": ";
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
    std::string path = text.substr(0, eq);
    const std::string value = text.substr(eq + 1);
    const Key* k = schema_.find(path);
    std::string written = path;
    if (const auto* r = k == nullptr ? schema_.renamed_from(path) : nullptr) {
      // A --set replaces what the deck said, under either name.
      deck_.values_.erase(r->new_path);
      rename(*r, where);
      path = r->new_path;
      k = schema_.find(path);
    }
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
    deck_.origins_[path] = Origin{0, written, text};
    if (ok && parsed.contains("v")) {
      deck_.values_[path] = convert(*k, *parsed.get("v"), where, "key " + deck_.named(path));
    } else if (k->type == Type::string) {
      if (const std::string bad = utf8_problem(value); !bad.empty()) {
        throw InputError(where + "key " + deck_.named(path) + ": its value is not UTF-8 text (" +
                         bad + "), which a deck cannot hold");
      }
      // Quoted as TOML would quote it ("..." or '...'), the quotes are not
      // the value's: without its parser, only a value free of escapes and of
      // its own quote character is read so.
      std::string s = value;
      const char q = s.empty() ? '\0' : s.front();
      if (q == '"' || q == '\'') {
        const std::string inner = s.size() >= 2 && s.back() == q ? s.substr(1, s.size() - 2) : "";
        const bool plain = s.size() >= 2 && s.back() == q && inner.find(q) == std::string::npos &&
                           (q == '\'' || inner.find('\\') == std::string::npos);
        if (!plain) {
          throw InputError(where + "key " + deck_.named(path) +
                           ": a quoted value with characters beyond ASCII is read without TOML's "
                           "escapes; give it without backslashes or inner quotes");
        }
        s = inner;
      }
      toml::value<std::string> raw(s);
      deck_.values_[path] = convert(*k, raw, where, "key " + deck_.named(path));
    } else {
      throw InputError(where + "key " + deck_.named(path) + ": expected " +
                       expected_phrase(k->type) + ", found '" + value + "'");
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

}  // namespace kpmap::deck
