// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief The [output] keys every run's deck shares, declared and read one way
/// for every application, and the names of the files every run leaves in its
/// output folder.
///
///   deck::Schema s("kpmap-heat");
///   kpmap::declare_output_keys(s, "kpmap-heat", "steps");  // output.dir, ...
///   ...
///   const kpmap::OutputConfig out = kpmap::read_output_keys(deck);
///
/// A folder holds result.json (the run's figures, written at the end),
/// history.csv (a row per step or epoch, written as the run goes; kpmap-train's
/// steps.csv has a row per logged step), deck.toml
/// (the resolved deck: running it again reproduces the run) and the
/// checkpoints, checkpoint_NNNNNN.h5.

#include <kpmap/deck/deck.hpp>

#include <string>
#include <vector>

namespace kpmap {

/// \brief The names of the files every run writes in its output folder.
namespace run_file {
inline constexpr const char* result = "result.json";
inline constexpr const char* history = "history.csv";
inline constexpr const char* steps = "steps.csv";  ///< kpmap-train's step log (train.log_every)
inline constexpr const char* deck = "deck.toml";
}  // namespace run_file

/// \brief Where a run writes and how many checkpoints it keeps: the deck's
/// output.dir, output.checkpoint_every, output.keep_last and
/// output.progress_every.
struct OutputConfig {
  std::string dir;                 ///< the output folder (created if missing)
  long long checkpoint_every = 0;  ///< steps (or epochs) between checkpoints; 0: at the end only
  int keep_last = 3;               ///< the newest checkpoints kept; older ones are deleted
  long long progress_every = -1;   ///< a progress line every N steps (or epochs); 0: none;
                                   ///< -1: about 15 in a run (progress_cadence)
};

/// \brief "kpmap-heat-out" for "kpmap-heat": the folder a run writes to
/// when its deck names none.
std::string default_output_dir(const std::string& app);

/// \brief Declares output.dir (default default_output_dir(app)),
/// output.checkpoint_every and output.progress_every (in `unit`, "steps" or
/// "epochs") and output.keep_last in `s`, with the old names the applications once used
/// (output.keep), read with a warning until kpmap 0.3.
void declare_output_keys(deck::Schema& s, const std::string& app, const std::string& unit);

/// \brief The values of the keys declare_output_keys declared.
/// \throws InputError naming output.dir's line where output_path_problem()
/// finds one.
OutputConfig read_output_keys(const deck::Deck& d);

/// \brief What makes `dir` unfit as a run's output folder before anything is
/// created, or "": a control character (a newline would make a folder no
/// listing shows as written), a name longer than the 255 bytes a file system
/// takes, or a path that with the run's own file names would pass the 4096
/// bytes a path may have.
std::string output_path_problem(const std::string& dir);

/// \brief The files a run writes in its folder, for check_outputs: result.json,
/// history.csv, deck.toml, every checkpoint, and `pictures` (the plots
/// kpmap-plot draws there, which a run must not find in its way either).
std::vector<std::string> run_files(const std::vector<std::string>& pictures);

}  // namespace kpmap
