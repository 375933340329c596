// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief What every deck-driven kpmap application shares: the command line
/// (`APP DECK [--set key=value]... [--output DIR] [--restart FILE]`) and the
/// deck it names. What a run writes is the library's run layer (kpmap/run/).

#include <kpmap/deck/deck.hpp>
#include <kpmap/runtime/runtime.hpp>

#include <filesystem>

#include <mpi.h>

#include <optional>
#include <string>
#include <vector>

// CLI11 is header-only and costly to compile (10 s a file): only options.cpp
// builds command lines, for every kpmap-* application.
namespace CLI {
class App;
}  // namespace CLI

namespace kpmap::apps {

/// \brief The options every deck-driven application takes.
struct RunOptions {
  std::string deck;               ///< the input deck (positional)
  std::vector<std::string> sets;  ///< `--set section.key=value`, in order
  std::string output;             ///< `--output DIR`: overrides the deck's output.dir
  std::string restart;            ///< `--restart FILE`: a checkpoint to continue from
  std::string trace;       ///< `--trace FILE`: a Chrome trace of every rank (kpmap/tools/trace.hpp)
  bool help_deck = false;  ///< `--help-deck`: print the deck's keys and stop
  bool deck_markdown = false;  ///< `--deck-markdown` (hidden): the keys as docs/decks.md tables
};

/// \brief Adds DECK, --set, --output, --restart, --trace and --help-deck to
/// `app` (a caller includes <CLI/CLI.hpp>).
void add_run_options(CLI::App& app, RunOptions& options);

/// \brief Parses the command line (rank 0 prints help and errors), then
/// handles --help-deck by printing `schema.help()` (and the hidden
/// --deck-markdown, which prints `schema.markdown()` for docs/decks.md). Returns an exit code when
/// the program should stop now (0 after --help, --version or --help-deck, 2 on
/// a bad argument or a missing deck).
std::optional<int> parse_run_command_line(CLI::App& app, RunOptions& options,
                                          const deck::Schema& schema, int argc, char** argv,
                                          const Runtime& rt);

/// \brief Collective: starts the --trace timeline, once the output folder
/// `out` is made (a trace may go inside it). \throws InputError (all ranks)
/// for a trace file kpmap must not or cannot write (kpmap/tools/trace.hpp),
/// and for a --trace or KPMAP_TRACE file that is, or could become, one of the
/// run's own files in `out` (`names`, as for check_outputs): the trace,
/// written at exit, would replace it.
void start_trace(const RunOptions& options, const std::filesystem::path& out,
                 const std::vector<std::string>& names, MPI_Comm comm);

/// \brief Collective: loads the deck with the --set overrides, and --output as
/// an override of `output.dir`. Every rank gets the same resolved deck, or
/// every rank throws the same InputError (exit code 2). `translate` reads
/// another deck format (see deck::Translator).
deck::Deck load_deck(const deck::Schema& schema, const RunOptions& options, MPI_Comm comm,
                     const deck::Translator& translate = nullptr);

/// \brief What a deck-driven application says of itself in --help.
struct AppText {
  std::string name;          ///< "kpmap-heat": also the --version line's first word
  std::string description;   ///< the first lines of --help
  std::string examples;      ///< command lines, one a line, each ending in a newline
  std::string outputs;       ///< the files a run leaves in output.dir ("result.json, ...")
  std::string code3, code5;  ///< what exit codes 3 and 5 mean for this app
};

/// \brief The start every deck-driven application shares: its command line
/// (--help, --version, --help-deck handled: `exit` says the code to stop
/// with), then its deck with the --set and --output overrides, the same on
/// every rank. Collective over the runtime's ranks.
struct Started {
  std::optional<int> exit;  ///< stop now with this code (help printed, or a bad argument)
  RunOptions options;
  std::optional<deck::Deck> deck;  ///< when not stopping
};
Started start_app(const AppText& text, const deck::Schema& schema, int argc, char** argv,
                  const Runtime& rt, const deck::Translator& translate = nullptr);

/// \brief The command line of a program that takes no options but --help and
/// --version (kpmap-info): `description` opens --help; `version` is the
/// --version line. Returns an exit code when the program should stop now (0
/// after --help or --version, 2 on a bad argument). Rank 0 prints.
std::optional<int> parse_info_command_line(const std::string& description,
                                           const std::string& version, int argc, char** argv,
                                           const Runtime& rt);

/// \brief Where this rank runs, for the apps' banners: "Serial, 1 thread:
/// serial host backend", "OpenMP, 2 threads: 2 cores shared by 1 rank", "Cuda 0".
std::string execution_text(const Runtime& rt);

/// \brief Prints, for rank 0's banner, `<app>: BLAS: OpenBLAS 0.3.21, kernels
/// Cooperlake (...)`, `<app>: CPU: AMD family 26 model 2; vectors: ...` and,
/// where matrix products run slower than they need, `<app>: note: ...` with
/// what to set.
void print_blas_lines(const char* app, const Runtime& rt);

}  // namespace kpmap::apps
