// SPDX-License-Identifier: BSD-3-Clause
// What a TeaLeaf deck means: the settings read checked across keys, written as
// the kpmap-heat deck the schema then checks; and the entry points.

#include "translator.hpp"

#include <kpmap/base/error.hpp>
#include <kpmap/sim/config.hpp>
#include <kpmap/sim/solvers/info.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iostream>
#include <sstream>

namespace kpmap::sim {

namespace tea {

// TeaLeaf reads tl_ppcg_inner_steps and tl_check_result_every whatever the
// method; kpmap-heat's solvers own theirs (sim/solvers/info.hpp), and a
// key only another method reads is refused in a kpmap-heat deck. A TeaLeaf
// deck keeps TeaLeaf's meaning: the key is dropped, with a note.
bool Translator::read_by_another_method(const std::string& key, const Setting& value) {
  if (key.rfind("solver.", 0) != 0) return false;
  const std::string own = key.substr(7);
  std::string method = method_set_;
  if (method.empty()) {
    auto it = values_.find("solver.method");
    method = it == values_.end() ? "jacobi" : unquoted(it->second.toml);
  }
  std::string readers;
  bool chosen_known = false;
  for (const SolverInfo* s : solver_registry().all()) {
    const bool reads = s->keys.find(own) != nullptr;
    if (s->name == method) {
      if (reads) return false;
      chosen_known = true;
    } else if (reads) {
      readers += (readers.empty() ? "" : ", ") + s->name;
    }
  }
  // An unknown method is the schema's to refuse; a key no solver reads is
  // one of kpmap-heat's own.
  if (!chosen_known || readers.empty()) return false;
  notes_.push_back(value.where.text + ": note: '" + value.name +
                   "' accepted without effect: only the " + readers +
                   " method reads it, and this deck uses " + method);
  return true;
}

TeaTranslation Translator::finish() {
  TeaTranslation out;
  // The mesh says how many dimensions (z_cells, zmin or zmax: 3). A state
  // that reaches into z on a 2-D mesh is refused, naming it: it made the run
  // 3-D with TeaLeaf's default z extent, which the deck never asked for.
  const bool three = values_.count("mesh.cells.2") || values_.count("mesh.lower.2") ||
                     values_.count("mesh.upper.2");
  for (const auto& [id, s] : states_) {
    if (three) break;
    const char* z = s.bound[2][0]                                      ? "zmin"
                    : s.bound[2][1]                                    ? "zmax"
                    : s.geometry == "cuboid" || s.geometry == "sphere" ? "geometry"
                                                                       : nullptr;
    if (z == nullptr) continue;
    throw InputError(s.where + ": key 'state " + std::to_string(id) + " " + z + "': " +
                     (std::string(z) == "geometry" ? "a " + s.geometry + " is 3-D"
                                                   : std::string("it bounds the state in z")) +
                     ", and the mesh is 2-D (the deck gives no z_cells, zmin or zmax); give the "
                     "mesh's z_cells, zmin and zmax for a 3-D run");
  }
  const int nd = three ? 3 : 2;
  if (states_.empty()) {
    throw InputError(path_ + ": no states; a TeaLeaf deck needs at least " +
                     "'state 1 density=... energy=...'");
  }
  std::ostringstream t;
  t << "# kpmap-heat deck translated from the TeaLeaf deck " << deck::printable(path_) << "\n";
  auto take = [&](const std::string& key, const std::string& fallback) {
    auto it = values_.find(key);
    return it == values_.end() ? fallback : it->second.toml;
  };
  // The mesh, with TeaLeaf's defaults: 10 cells on [0, 100] per dimension.
  std::string cells = "[", lower = "[", upper = "[";
  for (int d = 0; d < nd; ++d) {
    const std::string sep = d ? ", " : "";
    cells += sep + take("mesh.cells." + std::to_string(d), "10");
    lower += sep + take("mesh.lower." + std::to_string(d), "0.0");
    upper += sep + take("mesh.upper." + std::to_string(d), "100.0");
  }
  t << "mesh.cells = " << cells << "]\nmesh.upper = " << upper << "]\n";
  // A mesh list is made of up to three TeaLeaf keys (x_cells, y_cells, ...):
  // its origin names those the deck gave, at the first line of one.
  for (const char* list : {"mesh.cells", "mesh.lower", "mesh.upper", "time.dt", "solver.method"}) {
    deck::Origin o;
    for (int d = -1; d < nd; ++d) {
      const std::string key = d < 0 ? list : std::string(list) + "." + std::to_string(d);
      auto it = values_.find(key);
      if (it == values_.end()) continue;
      const Setting& v = it->second;
      if (d >= 0) out.origins[key] = deck::Origin{v.where.line, v.name, v.where.set};
      o.name += (o.name.empty() ? "" : "/") + v.name;
      if (o.line == 0 && o.set.empty()) {
        o.line = v.where.line;
        o.set = v.where.set;
      }
    }
    if (!o.name.empty()) out.origins[list] = o;
  }
  if (values_.count("mesh.lower.0") || values_.count("mesh.lower.1") ||
      values_.count("mesh.lower.2")) {
    t << "mesh.lower = " << lower << "]\n";
  }
  // TeaLeaf's defaults where they differ from kpmap-heat's.
  t << "time.dt = " << take("time.dt", "0.1") << "\n";
  t << "solver.method = " << take("solver.method", "\"jacobi\"") << "\n";
  for (const auto& [key, value] : values_) {
    if (key.rfind("mesh.cells.", 0) == 0 || key.rfind("mesh.lower.", 0) == 0 ||
        key.rfind("mesh.upper.", 0) == 0 || key == "time.dt" || key == "solver.method" ||
        read_by_another_method(key, value)) {
      continue;
    }
    t << key << " = " << value.toml << "\n";
    out.origins[key] = deck::Origin{value.where.line, value.name, value.where.set};
  }
  for (const auto& entry : states_) {
    // Not a structured binding: the lambda below uses the state, and C++17
    // does not let a lambda capture a structured binding (clang refuses).
    const int id = entry.first;
    const TeaStateLine& s = entry.second;
    const std::string p = "states." + std::to_string(id) + ".";
    const std::string sname = "state " + std::to_string(id) + " ";
    auto origin = [&](const std::string& key, std::string name) {
      out.origins[p + key] = deck::Origin{s.line_no, sname + name, ""};
    };
    const std::string mins = nd == 3 ? "xmin/ymin/zmin" : "xmin/ymin";
    const std::string maxs = nd == 3 ? "xmax/ymax/zmax" : "xmax/ymax";
    origin("density", "density");
    origin("energy", "energy");
    origin("geometry", "geometry");
    origin("lower", mins);
    origin("upper", maxs);
    origin("centre", mins);
    origin("radius", "radius");
    t << p << "density = " << deck::toml_number(*s.density) << "\n";
    t << p << "energy = " << deck::toml_number(*s.energy) << "\n";
    auto list = [&](int side) {
      std::string l = "[";
      for (int d = 0; d < nd; ++d) {
        l += std::string(d ? ", " : "") +
             deck::toml_number(s.bound[d][side] ? *s.bound[d][side] : 0.0);
      }
      return l + "]";
    };
    auto given = [&](int side) {
      for (int d = 0; d < nd; ++d) {
        if (s.bound[d][side]) return true;
      }
      return false;
    };
    if (id == 1) {
      // The background fills the domain. What the line gives it besides its
      // density and energy is written as given, for the deck's rule to
      // refuse: it would have no effect (Schema::from_table).
      if (!s.geometry.empty()) t << p << "geometry = \"" << s.geometry << "\"\n";
      if (given(0)) t << p << "lower = " << list(0) << "\n";
      if (given(1)) t << p << "upper = " << list(1) << "\n";
      if (s.radius) t << p << "radius = " << deck::toml_number(*s.radius) << "\n";
      continue;
    }
    const std::string g = s.geometry.empty() ? "rectangle" : s.geometry;
    if (s.geometry.empty()) {
      throw InputError(s.where + ": state " + std::to_string(id) +
                       " needs a geometry (rectangle, cuboid, circle, sphere or point)");
    }
    t << p << "geometry = \"" << g << "\"\n";
    if (g == "rectangle" || g == "cuboid") {
      t << p << "lower = " << list(0) << "\n" << p << "upper = " << list(1) << "\n";
      // A radius would have no effect: written for the deck's rule to refuse.
      if (s.radius) t << p << "radius = " << deck::toml_number(*s.radius) << "\n";
    } else {
      // TeaLeaf gives a circle's centre, and a point, by xmin, ymin (, zmin).
      t << p << "centre = " << list(0) << "\n";
      if (g == "circle" || g == "sphere") {
        t << p << "radius = " << deck::toml_number(s.radius ? *s.radius : 0.0) << "\n";
      } else if (s.radius) {
        t << p << "radius = " << deck::toml_number(*s.radius) << "\n";  // a point's: refused below
      }
      // xmax, ymax (, zmax) would have no effect: written for the deck's
      // rule to refuse, naming them (they were dropped without a word).
      if (given(1)) t << p << "upper = " << list(1) << "\n";
    }
  }
  out.toml = t.str();
  out.notes = notes_;
  return out;
}

}  // namespace tea

bool is_tea_deck(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // a UTF-8 byte-order mark
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string_view::npos) continue;
    line = line.substr(first);
    if (line[0] == '!' || line[0] == '#') continue;
    std::string head(line.substr(0, 4));
    for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return head == "*tea";
  }
  return false;
}

