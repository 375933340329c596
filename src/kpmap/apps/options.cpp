// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/apps/options.hpp>

#include <kpmap/apps/cli.hpp>

#include <kpmap/base/error.hpp>
#include <kpmap/base/files.hpp>
#include <kpmap/base/version.hpp>
#include <kpmap/run/output.hpp>
#include <kpmap/run/output_keys.hpp>
#include <kpmap/tools/trace.hpp>
#include <kpmap/transport/host.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <utility>

namespace kpmap::apps {

void add_run_options(CLI::App& app, RunOptions& o) {
  app.add_option("deck", o.deck, "Input deck (TOML; see --help-deck for its keys)");
  app.add_option("--set", o.sets,
                 "Override a deck key, typed and checked like the deck: --set section.key=value "
                 "(repeatable)")
      // One value per --set, any number of --set (with CLI11 2.1, expected(1)
      // refuses a second --set), and no eating of the deck that follows.
      ->allow_extra_args(false)
      ->type_name("KEY=VALUE");
  app.add_option("--output", o.output, "Output folder (overrides output.dir)")->type_name("DIR");
  app.add_option("--restart", o.restart, "Continue from this checkpoint (any rank count)")
      ->type_name("FILE");
  app.add_option("--trace", o.trace,
                 "Write a timeline of every rank's compute and communication to FILE (Chrome "
                 "trace JSON: open it in ui.perfetto.dev); KPMAP_TRACE=FILE does the same")
      ->type_name("FILE");
  app.add_flag("--help-deck", o.help_deck, "Print every deck key with its type and default");
  app.add_flag("--deck-markdown", o.deck_markdown)->group("");
}

std::optional<int> parse_run_command_line(CLI::App& app, RunOptions& o, const deck::Schema& schema,
                                          int argc, char** argv, const Runtime& rt) {
  if (auto code = parse_command_line(app, argc, argv, rt)) return code;
  // An empty value is a mistake (an unset shell variable, say), not "none".
  for (const char* name : {"--output", "--restart", "--trace"}) {
    const std::string& value = std::string(name) == "--output"    ? o.output
                               : std::string(name) == "--restart" ? o.restart
                                                                  : o.trace;
    if (app.count(name) > 0 && value.empty()) {
      if (rt.rank() == 0) {
        std::cerr << schema.app() << ": " << name
                  << " is empty; give a path (or leave the option out)\n";
      }
      return exit_code::bad_input;
    }
  }
  if (o.help_deck || o.deck_markdown) {
    if (rt.rank() == 0)
      std::cout << (o.help_deck ? schema.help() : schema.markdown()) << std::flush;
    return exit_code::success;
  }
  if (o.deck.empty()) {
    if (rt.rank() == 0) {
      std::cerr << schema.app() << ": no input deck given\nRun with --help for more information.\n";
    }
    return exit_code::bad_input;
  }
  return std::nullopt;
}

void start_trace(const RunOptions& o, const std::filesystem::path& out,
                 const std::vector<std::string>& names, MPI_Comm comm) {
  // KPMAP_TRACE started with the Runtime, before the folder was known.
  const std::string from_environment = trace::path();
  for (const auto& [path, source] : {std::pair{o.trace, std::string("--trace")},
                                     std::pair{from_environment, std::string("KPMAP_TRACE")}}) {
    if (path.empty()) continue;
    if (const std::string name = run_output_name(out, names, path); !name.empty()) {
      if (source == "KPMAP_TRACE") trace::discard();
      throw InputError(source + " " + path + ": it is the run's own " + name + " in " +
                           out.string() +
                           ", which the trace would replace at the end; write "
                           "the trace elsewhere",
                       ErrorScope::all_ranks);
    }
  }
  if (!o.trace.empty()) trace::start(o.trace, comm);  // written when the Runtime ends
}

deck::Deck load_deck(const deck::Schema& schema, const RunOptions& o, MPI_Comm comm,
                     const deck::Translator& translate) {
  std::vector<std::string> overrides = o.sets;
  if (!o.output.empty()) {
    if (schema.find("output.dir") == nullptr) {
      throw InputError("--output: " + schema.app() + " has no output.dir key",
                       ErrorScope::all_ranks);
    }
    // Named as --output, not as the --set it becomes.
    if (const std::string problem = output_path_problem(o.output); !problem.empty()) {
      throw InputError("--output: " + problem, ErrorScope::all_ranks);
    }
    // Every rank holds the same argument, so every rank refuses it together.
    try {
      overrides.push_back("output.dir=" + deck::toml_quoted(o.output));
    } catch (const InputError& e) {
      throw InputError(std::string("--output: ") + e.what() +
                           " (output.dir is a deck key; give a folder whose name is UTF-8)",
                       ErrorScope::all_ranks);
    }
  }
  return deck::load(schema, o.deck, overrides, comm, translate);
}

std::string execution_text(const Runtime& rt) {
  std::string s = Kokkos::DefaultExecutionSpace::name();
  if (rt.device_id() >= 0) s += " " + std::to_string(rt.device_id()) + ", host";
  return s + " " + rt.host_threads().reason;
}

void print_blas_lines(const char* app, const Runtime& rt) {
  const auto& blas = rt.blas_kernels();
  std::printf("%s: BLAS: %s\n%s: CPU: %s\n", app, detail::describe(blas).c_str(), app,
              blas.cpu.c_str());
  if (!blas.note.empty()) std::printf("%s: note: %s\n", app, blas.note.c_str());
}

std::optional<int> parse_info_command_line(const std::string& description,
                                           const std::string& version, int argc, char** argv,
                                           const Runtime& rt) {
  CLI::App app{description};
  app.set_version_flag("--version", version);
  return parse_command_line(app, argc, argv, rt);
}

Started start_app(const AppText& text, const deck::Schema& schema, int argc, char** argv,
                  const Runtime& rt, const deck::Translator& translate) {
  CLI::App app{text.description};
  app.footer("Examples:\n" + text.examples + "Outputs in output.dir (" +
             default_output_dir(text.name) + " unless the deck names one): " + text.outputs +
             ".\n" + exit_code::help(text.code3, text.code5));
  app.set_version_flag("--version", text.name + " " + KPMAP_VERSION_STRING);
  Started s;
  add_run_options(app, s.options);
  s.exit = parse_run_command_line(app, s.options, schema, argc, argv, rt);
  if (s.exit) return s;
  // One path can name different files on different hosts (a copy on each
  // node's local disk): the ranks must continue from the same one.
  if (!s.options.restart.empty()) {
    if (const std::string differs = transport::disagreement(
            rt.comm(), {{"--restart " + s.options.restart, files::identity(s.options.restart)}});
        !differs.empty()) {
      throw InputError("the ranks of this job see different restart files: " + differs +
                           "; every rank must read the same checkpoint (copy it to every "
                           "host, or put it on a file system they share)",
                       ErrorScope::all_ranks);
    }
  }
  s.deck = load_deck(schema, s.options, rt.comm(), translate);
  return s;
}

}  // namespace kpmap::apps
