// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief What a run leaves in its output folder, written one way for every
/// loop (sim::TimeLoop, train::Trainer) and application: the folder itself,
/// checkpoint names, per-step CSV tables, the result file and the plots; and
/// the progress line's clock.
///
///   const auto out = kpmap::prepare_output_dir("run1", comm);     // collective
///   kpmap::CsvTable table(out / kpmap::run_file::history, "step,u", restarted, root);
///   table.row(std::to_string(step) + ',' + kpmap::csv_number(u));
///   nlohmann::ordered_json result;
///   result["u"] = u;
///   return kpmap::write_result(result, out, stopped_by, checkpoint,
///                              times.reduce(wall, comm), root);

#include <kpmap/run/phases.hpp>

#include <nlohmann/json_fwd.hpp>

#include <mpi.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace kpmap {

/// \brief Collective: creates `dir` if needed and checks that files can be
/// created in it, before any work starts. \throws InputError (all ranks)
/// naming the folder and the reason.
std::filesystem::path prepare_output_dir(const std::string& dir, MPI_Comm comm);

/// \brief Collective: prepare_output_dir() for the folder `name` inside the
/// run's folder `run_dir` (kpmap-heat's fields/), which must be a folder of
/// its own: a symbolic link there would send the run's files elsewhere.
/// \throws InputError (all ranks) naming the folder and the reason.
std::filesystem::path prepare_run_subfolder(const std::filesystem::path& run_dir,
                                            const std::string& name, MPI_Comm comm);

/// \brief Collective: refuses, before any work, the files a run will write
/// in `folder` that it must not replace: a device, a FIFO, a link, a folder
/// (files::not_replaceable), or one of the run's `inputs` (its deck, the
/// checkpoint it restarts from). A name ending in `*` stands for every entry
/// of the folder that begins with the rest ("checkpoint_*").
/// \throws InputError (all ranks) naming the path and why.
void check_outputs(const std::filesystem::path& folder, const std::vector<std::string>& names,
                   const std::vector<std::string>& inputs, MPI_Comm comm);

/// \brief The name, relative to `folder`, under which `path` is or could
/// become one of a run's files there (`names` as for check_outputs, with
/// their `.tmp` and `.xmf` companions, the `fields/` folder and the lock), or
/// "" when it is none of them. Not collective.
std::string run_output_name(const std::filesystem::path& folder,
                            const std::vector<std::string>& names, const std::string& path);

/// \brief Collective: refuses a folder that holds another application's run
/// (its deck.toml or result.json names another app): a folder holds the
/// runs of one application, whose checkpoints another would prune or
/// replace. \throws InputError (all ranks) naming the folder, the file and
/// the application that wrote it.
void check_folder_app(const std::filesystem::path& folder, const std::string& app, MPI_Comm comm);

/// \brief One run per output folder: an advisory lock (flock) on
/// `DIR/.kpmap-lock`, taken by rank 0 for the object's life and recorded
/// with its pid and host. A second run on the folder is refused; a lock left
/// by a killed run is no lock (the kernel released it with the process).
/// The lock file is removed when the run ends.
class OutputLock {
 public:
  /// \brief Collective. \throws InputError (all ranks) naming the folder and
  /// the pid and host of the run that holds it.
  OutputLock(const std::filesystem::path& dir, MPI_Comm comm);
  ~OutputLock();
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

/// \brief The name of the checkpoint after step (or epoch) `step`:
/// "checkpoint_000040.h5". Checkpoint rotation keeps the newest of these.
std::string checkpoint_file_name(long long step);
/// \brief The name of a checkpoint taken `step` steps into the epoch after
/// `epoch`: "checkpoint_000002_000017.h5" (a run stopped mid-epoch).
std::string checkpoint_file_name(long long epoch, long long step);

/// \brief A number for a CSV cell: the shortest text that reads back to the
/// same double; NaN (no value) is an empty cell.
std::string csv_number(double x);

/// \brief "[a, b, ...]" for the terminal, `digits` significant digits: the
/// first and last 8 values of a longer list, with the count of those left out
/// (result.json holds every value).
std::string short_list(const std::vector<double>& v, int digits = 6);

/// \brief The per-step (or per-epoch) CSV table of a run, kept by rank 0:
/// each row is written and flushed at once (a killed run keeps every row it
/// reported), and a row that cannot be written (a full disk) is an error
/// that names the file, not a table that silently stops.
class CsvTable {
 public:
  /// \brief On rank 0 (`root`), opens `path` with its `header` line. A run
  /// that continues an earlier one from step (or epoch) `restarted_at` >= 0
  /// keeps the file's rows up to that step and appends after them: rows of
  /// steps the earlier run took after its checkpoint are dropped, so each
  /// step is in the table once, with the values of the run that continued.
  /// Elsewhere the table writes nothing.
  /// \throws kpmap::Error (this rank) when the file cannot be written.
  CsvTable(std::filesystem::path path, const std::string& header, long long restarted_at,
           bool root);
  /// \brief Appends `line` (no newline) on rank 0. \throws kpmap::Error.
  void row(const std::string& line);

 private:
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
  struct Close {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, Close> owner_;
};

/// \brief Ends a run's result file: adds `stopped_by` (the signal's name, or
/// ""), `checkpoint` and `timing` to `result`, writes it (two-space indent,
/// NaN as null) to `dir`/result.json (run_file::result) atomically on rank
/// 0, and returns the run's exit code: exit_code::stopped after a signal,
/// else success.
int write_result(nlohmann::ordered_json& result, const std::filesystem::path& dir, int stopped_by,
                 const std::string& checkpoint, const PhaseTimes::Report& report, bool root);

/// \brief `s` quoted for a POSIX shell: pasted into a terminal, it is one word.
std::string shell_quoted(const std::string& s);

/// \brief The command that draws a run's plots from what it left in `dir`
/// (kpmap-plot, a step of its own: no process is forked from an MPI rank,
/// which is unsafe with registered or CUDA memory). A run names it in its
/// last lines.
std::string plot_command(const std::filesystem::path& dir);

/// \brief Every how many of a run's `planned` steps (or epochs) it prints a
/// progress line: `every` where the deck gave one (>= 0; 0: none), else
/// (-1) about 15 lines whatever the run's length: every step up to 20, every
/// ceil(planned / 15)th beyond. The run's first and last step's lines are
/// printed as well.
long long progress_cadence(long long every, long long planned);

/// \brief Elapsed time and a linear estimate of the time left, for progress lines.
class Progress {
 public:
  /// \param first the step the run starts from (after a restart), \param last the final step.
  Progress(long long first, long long last);
  double elapsed() const;
  /// \brief Seconds left after finishing step `done`, from the mean time per step so far.
  double eta(long long done) const;
  /// \brief "12.3s", "4m05s", "2h10m".
  static std::string format(double seconds);

 private:
  long long first_;
  long long last_;
  double start_;
};

}  // namespace kpmap
