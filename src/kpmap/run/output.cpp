#include <kpmap/error.hpp>
#include <kpmap/files.hpp>
#include <kpmap/run/output.hpp>
#include <kpmap/run/stop.hpp>
#include <kpmap/transport/mpi_ops.hpp>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <system_error>

#include <unistd.h>

namespace kpmap {

namespace fs = std::filesystem;

fs::path prepare_output_dir(const std::string& dir, MPI_Comm comm) {
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

std::string checkpoint_file_name(long long step) {
  char name[64];
  std::snprintf(name, sizeof name, "checkpoint_%06lld.h5", step);
  return name;
}

std::string checkpoint_file_name(long long epoch, long long step) {
  char name[64];
  std::snprintf(name, sizeof name, "checkpoint_%06lld_%06lld.h5", epoch, step);
  return name;
}

std::string csv_number(double x) {
  if (std::isnan(x)) return "";
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x);
  return ec == std::errc() ? std::string(buf, end) : std::string("nan");
}

CsvTable::CsvTable(fs::path path, const std::string& header, bool restarted, bool root)
    : path_(std::move(path)) {
  if (!root) return;
  const bool append = restarted && fs::exists(path_);
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

int write_result(nlohmann::ordered_json& result, const fs::path& path, int stopped_by,
                 const std::string& checkpoint, const PhaseTimes::Report& report, bool root) {
  result["stopped_by"] = stopped_by ? StopSignals::name(stopped_by) : "";
  result["checkpoint"] = checkpoint;
  result["timing"] = to_json(report);
  // JSON has no NaN or infinity: they are written as null.
  if (root) files::write_atomic(path.string(), result.dump(2) + "\n");
  return stopped_by ? exit_code::stopped : exit_code::success;
}

namespace {
std::string shell_quoted(const std::string& s) {
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}
}  // namespace

void make_plots(const std::string& kind, const fs::path& dir, bool root) {
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
    if (fs::is_regular_file(fs::path(c) / "kpmap" / "plot.py", ec)) {
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

}  // namespace kpmap
