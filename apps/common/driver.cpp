#include "driver.hpp"

#include <kpmap/run/stop.hpp>

#include "cli.hpp"

#include <kpmap/detail/kokkos_compat.hpp>
#include <kpmap/error.hpp>
#include <kpmap/files.hpp>
#include <kpmap/trace.hpp>
#include <kpmap/transport/mpi_ops.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <unistd.h>

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
  if (!o.trace.empty()) trace::start(o.trace, rt.comm());  // written when the Runtime ends
  return std::nullopt;
}

namespace {
// A TOML basic string, so any path survives --set unchanged.
std::string toml_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + '"';
}
}  // namespace

deck::Deck load_deck(const deck::Schema& schema, const RunOptions& o, MPI_Comm comm,
                     const deck::Translator& translate) {
  std::vector<std::string> overrides = o.sets;
  if (!o.output.empty()) {
    if (schema.find("output.dir") == nullptr) {
      throw InputError("--output: " + schema.app() + " has no output.dir key",
                       ErrorScope::all_ranks);
    }
    overrides.push_back("output.dir=" + toml_string(o.output));
  }
  return deck::load(schema, o.deck, overrides, comm, translate);
}

std::filesystem::path prepare_output_dir(const std::string& dir, MPI_Comm comm) {
  namespace fs = std::filesystem;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string problem;
  if (rank == 0) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
      problem = "cannot create it: " + ec.message();
    } else if (!fs::is_directory(dir, ec)) {
      problem = "it exists and is not a folder";
    } else {
      // Create and remove a file: the only test that covers permissions,
      // read-only mounts and quotas alike.
      const fs::path probe = fs::path(dir) / (".kpmap-write-test-" + std::to_string(::getpid()));
      std::FILE* f = std::fopen(probe.c_str(), "w");
      if (f == nullptr) {
        problem = std::string("cannot create files in it: ") + std::strerror(errno);
      } else {
        const bool ok = std::fputs("kpmap\n", f) >= 0;
        const bool closed = std::fclose(f) == 0;
        if (!ok || !closed) problem = std::string("cannot write to it: ") + std::strerror(errno);
        fs::remove(probe, ec);
      }
    }
  }
  transport::bcast_string(problem, 0, comm);
  if (!problem.empty()) {
    throw InputError("output folder '" + dir + "': " + problem, ErrorScope::all_ranks);
  }
  return fs::path(dir);
}

std::string execution_text(const Runtime& rt) {
  std::string s = Kokkos::DefaultExecutionSpace::name();
  if (rt.device_id() >= 0) s += " " + std::to_string(rt.device_id()) + ", host";
  return s + " " + rt.host_threads().reason;
}

void rethrow_with_context(const Error& e, const std::string& before, const std::string& after) {
  throw Error(before + e.what() + after, e.code(), e.scope());
}

// ---- PhaseTimes ----------------------------------------------------------------

PhaseTimes::Scope::Scope(PhaseTimes& times, Phase phase, bool fence)
    : times_(times), phase_(phase), fence_(fence), start_(MPI_Wtime()) {}

PhaseTimes::Scope::~Scope() {
  if (fence_) {
    kpmap::detail::fence(Kokkos::DefaultExecutionSpace(), "kpmap::phase: end of a timed phase");
  }
  times_.add(phase_, MPI_Wtime() - start_);
}

const char* phase_name(Phase phase) {
  switch (phase) {
    case Phase::compute:
      return "compute";
    case Phase::halo:
      return "halo";
    case Phase::collectives:
      return "collectives";
    case Phase::io:
      return "io";
    case Phase::checkpoint:
      return "checkpoint";
  }
  return "?";
}