TeaTranslation translate_tea_deck(const std::string& text, const std::string& path,
                                  std::vector<std::string>& overrides) {
  return tea::Translator(path).run(text, overrides);
}

namespace {
// A line that begins with '!' (TeaLeaf's comment) or '*' (its block
// markers) is never TOML: such text is a TeaLeaf deck, whatever it lacks.
bool has_tea_lines(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    const auto first = line.find_first_not_of(" \t\r");
    if (first != std::string_view::npos && (line[first] == '!' || line[first] == '*')) return true;
  }
  return false;
}
}  // namespace

deck::Translation heat_deck_translator(const std::string& text, const std::string& path,
                                       std::vector<std::string>& overrides) {
  // A TeaLeaf deck without its '*tea' line is named as one, not given TOML's
  // error about a '!'.
  if (!is_tea_deck(text) && !has_tea_lines(text)) return {text, {}};
  auto t = translate_tea_deck(text, path, overrides);
  for (const auto& n : t.notes) std::cout << "kpmap-heat: " << n << "\n";
  std::cout << std::flush;
  return {std::move(t.toml), std::move(t.origins)};
}

std::vector<std::string> tea_keys() {
  std::vector<std::string> keys;
  for (const auto& k : tea::value_keys) keys.push_back(k.name);
  for (const auto& k : tea::flag_keys) keys.push_back(k.name);
  for (const auto& k : tea::note_keys) keys.push_back(k.name);
  keys.push_back("tl_preconditioner_type");
  keys.push_back("state");
  return keys;
}

}  // namespace kpmap::sim
