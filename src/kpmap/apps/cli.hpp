// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Command-line handling shared by the kpmap-* applications.

#include <kpmap/runtime/runtime.hpp>
#include <kpmap/transport/host.hpp>

#include <CLI/CLI.hpp>

#include <iostream>
#include <optional>
#include <sstream>

namespace kpmap::apps {

/// Parses the command line on every rank, once the ranks agree that they were
/// given the same arguments (an MPMD launch, `mpirun ... : ...`, can give a
/// host others; rank 0's deck would then be run with the others' options).
/// Returns an exit code when the program should stop now: 0 after --help or
/// --version, 2 after a bad argument. Only rank 0 prints.
/// \throws kpmap::InputError (all ranks) where the ranks' arguments differ.
inline std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv,
                                             const Runtime& rt) {
  // Kokkos' own options are not the program's: one line says where they are.
  const std::string footer = app.get_footer();
  app.footer(footer + (footer.empty() || footer.back() == '\n' ? "" : "\n") +
             "Kokkos' own options (threads, devices, tools): --kokkos-help");
  std::string line;
  for (int i = 1; i < argc; ++i) line += (i > 1 ? " " : "") + std::string(argv[i]);
  if (const std::string differs =
          transport::disagreement(rt.comm(), {{"the command line", "'" + line + "'"}});
      !differs.empty()) {
    throw InputError("the ranks of this job were given different arguments: " + differs +
                         "; give every rank the same",
                     ErrorScope::all_ranks);
  }
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