PhaseTimes::Report PhaseTimes::reduce(double wall_seconds, MPI_Comm comm) const {
  Report r;
  MPI_Comm_size(comm, &r.ranks);
  double max[phase_count + 1] = {wall_seconds};
  for (std::size_t i = 0; i < phase_count; ++i) max[i + 1] = local_[i];
  double min[phase_count];
  double sum[phase_count];
  std::copy(local_.begin(), local_.end(), min);
  std::copy(local_.begin(), local_.end(), sum);
  MPI_Allreduce(MPI_IN_PLACE, max, static_cast<int>(phase_count + 1), MPI_DOUBLE, MPI_MAX, comm);
  MPI_Allreduce(MPI_IN_PLACE, min, static_cast<int>(phase_count), MPI_DOUBLE, MPI_MIN, comm);
  MPI_Allreduce(MPI_IN_PLACE, sum, static_cast<int>(phase_count), MPI_DOUBLE, MPI_SUM, comm);
  r.wall = max[0];
  for (std::size_t i = 0; i < phase_count; ++i) {
    r.max[i] = max[i + 1];
    r.min[i] = min[i];
    r.mean[i] = sum[i] / r.ranks;
  }
  r.compute = r.max[static_cast<std::size_t>(Phase::compute)];
  r.halo = r.max[static_cast<std::size_t>(Phase::halo)];
  r.collectives = r.max[static_cast<std::size_t>(Phase::collectives)];
  r.io = r.max[static_cast<std::size_t>(Phase::io)];
  r.checkpoint = r.max[static_cast<std::size_t>(Phase::checkpoint)];
  return r;
}

std::string phase_table(const PhaseTimes::Report& r) {
  std::string out = "time per phase over " + std::to_string(r.ranks) +
                    (r.ranks == 1 ? " rank" : " ranks") +
                    " (seconds: min / mean / max, and the max's share of the wall time):\n";
  char line[160];
  for (std::size_t i = 0; i < phase_count; ++i) {
    std::snprintf(line, sizeof line, "  %-12s %10.3f / %10.3f / %10.3f  %5.1f %%\n",
                  phase_name(static_cast<Phase>(i)), r.min[i], r.mean[i], r.max[i],
                  r.wall > 0 ? 100.0 * r.max[i] / r.wall : 0.0);
    out += line;
  }
  std::snprintf(line, sizeof line, "  %-12s %10s   %10s   %10.3f\n", "wall", "", "", r.wall);
  return out + line;
}

namespace {
std::string shell_quoted(const std::string& s) {
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}
}  // namespace

void make_plots(const std::string& kind, const std::filesystem::path& dir, bool root) {
  if (!root) return;
  if (const char* plots = std::getenv("KPMAP_PLOTS");
      plots != nullptr && (std::string(plots) == "0" || std::string(plots) == "off")) {
    return;
  }
  // The kpmap Python package: the source tree's python/ from a build, else the
  // installed share/kpmap/python.
  std::string package_dir;
  std::istringstream candidates(KPMAP_PYTHON_DIRS);
  for (std::string c; std::getline(candidates, c, ':');) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(std::filesystem::path(c) / "kpmap" / "plot.py", ec)) {
      package_dir = c;
      break;
    }
  }
  if (package_dir.empty()) {
    std::printf(
        "kpmap: no plots (the kpmap Python package is neither in the source tree nor "
        "installed)\n");
    return;
  }
  const char* env_python = std::getenv("KPMAP_PYTHON");
  const std::string python =
      env_python != nullptr && *env_python != '\0' ? env_python : KPMAP_PLOT_PYTHON;
  const std::string command = "PYTHONPATH=" + shell_quoted(package_dir) +
                              "${PYTHONPATH:+:$PYTHONPATH} " + shell_quoted(python) +
                              " -m kpmap.plot " + kind + " " + shell_quoted(dir.string());
  std::fflush(stdout);
  const int rc = std::system(command.c_str());
  if (rc != 0) std::printf("kpmap: no plots (%s could not run them)\n", python.c_str());
  std::fflush(stdout);
}

Json to_json(const PhaseTimes::Report& r) {
  Json j;
  j.set("wall_s", r.wall);
  for (std::size_t i = 0; i < phase_count; ++i) {
    const std::string name = phase_name(static_cast<Phase>(i));
    j.set(name + "_s", r.max[i]).set(name + "_min_s", r.min[i]).set(name + "_mean_s", r.mean[i]);
  }
  return j;
}

