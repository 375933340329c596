#pragma once
// Command-line handling shared by the kpmap-* applications.

#include <kpmap/runtime/runtime.hpp>

#include <CLI/CLI.hpp>

#include <iostream>
#include <optional>
#include <sstream>

namespace kpmap::apps {

/// Parses the command line on every rank (all ranks see the same arguments).
/// Returns an exit code when the program should stop now: 0 after --help or
/// --version, 2 after a bad argument. Only rank 0 prints.
inline std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv,
                                             const Runtime& rt) {
  // Kokkos' own options are not the program's: one line says where they are.
  const std::string footer = app.get_footer();
  app.footer(footer + (footer.empty() || footer.back() == '\n' ? "" : "\n") +
             "Kokkos' own options (threads, devices, tools): --kokkos-help");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::ostringstream sink;
    std::ostream& out = rt.rank() == 0 ? std::cout : sink;
    std::ostream& err = rt.rank() == 0 ? std::cerr : sink;
    const int code = app.exit(e, out, err);
    return code == 0 ? exit_code::success : exit_code::bad_input;
  }
  return std::nullopt;
}

}  // namespace kpmap::apps
