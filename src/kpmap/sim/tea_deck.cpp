#include <kpmap/sim/tea_deck.hpp>

#include <kpmap/error.hpp>
#include <kpmap/sim/config.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

namespace kpmap::sim {

namespace {

// ---- the key tables ------------------------------------------------------------

enum class Kind { integer, real };

// A TeaLeaf key that takes a value and sets one kpmap-heat key (or a mesh bound).
struct ValueKey {
  const char* name;
  const char* target;  // a schema key, or "mesh.cells.N" / "mesh.lower.N" / "mesh.upper.N"
  Kind kind;
};

const ValueKey value_keys[] = {
    {"initial_timestep", "time.dt", Kind::real},
    {"end_time", "time.end_time", Kind::real},
    {"end_step", "time.end_step", Kind::integer},
    {"xmin", "mesh.lower.0", Kind::real},
    {"ymin", "mesh.lower.1", Kind::real},
    {"zmin", "mesh.lower.2", Kind::real},
    {"xmax", "mesh.upper.0", Kind::real},
    {"ymax", "mesh.upper.1", Kind::real},
    {"zmax", "mesh.upper.2", Kind::real},
    {"x_cells", "mesh.cells.0", Kind::integer},
    {"y_cells", "mesh.cells.1", Kind::integer},
    {"z_cells", "mesh.cells.2", Kind::integer},
    {"visit_frequency", "output.fields_every", Kind::integer},
    {"summary_frequency", "output.summary_every", Kind::integer},
    {"tl_ch_cg_presteps", "solver.presteps", Kind::integer},
    {"presteps", "solver.presteps", Kind::integer},
    {"tl_ppcg_inner_steps", "solver.ppcg_inner_steps", Kind::integer},
    {"ppcg_inner_steps", "solver.ppcg_inner_steps", Kind::integer},
    {"tl_ch_cg_epslim", "solver.epslim", Kind::real},
    {"epslim", "solver.epslim", Kind::real},
    {"tl_max_iters", "solver.max_iters", Kind::integer},
    {"max_iters", "solver.max_iters", Kind::integer},
    {"tl_eps", "solver.eps", Kind::real},
    {"eps", "solver.eps", Kind::real},
    {"tl_check_result_every", "solver.check_every", Kind::integer},
    {"halo_depth", "mesh.halo_depth", Kind::integer},
    {"test_problem", "output.test_problem", Kind::integer},
};

// A TeaLeaf switch that sets one kpmap-heat key to a value.
struct FlagKey {
  const char* name;
  const char* target;
  const char* value;  // as TOML
};

const FlagKey flag_keys[] = {
    {"tl_use_jacobi", "solver.method", "\"jacobi\""},
    {"use_jacobi", "solver.method", "\"jacobi\""},
    {"tl_use_cg", "solver.method", "\"cg\""},
    {"use_cg", "solver.method", "\"cg\""},
    {"tl_use_chebyshev", "solver.method", "\"chebyshev\""},
    {"use_chebyshev", "solver.method", "\"chebyshev\""},
    {"tl_use_ppcg", "solver.method", "\"ppcg\""},
    {"use_ppcg", "solver.method", "\"ppcg\""},
    {"tl_coefficient_density", "solver.coefficient", "\"density\""},
    {"coefficient_density", "solver.coefficient", "\"density\""},
    {"tl_coefficient_inverse_density", "solver.coefficient", "\"inverse_density\""},
    {"coefficient_inverse_density", "solver.coefficient", "\"inverse_density\""},
    {"tl_check_result", "solver.check_result", "true"},
    {"check_result", "solver.check_result", "true"},
    // The C++ ports' switch for their (diagonal) Jacobi preconditioner.
    {"preconditioner_on", "solver.preconditioner", "\"jac_diag\""},
};

// Keys that only pick how TeaLeaf runs, not what it computes: accepted with
// a note. The bool says whether the key takes a value.
struct NoteKey {
  const char* name;
  bool has_value;
  const char* why;
};

const NoteKey note_keys[] = {
    {"use_fortran_kernels", false, "picks TeaLeaf's Fortran kernels; kpmap-heat has one set"},
    {"use_c_kernels", false, "picks TeaLeaf's C kernels; kpmap-heat has one set"},
    {"use_oa_kernels", false, "picks TeaLeaf's OpenACC kernels; kpmap-heat has one set"},
    {"use_vector_loops", false, "picks TeaLeaf's vector loops; kpmap-heat has one set"},
    {"profiler_on", false, "kpmap-heat always reports its phase times in summary.json"},
    {"verbose_on", false, "kpmap-heat prints residuals on its progress line"},
    {"reflective_boundary", false,
     "kpmap-heat's boundaries are always zero-flux, which is what reflective boundaries give"},
    {"tl_ch_cg_errswitch", false,
     "kpmap-heat switches from CG once both the presteps and the epslim condition hold"},
    {"errswitch", false,
     "kpmap-heat switches from CG once both the presteps and the epslim condition hold"},
    {"tiles_per_task", true, "TeaLeaf's tiling; kpmap-heat runs one block per rank"},
    {"sub_tiles_per_tile", true, "TeaLeaf's tiling; kpmap-heat runs one block per rank"},
    {"tiles_per_problem", true, "TeaLeaf's tiling; kpmap-heat runs one block per rank"},
    {"num_chunks_per_rank", true, "TeaLeaf's chunking; kpmap-heat runs one block per rank"},
};

// Keys of other or older TeaLeaf versions that kpmap-heat does not implement.
const char* unsupported_keys[] = {"tl_use_dpcg",
                                  "tl_preconditioner_on",
                                  "tl_ppcg_steps_eigmin",
                                  "tl_ppcg_coarse_eigmin",
                                  "tl_ppcg_inner_coarse",
                                  "tl_ppcg_inner_coarse_steps",
                                  "coarse_solve_eps",
                                  "coarse_solve_max_iters",
                                  "coarse_solve_ppcg",
                                  "coarse_solve_serial",
                                  "coarse_depth",
                                  "coarse_halo_depth",
                                  "hydro_on",
                                  "hydro_off",
                                  "no_hydro",
                                  "use_tea_leaf",
                                  "tea_leaf_on",
                                  "tea_leaf_off",
                                  "no_tea_leaf",
                                  "xvel",
                                  "yvel",
                                  "timestep_rise",
                                  "max_timestep",
                                  "total_tiles",
                                  "profile_solver",
                                  "tl_coefficient"};

const char* state_keys[] = {"density", "energy", "geometry", "xmin", "xmax",
                            "ymin",    "ymax",   "zmin",     "zmax", "radius"};

const char* geometries[] = {"rectangle", "cuboid", "circle", "sphere", "point"};

// ---- helpers -----------------------------------------------------------------------

std::string toml_real(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s(buf);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

// A deck line as TeaLeaf sees it: comments cut, lower case, '=' and ','
// (and control characters) as blanks, split into words.
std::vector<std::string> words_of(std::string line) {
  const auto cut = line.find_first_of("!;");
  if (cut != std::string::npos) line.resize(cut);
  for (char& c : line) {
    const auto u = static_cast<unsigned char>(c);
    c = u < 32 || c == '=' || c == ',' ? ' ' : static_cast<char>(std::tolower(u));
  }
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

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

std::optional<long long> to_integer(const std::string& w) {
  long long v = 0;
  const char* b = w.data();
  const char* e = w.data() + w.size();
  if (!w.empty() && w[0] == '+') ++b;
  const auto [p, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || p != e || b == e) return std::nullopt;
  return v;
}

std::optional<double> to_real(std::string w) {
  // Fortran writes a double-precision exponent with d: 1.0d-15.
  for (char& c : w) {
    if (c == 'd') c = 'e';
  }
  if (w.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(w.c_str(), &end);
  if (end != w.c_str() + w.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

struct TeaStateLine {
  int line_no = 0;
  std::string where;
  std::optional<double> density, energy, radius;
  std::string geometry;
  std::optional<double> bound[3][2];  // [dimension][0: min, 1: max]
};

class Translator {
 public:
  Translator(std::string path) : path_(std::move(path)) {}

  TeaTranslation run(const std::string& text, std::vector<std::string>& overrides) {
    std::istringstream in(text);
    std::string raw;
    int line_no = 0;
    bool inside = false;
    bool seen_block = false;
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
          if (inside) break;  // TeaLeaf3D's decks close the block with a second *tea
          inside = true;
          seen_block = true;
          continue;
        }
        if (w == "*endtea") {
          if (!inside) throw InputError(where.at() + "'*endtea' without '*tea'");
          break;
        }
        throw InputError(where.at() + "'" + w +
                         "': kpmap-heat reads the *tea ... *endtea block of a TeaLeaf deck only");
      }
      if (!inside) continue;  // TeaLeaf ignores lines outside the block
      read_line(words, where, line_no);
    }
    if (!seen_block) throw InputError(path_ + ": no '*tea' line: not a TeaLeaf deck");
    // TeaLeaf keys given with --set come after the deck's own lines.
    std::vector<std::string> kept;
    for (const auto& o : overrides) {
      // A TeaLeaf key has no dot: "tl_max_iters=50", or a switch: "tl_use_cg".
      const std::string key = o.substr(0, o.find('='));
      if (key.find('.') != std::string::npos) {
        kept.push_back(o);
        continue;
      }
      auto words = words_of(o);
      if (!words.empty() && words[0] == "state") {
        throw InputError("--set " + o + ": set a state's key as states.N.key=value");
      }
      read_line(words, Where{"--set " + o, 0, o}, 0);
    }
    overrides = kept;
    return finish();
  }

 private:
  void read_line(const std::vector<std::string>& words, const Where& where, int line_no) {
    std::size_t i = 0;
    while (i < words.size()) {
      const std::string& w = words[i];
      if (w == "state") {
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

  std::map<std::string, std::string> given_;  // key -> where the deck gave it

  void read_state(const std::vector<std::string>& words, const Where& where, int line_no) {
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
    for (std::size_t i = 2; i < words.size(); i += 2) {
      const std::string& k = words[i];
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

  const ValueKey* find_value(const std::string& w) const {
    for (const auto& k : value_keys) {
      if (w == k.name) return &k;
    }
    return nullptr;
  }
  const FlagKey* find_flag(const std::string& w) const {
    for (const auto& k : flag_keys) {
      if (w == k.name) return &k;
    }
    return nullptr;
  }
  const NoteKey* find_note(const std::string& w) const {
    for (const auto& k : note_keys) {
      if (w == k.name) return &k;
    }
    return nullptr;
  }

  void set_value(const ValueKey& k, const std::string& v, const Where& where) {
    const std::string target = k.target;
    std::string toml;
    double number = 0;
    if (k.kind == Kind::integer) {
      const auto x = to_integer(v);
      if (!x) {
        throw InputError(where.at() + "key '" + k.name + "': expected an integer, found '" + v +
                         "'");
      }
      number = static_cast<double>(*x);
      toml = std::to_string(*x);
    } else {
      const auto x = to_real(v);
      if (!x)
        throw InputError(where.at() + "key '" + k.name + "': expected a number, found '" + v + "'");
      number = *x;
      toml = toml_real(*x);
    }
    if (target.rfind("mesh.cells.", 0) == 0 && number < 1) {
      throw InputError(where.at() + "key '" + k.name + "' must be at least 1, found " + v);
    }
    if (target == "solver.ppcg_inner_steps" && number == -1) {
      toml = "0";  // TeaLeaf's "choose for me"
      number = 0;
    }
    if (const deck::Key* key = heat_schema().find(target)) {
      const bool low = key->range.min && number < *key->range.min;
      const bool high = key->range.max && number > *key->range.max;
      if (low || high) {
        auto num = [&](double x) {
          return k.kind == Kind::integer ? std::to_string(static_cast<long long>(x)) : toml_real(x);
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

  TeaTranslation finish() {
    TeaTranslation out;
    out.notes = notes_;
    const bool three = values_.count("mesh.cells.2") || values_.count("mesh.lower.2") ||
                       values_.count("mesh.upper.2") ||
                       std::any_of(states_.begin(), states_.end(), [](const auto& s) {
                         return s.second.bound[2][0] || s.second.bound[2][1] ||
                                s.second.geometry == "cuboid" || s.second.geometry == "sphere";
                       });
    const int nd = three ? 3 : 2;
    if (states_.empty()) {
      throw InputError(path_ + ": no states; a TeaLeaf deck needs at least " +
                       "'state 1 density=... energy=...'");
    }
    std::ostringstream t;
    t << "# kpmap-heat deck translated from the TeaLeaf deck " << path_ << "\n";
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
    for (const char* list :
         {"mesh.cells", "mesh.lower", "mesh.upper", "time.dt", "solver.method"}) {
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
          key.rfind("mesh.upper.", 0) == 0 || key == "time.dt" || key == "solver.method") {
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
      t << p << "density = " << toml_real(*s.density) << "\n";
      t << p << "energy = " << toml_real(*s.energy) << "\n";
      if (id == 1) continue;  // the background fills the domain
      const std::string g = s.geometry.empty() ? "rectangle" : s.geometry;
      if (s.geometry.empty()) {
        throw InputError(s.where + ": state " + std::to_string(id) +
                         " needs a geometry (rectangle, cuboid, circle, sphere or point)");
      }
      auto list = [&](int side) {
        std::string l = "[";
        for (int d = 0; d < nd; ++d) {
          l += std::string(d ? ", " : "") + toml_real(s.bound[d][side] ? *s.bound[d][side] : 0.0);
        }
        return l + "]";
      };
      t << p << "geometry = \"" << g << "\"\n";
      if (g == "rectangle" || g == "cuboid") {
        t << p << "lower = " << list(0) << "\n" << p << "upper = " << list(1) << "\n";
      } else {
        // TeaLeaf gives a circle's centre, and a point, by xmin, ymin (, zmin).
        t << p << "centre = " << list(0) << "\n";
        if (g == "circle" || g == "sphere") {
          t << p << "radius = " << toml_real(s.radius ? *s.radius : 0.0) << "\n";
        }
      }
    }
    out.toml = t.str();
    return out;
  }

  std::string path_;
  std::map<std::string, Setting> values_;  // kpmap-heat key -> its setting
  std::map<int, TeaStateLine> states_;
  std::vector<std::string> notes_;
};

}  // namespace

bool is_tea_deck(std::string_view text) {
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
  return Translator(path).run(text, overrides);
}

deck::Translation heat_deck_translator(const std::string& text, const std::string& path,
                                       std::vector<std::string>& overrides) {
  if (!is_tea_deck(text)) return {text, {}};
  auto t = translate_tea_deck(text, path, overrides);
  for (const auto& n : t.notes) std::cout << "kpmap-heat: " << n << "\n";
  std::cout << std::flush;
  return {std::move(t.toml), std::move(t.origins)};
}

std::vector<std::string> tea_keys() {
  std::vector<std::string> keys;
  for (const auto& k : value_keys) keys.push_back(k.name);
  for (const auto& k : flag_keys) keys.push_back(k.name);
  for (const auto& k : note_keys) keys.push_back(k.name);
  keys.push_back("tl_preconditioner_type");
  keys.push_back("state");
  return keys;
}

}  // namespace kpmap::sim
