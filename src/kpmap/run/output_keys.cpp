// SPDX-License-Identifier: BSD-3-Clause
// The [output] section every application's deck shares.

#include <kpmap/run/output_keys.hpp>

#include <cstdio>
#include <filesystem>
#include <string_view>

namespace kpmap {

std::string default_output_dir(const std::string& app) { return app + "-out"; }

void declare_output_keys(deck::Schema& s, const std::string& app, const std::string& unit) {
  const std::optional<double> none;
  s.string("output.dir", default_output_dir(app), {},
           "the run's folder: result.json, history.csv, deck.toml, checkpoints")
      .integer("output.checkpoint_every", 0, {0, none}, unit,
               "a checkpoint every this many " + unit + ", and at the end (0: at the end only)")
      .integer("output.keep_last", 3, {1, 1000}, "",
               "the newest checkpoints kept (older ones are deleted)")
      .integer("output.progress_every", -1, {-1, none}, unit,
               "a progress line with elapsed time and ETA on rank 0 every this many " + unit +
                   ", and at the end (0: none; -1: about 15 lines whatever the run's length)")
      .renamed("output.keep", "output.keep_last", "0.3");
}

OutputConfig read_output_keys(const deck::Deck& d) {
  OutputConfig c;
  c.dir = d.string("output.dir");
  if (const std::string problem = output_path_problem(c.dir); !problem.empty()) {
    throw d.bad("output.dir", problem);
  }
  c.checkpoint_every = d.integer("output.checkpoint_every");
  c.keep_last = static_cast<int>(d.integer("output.keep_last"));
  c.progress_every = d.integer("output.progress_every");
  return c;
}

std::string output_path_problem(const std::string& dir) {
  for (std::size_t i = 0; i < dir.size(); ++i) {
    const auto c = static_cast<unsigned char>(dir[i]);
    if (c < 0x20 || c == 0x7f) {
      char code[8];
      std::snprintf(code, sizeof code, "U+%04X", c);
      return std::string("a control character (") + code + ") in the path at position " +
             std::to_string(i) + "; give a folder name without one";
    }
  }
  // Linux's NAME_MAX and PATH_MAX, which every file system kpmap runs on has.
  constexpr std::size_t name_max = 255, path_max = 4096;
  std::string_view rest = dir;
  while (!rest.empty()) {
    const std::size_t slash = rest.find('/');
    const std::string_view name = rest.substr(0, slash);
    if (name.size() > name_max) {
      return "the name '" + std::string(name.substr(0, 24)) + "...' in it is " +
             std::to_string(name.size()) +
             " bytes long, and a file system takes names of at most " + std::to_string(name_max);
    }
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  // The longest name a run writes in its folder: fields/fields_NNNNNN.h5.tmp
  // with room for a step count of 12 digits.
  constexpr std::size_t longest_file = 40;
  std::error_code ec;
  const std::string absolute = std::filesystem::absolute(dir, ec).lexically_normal().string();
  if (absolute.size() + longest_file >= path_max) {
    return "its path is " + std::to_string(absolute.size()) +
           " bytes long from the root, and with the names of the files a run writes in it (up to " +
           std::to_string(longest_file) + " more) it would pass the " + std::to_string(path_max) +
           " a path may have; choose a shorter one";
  }
  return "";
}

std::vector<std::string> run_files(const std::vector<std::string>& pictures) {
  std::vector<std::string> names{run_file::result, run_file::history, run_file::steps,
                                 run_file::deck, "checkpoint_*"};
  names.insert(names.end(), pictures.begin(), pictures.end());
  return names;
}

}  // namespace kpmap
