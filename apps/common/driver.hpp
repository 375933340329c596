#pragma once
/// \file
/// \brief What every deck-driven kpmap application shares: the command line
/// (`APP DECK [--set key=value]... [--output DIR] [--restart FILE]`), the
/// output folder, per-phase timers reduced over ranks, a small JSON writer,
/// and the progress line with its ETA.

#include <kpmap/deck.hpp>
#include <kpmap/runtime.hpp>

#include <mpi.h>
#include <CLI/CLI.hpp>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kpmap::apps {

/// \brief The options every deck-driven application takes.
struct RunOptions {
  std::string deck;               ///< the input deck (positional)
  std::vector<std::string> sets;  ///< `--set section.key=value`, in order
  std::string output;             ///< `--output DIR`: overrides the deck's output.dir
  std::string restart;            ///< `--restart FILE`: a checkpoint to continue from
  std::string trace;           ///< `--trace FILE`: a Chrome trace of every rank (kpmap/trace.hpp)
  bool help_deck = false;      ///< `--help-deck`: print the deck's keys and stop
  bool deck_markdown = false;  ///< `--deck-markdown` (hidden): the keys as docs/decks.md tables
};

/// \brief Adds DECK, --set, --output, --restart, --trace and --help-deck to `app`.
void add_run_options(CLI::App& app, RunOptions& options);

/// \brief Parses the command line (rank 0 prints help and errors), then
/// handles --help-deck by printing `schema.help()` (and the hidden
/// --deck-markdown, which prints `schema.markdown()` for docs/decks.md). Returns an exit code when
/// the program should stop now (0 after --help, --version or --help-deck, 2 on
/// a bad argument or a missing deck).
std::optional<int> parse_run_command_line(CLI::App& app, RunOptions& options,
                                          const deck::Schema& schema, int argc, char** argv,
                                          const Runtime& rt);

/// \brief Collective: loads the deck with the --set overrides, and --output as
/// an override of `output.dir`. Every rank gets the same resolved deck, or
/// every rank throws the same InputError (exit code 2). `translate` reads
/// another deck format (see deck::Translator).
deck::Deck load_deck(const deck::Schema& schema, const RunOptions& options, MPI_Comm comm,
                     const deck::Translator& translate = nullptr);

/// \brief Collective: creates `dir` if needed and checks that files can be
/// created in it, before any work starts. \throws InputError (all ranks)
/// naming the folder and the reason.
std::filesystem::path prepare_output_dir(const std::string& dir, MPI_Comm comm);

/// \brief Where this rank runs, for the apps' banners: "Serial, 1 thread:
/// serial host backend", "OpenMP, 2 threads: 2 cores shared by 1 rank", "Cuda 0".
std::string execution_text(const Runtime& rt);

/// \brief Throws `e` again with `before` and `after` around its message,
/// keeping its exit code and whether all ranks raised it.
[[noreturn]] void rethrow_with_context(const Error& e, const std::string& before,
                                       const std::string& after);

/// \brief Where the time of a run goes. Each rank accumulates its own times;
/// reports give the maximum over ranks (the slowest rank sets the pace) and,
/// per phase, the minimum and mean, so imbalance shows without a tool.
enum class Phase { compute, halo, collectives, io, checkpoint };
inline constexpr std::size_t phase_count = 5;
/// \brief "compute", "halo", "collectives", "io", "checkpoint".
const char* phase_name(Phase phase);

class PhaseTimes {
 public:
  /// \brief Adds the time between construction and destruction to a phase.
  /// With `fence`, the default execution space is fenced before the clock
  /// stops, so asynchronous kernels are charged to the phase that launched them.
  class Scope {
   public:
    Scope(PhaseTimes& times, Phase phase, bool fence);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    PhaseTimes& times_;
    Phase phase_;
    bool fence_;
    double start_;
  };

  Scope scope(Phase phase, bool fence = true) { return Scope(*this, phase, fence); }
  void add(Phase phase, double seconds) { local_[static_cast<std::size_t>(phase)] += seconds; }
  double local(Phase phase) const { return local_[static_cast<std::size_t>(phase)]; }

  /// \brief Seconds of wall time and of each phase over the ranks: the
  /// maximum (the named fields), and per phase the minimum and the mean.
  struct Report {
    double wall = 0, compute = 0, halo = 0, collectives = 0, io = 0, checkpoint = 0;
    int ranks = 1;
    std::array<double, phase_count> min{}, mean{}, max{};
  };
  /// \brief Collective over `comm`.
  Report reduce(double wall_seconds, MPI_Comm comm) const;

 private:
  std::array<double, phase_count> local_{};
};

/// \brief On rank 0, draws the run's plots into `dir` with kpmap.plot (python/kpmap)
/// (`kind` "train": loss.png; "heat": field.png), unless KPMAP_PLOTS=0. Without
/// Python or matplotlib it prints a one-line notice; it never fails a run.
/// The interpreter is Debian's python3, or KPMAP_PYTHON.
void make_plots(const std::string& kind, const std::filesystem::path& dir, bool root);

/// \brief The end-of-run table on rank 0: each phase's min / mean / max
/// seconds over the ranks, and its share of the wall time.
std::string phase_table(const PhaseTimes::Report& report);

/// \brief A JSON object built field by field, in insertion order. Numbers are
/// written with 17 significant digits (they read back bit for bit); NaN and
/// infinities, which JSON lacks, are written as null.
class Json {
 public:
  Json& set(const std::string& key, double value);
  Json& set(const std::string& key, long long value);
  Json& set(const std::string& key, int value) { return set(key, static_cast<long long>(value)); }
  Json& set(const std::string& key, bool value);
  Json& set(const std::string& key, const std::string& value);
  Json& set(const std::string& key, const char* value) { return set(key, std::string(value)); }
  Json& set(const std::string& key, const std::vector<double>& values);
  Json& set(const std::string& key, const std::vector<long long>& values);
  Json& set(const std::string& key, const Json& object);
  /// \brief The object as text, indented by two spaces per level.
  std::string str(int indent = 0) const;

  static std::string quote(const std::string& s);
  static std::string number(double x);

 private:
  struct Field {
    std::string key;
    std::string text;  // the value as JSON, unless it is a nested object
    int child = -1;    // index into children_ for a nested object
  };
  Json& put(const std::string& key, std::string text);
  std::vector<Field> fields_;
  std::vector<Json> children_;
};

/// \brief The phase report as a JSON object (`wall_s`, `compute_s`, `halo_s`,
/// `collectives_s`, `io_s`).
Json to_json(const PhaseTimes::Report& r);

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

/// \brief The per-step (or per-epoch) CSV table of a run, kept by rank 0:
/// each row is written and flushed at once (a killed run keeps every row it
/// reported), and a row that cannot be written (a full disk) is an error
/// that names the file, not a table that silently stops.
class CsvTable {
 public:
  /// \brief On rank 0 (`root`), opens `path` with its `header` line, or
  /// appends to it when the run continues an earlier one (`restarted`) and
  /// the file is there. Elsewhere the table writes nothing.
  /// \throws kpmap::Error (this rank) when the file cannot be written.
  CsvTable(std::filesystem::path path, const std::string& header, bool restarted, bool root);
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
/// ""), `checkpoint` and `timing` to `j`, writes it to `path` atomically on
/// rank 0, and returns the run's exit code (exit_code::stopped after a
/// signal, else success).
int finish_result(Json& j, const std::filesystem::path& path, int stopped_by,
                  const std::string& checkpoint, const PhaseTimes::Report& report, bool root);

}  // namespace kpmap::apps
