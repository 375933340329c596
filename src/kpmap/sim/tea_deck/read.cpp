// SPDX-License-Identifier: BSD-3-Clause
// Reading a TeaLeaf deck: the *tea block line by line, each key looked up
// (with the nearest known key for a misspelt one), each value checked.

#include "translator.hpp"

#include <kpmap/base/error.hpp>
#include <kpmap/deck/deck.hpp>
#include <kpmap/sim/config.hpp>

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace kpmap::sim::tea {

namespace {

const ValueKey* find_value(const std::string& w) {
  for (const auto& k : value_keys) {
    if (w == k.name) return &k;
  }
  return nullptr;
}
const FlagKey* find_flag(const std::string& w) {
  for (const auto& k : flag_keys) {
    if (w == k.name) return &k;
  }
  return nullptr;
}
const NoteKey* find_note(const std::string& w) {
  for (const auto& k : note_keys) {
    if (w == k.name) return &k;
  }
  return nullptr;
}

}  // namespace

TeaTranslation Translator::run(const std::string& text, std::vector<std::string>& overrides) {
  // A UTF-8 byte-order mark (editors on Windows write one) is skipped, as a
  // TOML deck's is.
  std::istringstream in(text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? text.substr(3) : text);
  std::string raw;
  int line_no = 0;
  bool inside = false;
  bool seen_block = false;
  std::string opened;  // "tea.in:3", where the block began
  std::string closed;  // where it ended
  while (std::getline(in, raw)) {
    ++line_no;
    const Where where{path_ + ":" + std::to_string(line_no), line_no, ""};
    // As strict as a TOML deck: tabs and a CR before the newline are
    // blanks, any other control character is a damaged or binary file.
    const auto control = std::find_if(raw.begin(), raw.end(), [](unsigned char c) {
      return (c < 0x20 && c != '\t' && c != '\r') || c == 0x7f;
    });
    if (control != raw.end()) {
      char code[8];
      std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned char>(*control));
      throw InputError(where.at() + "a control character (" + code + ") in column " +
                       std::to_string(control - raw.begin() + 1) + "; a deck is plain text");
    }
    auto words = words_of(raw);
    if (words.empty()) continue;
    if (words[0][0] == '*') {
      const std::string& w = words[0];
      if (w == "*tea") {
        if (inside) {  // TeaLeaf3D's decks close the block with a second *tea
          inside = false;
          closed = where.text;
          continue;
        }
        if (seen_block) {
          throw InputError(where.at() + "a second '*tea' block (the first ends at " + closed +
                           "): TeaLeaf reads only the first, so its keys would be ignored; "
                           "put them in one block");
        }
        inside = true;
        seen_block = true;
        opened = where.text;
        continue;
      }
      if (w == "*endtea") {
        if (!inside) {
          throw InputError(where.at() + "'*endtea' without '*tea'" +
                           (seen_block ? " (the block ended at " + closed + ")" : ""));
        }
        inside = false;
        closed = where.text;
        continue;
      }
      throw InputError(where.at() + "'" + w +
                       "': kpmap-heat reads the *tea ... *endtea block of a TeaLeaf deck only");
    }
    if (!inside) continue;  // TeaLeaf ignores lines outside the block
    read_line(words, where, line_no);
  }
  if (!seen_block) {
    throw InputError(path_ +
                     ": no '*tea' line: a TeaLeaf deck holds its keys between '*tea' "
                     "and '*endtea'");
  }
  if (inside) {
    throw InputError(opened +
                     ": the '*tea' block that begins here has no end: close it with "
                     "'*endtea' (a cut-off deck would run on defaults)");
  }
  // TeaLeaf keys given with --set come after the deck's own lines.
  std::vector<std::string> kept;
  for (const auto& o : overrides) {
    // A TeaLeaf key has no dot: "tl_max_iters=50", or a switch: "tl_use_cg".
    const std::string key = o.substr(0, o.find('='));
    if (key.find('.') != std::string::npos) {
      // The method a --set chooses decides which solver keys have an effect.
      if (key == "solver.method") method_set_ = unquoted(o.substr(o.find('=') + 1));
      kept.push_back(o);
      continue;
    }
    auto words = words_of(o);
    if (!words.empty() && words[0] == "state") {
      throw InputError("--set " + o + ": set a state's key as states.N.key=value");
    }
    // One key per --set, as for a TOML deck's keys: "x_cells=12 y_cells=12"
    // is two settings, each of which gets its own --set.
    if (words.size() > 2) {
      throw InputError("--set " + o +
                       ": a --set gives one key (key=value, or a switch such as "
                       "tl_use_cg); give each key its own --set");
    }
    read_line(words, Where{"--set " + o, 0, o}, 0);
  }
  overrides = kept;
  return finish();
}