// ---- Json ------------------------------------------------------------------------

std::string Json::quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + '"';
}

std::string Json::number(double x) {
  if (!std::isfinite(x)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

Json& Json::put(const std::string& key, std::string text) {
  fields_.push_back({key, std::move(text), -1});
  return *this;
}
Json& Json::set(const std::string& key, double v) { return put(key, number(v)); }
Json& Json::set(const std::string& key, long long v) { return put(key, std::to_string(v)); }
Json& Json::set(const std::string& key, bool v) { return put(key, v ? "true" : "false"); }
Json& Json::set(const std::string& key, const std::string& v) { return put(key, quote(v)); }
Json& Json::set(const std::string& key, const std::vector<double>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + number(v[i]);
  return put(key, s + "]");
}
Json& Json::set(const std::string& key, const std::vector<long long>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return put(key, s + "]");
}
Json& Json::set(const std::string& key, const Json& object) {
  children_.push_back(object);
  fields_.push_back({key, "", static_cast<int>(children_.size() - 1)});
  return *this;
}

std::string Json::str(int indent) const {
  if (fields_.empty()) return "{}";
  const std::string pad(static_cast<std::size_t>(indent + 2), ' ');
  std::string s = "{\n";
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    const Field& f = fields_[i];
    s += pad + quote(f.key) + ": ";
    s += f.child >= 0 ? children_[static_cast<std::size_t>(f.child)].str(indent + 2) : f.text;
    s += i + 1 < fields_.size() ? ",\n" : "\n";
  }
  return s + std::string(static_cast<std::size_t>(indent), ' ') + "}";
}

// ---- Progress ----------------------------------------------------------------------

Progress::Progress(long long first, long long last)
    : first_(first), last_(last), start_(MPI_Wtime()) {}

double Progress::elapsed() const { return MPI_Wtime() - start_; }

double Progress::eta(long long done) const {
  const long long steps = done - first_;
  if (steps <= 0) return 0.0;
  return elapsed() / static_cast<double>(steps) * static_cast<double>(last_ - done);
}

std::string Progress::format(double seconds) {
  char buf[32];
  if (!(seconds >= 0)) seconds = 0;
  if (seconds < 60) {
    std::snprintf(buf, sizeof buf, "%.1fs", seconds);
  } else if (seconds < 3600) {
    const long s = std::lround(seconds);
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  } else {
    const long m = std::lround(seconds / 60);
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", m / 60, m % 60);
  }
  return buf;
}

CsvTable::CsvTable(std::filesystem::path path, const std::string& header, bool restarted, bool root)
    : path_(std::move(path)) {
  if (!root) return;
  const bool append = restarted && std::filesystem::exists(path_);
  owner_.reset(std::fopen(path_.c_str(), append ? "a" : "w"));
  file_ = owner_.get();
  if (file_ == nullptr) {
    throw Error("cannot write '" + path_.string() +
                "': " + files::write_failure_reason(path_.string(), errno));
  }
  if (!append) row(header);
}

void CsvTable::row(const std::string& line) {
  if (file_ == nullptr) return;
  errno = 0;
  if (std::fputs(line.c_str(), file_) < 0 || std::fputc('\n', file_) == EOF ||
      std::fflush(file_) != 0) {
    const int err = errno;
    throw Error("cannot write '" + path_.string() +
                "': " + files::write_failure_reason(path_.string(), err));
  }
}

int finish_result(Json& j, const std::filesystem::path& path, int stopped_by,
                  const std::string& checkpoint, const PhaseTimes::Report& report, bool root) {
  j.set("stopped_by", stopped_by ? StopSignals::name(stopped_by) : "")
      .set("checkpoint", checkpoint)
      .set("timing", to_json(report));
  if (root) files::write_atomic(path.string(), j.str() + "\n");
  return stopped_by ? exit_code::stopped : exit_code::success;
}

}  // namespace kpmap::apps