void Translator::read_line(const std::vector<std::string>& words, const Where& where, int line_no) {
  std::size_t i = 0;
  while (i < words.size()) {
    const std::string& w = words[i];
    if (w == "state") {
      if (i > 0) {
        // The state's words would be read from the line's start.
        throw InputError(where.at() + "'state' after '" + words[i - 1] +
                         "' on the same line: a state is a line of its own ('state N key=value "
                         "...'); put it on the next line");
      }
      read_state(words, where, line_no);
      return;
    }
    // A key the deck gives twice is a mistake (which one was meant?), as
    // in a TOML deck; --set (line 0) overrides the deck's on purpose.
    if (line_no > 0) {
      const auto [seen, first] = given_.emplace(w, where.text);
      if (!first) {
        throw InputError(where.at() + "key '" + w + "' is given twice (first at " + seen->second +
                         ")");
      }
    }
    if (const ValueKey* k = find_value(w)) {
      if (i + 1 >= words.size()) throw InputError(where.at() + "key '" + w + "' needs a value");
      set_value(*k, words[i + 1], where);
      i += 2;
      continue;
    }
    if (const FlagKey* f = find_flag(w)) {
      values_[f->target] = {f->value, where, w};
      ++i;
      continue;
    }
    if (w == "tl_preconditioner_type") {
      if (i + 1 >= words.size()) throw InputError(where.at() + "key '" + w + "' needs a value");
      const std::string& v = words[i + 1];
      if (v != "none" && v != "jac_diag" && v != "jac_block") {
        throw InputError(where.at() + "key '" + w + "': '" + v +
                         "' is not one of none, jac_diag, jac_block");
      }
      values_["solver.preconditioner"] = {"\"" + v + "\"", where, w};
      i += 2;
      continue;
    }
    if (const NoteKey* n = find_note(w)) {
      if (n->has_value) {
        if (i + 1 >= words.size() || !to_integer(words[i + 1])) {
          throw InputError(where.at() + "key '" + w + "': expected an integer" +
                           (i + 1 < words.size() ? ", found '" + words[i + 1] + "'" : ""));
        }
      }
      notes_.push_back(where.text + ": note: '" + w + "' accepted without effect: " + n->why);
      i += n->has_value ? 2 : 1;
      continue;
    }
    for (const char* u : unsupported_keys) {
      if (w == u) {
        throw InputError(where.at() + "TeaLeaf key '" + w +
                         "' (of another TeaLeaf version) is not supported by kpmap-heat");
      }
    }
    std::string msg = where.at() + "unknown TeaLeaf key '" + w + "'";
    if (auto c = deck::closest_word(w, tea_keys()); !c.empty())
      msg += "; did you mean '" + c + "'?";
    throw InputError(msg + " (kpmap-heat reads the keys of TeaLeaf_ref's input reader, " +
                     "listed in docs/heat.md)");
  }
}

void Translator::read_state(const std::vector<std::string>& words, const Where& where,
                            int line_no) {
  if (words.size() < 2) throw InputError(where.at() + "'state' needs a state number");
  const auto n = to_integer(words[1]);
  if (!n || *n < 1 || *n > 9999) {
    throw InputError(where.at() + "'state " + words[1] +
                     "': a state number is an integer from 1 to 9999");
  }
  const int id = static_cast<int>(*n);
  if (auto it = states_.find(id); it != states_.end()) {
    throw InputError(where.at() + "state " + std::to_string(id) + " is defined twice (first at " +
                     it->second.where + ")");
  }
  TeaStateLine s;
  s.line_no = line_no;
  s.where = where.text;
  const std::string sname = "state " + std::to_string(id);
  std::vector<std::string> given;  // a key given twice on the line is refused, not the last kept
  for (std::size_t i = 2; i < words.size(); i += 2) {
    const std::string& k = words[i];
    if (std::find(given.begin(), given.end(), k) != given.end()) {
      throw InputError(where.at() + sname + ": key '" + k +
                       "' is given twice on the line; give each key once");
    }
    given.push_back(k);
    const bool known = std::find_if(std::begin(state_keys), std::end(state_keys),
                                    [&](auto* x) { return k == x; }) != std::end(state_keys);
    if (!known) {
      std::string msg = where.at() + sname + ": unknown key '" + k + "'";
      if (auto c = deck::closest_word(
              k, std::vector<std::string>(std::begin(state_keys), std::end(state_keys)));
          !c.empty()) {
        msg += "; did you mean '" + c + "'?";
      }
      throw InputError(msg + " (a state takes density, energy, geometry, xmin, xmax, ymin, " +
                       "ymax, zmin, zmax, radius)");
    }
    if (i + 1 >= words.size()) {
      throw InputError(where.at() + sname + ": key '" + k + "' needs a value");
    }
    const std::string& v = words[i + 1];
    if (k == "geometry") {
      const bool ok = std::find_if(std::begin(geometries), std::end(geometries),
                                   [&](auto* g) { return v == g; }) != std::end(geometries);
      if (!ok) {
        throw InputError(where.at() + sname + ": geometry '" + v +
                         "' is not one of rectangle, cuboid, circle, sphere, point");
      }
      s.geometry = v;
      continue;
    }
    const auto x = to_real(v);
    if (!x)
      throw InputError(where.at() + sname + ": key '" + k + "': expected a number, found '" + v +
                       "'");
    if (k == "density") {
      s.density = *x;
    } else if (k == "energy") {
      s.energy = *x;
    } else if (k == "radius") {
      s.radius = *x;
    } else {
      const int d = k[0] - 'x';
      s.bound[d][k.substr(1) == "max" ? 1 : 0] = *x;
    }
  }
  if (!s.density || !s.energy) {
    throw InputError(where.at() + sname + " needs a density and an energy");
  }
  states_[id] = s;
}

void Translator::set_value(const ValueKey& k, const std::string& v, const Where& where) {
  const std::string target = k.target;
  std::string toml;
  double number = 0;
  if (k.kind == Kind::integer) {
    const auto x = to_integer(v);
    if (!x) {
      throw InputError(where.at() + "key '" + k.name + "': expected an integer, found '" + v + "'");
    }
    number = static_cast<double>(*x);
    toml = std::to_string(*x);
  } else {
    const auto x = to_real(v);
    if (!x)
      throw InputError(where.at() + "key '" + k.name + "': expected a number, found '" + v + "'");
    number = *x;
    toml = deck::toml_number(*x);
  }
  if (target.rfind("mesh.cells.", 0) == 0 && number < 1) {
    throw InputError(where.at() + "key '" + k.name + "' must be at least 1, found " + v);
  }
  if (target == "solver.ppcg_inner_steps" && number == -1) {
    toml = "0";  // TeaLeaf's "choose for me"
    number = 0;
  }
  const deck::Schema schema = heat_schema();
  if (const deck::Key* key = schema.find(target)) {
    const bool low = key->range.min && number < *key->range.min;
    const bool high = key->range.max && number > *key->range.max;
    if (low || high) {
      auto num = [&](double x) {
        return k.kind == Kind::integer ? std::to_string(static_cast<long long>(x))
                                       : deck::toml_number(x);
      };
      std::ostringstream r;
      if (key->range.min) r << ">= " << num(*key->range.min);
      if (key->range.min && key->range.max) r << " and ";
      if (key->range.max) r << "<= " << num(*key->range.max);
      throw InputError(where.at() + "key '" + k.name + "' (" + target +
                       ") is out of range: must be " + r.str() + ", found " + v);
    }
  }
  values_[target] = {toml, where, k.name};
}

}  // namespace kpmap::sim::tea
