// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/base/error.hpp>
#include <kpmap/base/files.hpp>
#include <kpmap/run/output.hpp>
#include <kpmap/run/output_keys.hpp>
#include <kpmap/run/stop.hpp>
#include <kpmap/runtime/runtime.hpp>
#include <kpmap/transport/mpi_ops.hpp>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>
#include <utility>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kpmap {

namespace fs = std::filesystem;

namespace {
// Collective: rank 0 examined the folder and found `problem` ("" when all is
// well); every rank throws it (prefixed by `context`) as bad input.
void refuse_from_root(std::string problem, const std::string& context, MPI_Comm comm) {
  transport::bcast_string(problem, 0, comm);
  if (!problem.empty()) throw InputError(context + problem, ErrorScope::all_ranks);
}
}  // namespace

fs::path prepare_output_dir(const std::string& dir, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string problem;
  if (rank == 0) problem = output_path_problem(dir);
  if (rank == 0 && problem.empty()) {
    std::error_code ec, status;
    fs::create_directories(dir, ec);
    const auto link = fs::symlink_status(dir, status);
    if (ec && fs::is_symlink(link) && !fs::exists(dir, status)) {
      // create_directories says only "File exists" for a dangling link.
      std::error_code read;
      problem = "it is a symbolic link to " + fs::read_symlink(dir, read).string() +
                ", which does not exist; create that folder, or give another --output";
    } else if (ec) {
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
  refuse_from_root(problem, "output folder '" + dir + "': ", comm);
  return fs::path(dir);
}

fs::path prepare_run_subfolder(const fs::path& run_dir, const std::string& name, MPI_Comm comm) {
  const fs::path dir = run_dir / name;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string problem;
  std::error_code ec;
  if (rank == 0 && fs::is_symlink(fs::symlink_status(dir, ec))) {
    problem = "output folder '" + dir.string() +
              "': it is a symbolic link, and a run writes its files only in its own folder "
              "(remove the link, or choose another --output)";
  }
  refuse_from_root(problem, "", comm);
  return prepare_output_dir(dir.string(), comm);
}

void check_outputs(const fs::path& folder, const std::vector<std::string>& names,
                   const std::vector<std::string>& inputs, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string problem;
  if (rank == 0) {
    // (path, whether it must not be an input): a checkpoint of the folder may
    // be the one the run restarts from, and later steps go beside it.
    std::vector<std::pair<fs::path, bool>> outputs;
    std::error_code ec;
    for (const auto& name : names) {
      if (name.empty() || name.back() != '*') {
        outputs.emplace_back(folder / name, true);
        continue;
      }
      const std::string prefix = name.substr(0, name.size() - 1);
      for (const auto& e : fs::directory_iterator(folder, ec)) {
        if (e.path().filename().string().rfind(prefix, 0) == 0)
          outputs.emplace_back(e.path(), false);
      }
    }
    for (const auto& [out, not_input] : outputs) {
      // The file, and the temporary it is written to first (a FIFO there
      // would end the run at its first write, after the set-up).
      for (const std::string& path : {out.string(), out.string() + ".tmp"}) {
        if (const std::string why = files::not_replaceable(path); !why.empty()) {
          problem = "output " + path + ": it " + why +
                    ", and kpmap replaces only regular files (remove it or choose another "
                    "--output)";
          break;
        }
      }
      if (!problem.empty()) break;
      for (const auto& in : inputs) {
        if (not_input && !in.empty() && fs::equivalent(out, in, ec)) {
          problem = "output " + out.string() + " is this run's input " + in +
                    ", which a run never overwrites (copy it elsewhere or choose another --output)";
          break;
        }
      }
      if (!problem.empty()) break;
    }
  }
  refuse_from_root(problem, "", comm);
}

std::string run_output_name(const fs::path& folder, const std::vector<std::string>& names,
                            const std::string& path) {
  std::error_code ec;
  const fs::path rel =
      fs::weakly_canonical(path, ec).lexically_relative(fs::weakly_canonical(folder, ec));
  const std::string r = rel.generic_string();
  if (ec || r.empty() || r == "." || r.rfind("..", 0) == 0) return "";
  if (r.rfind("fields/", 0) == 0 || r == ".kpmap-lock") return r;
  std::string stem = r;
  for (const char* companion : {".tmp", ".xmf"}) {
    const std::string c = companion;
    if (stem.size() > c.size() && stem.compare(stem.size() - c.size(), c.size(), c) == 0) {
      stem.resize(stem.size() - c.size());
    }
  }
  for (const auto& name : names) {
    const bool prefix = !name.empty() && name.back() == '*';
    const bool match =
        prefix ? stem.rfind(name.substr(0, name.size() - 1), 0) == 0 : stem == name || r == name;
    if (match) return r;
  }
  return "";
}

namespace {
// The application that wrote `file` of a run folder, or "": deck.toml opens
// with "# <app> deck", result.json holds {"app": ...}.
std::string written_by(const fs::path& file) {
  if (!files::not_replaceable(file.string()).empty()) return "";  // check_outputs says why
  std::ifstream in(file);
  if (file.filename() == run_file::deck) {
    std::string first;
    std::getline(in, first);
    // Deck::to_toml's first line: "# <app> deck, resolved (defaults filled in) from ...".
    const std::string::size_type end = first.find(' ', 2);
    return first.rfind("# kpmap-", 0) == 0 && end != std::string::npos &&
                   first.compare(end, 16, " deck, resolved ") == 0
               ? first.substr(2, end - 2)
               : "";
  }
  const auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.contains("app") && j["app"].is_string() ? j["app"].get<std::string>()
                                                                    : "";
}
}  // namespace

void check_folder_app(const fs::path& folder, const std::string& app, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string problem;
  if (rank == 0) {
    for (const char* name : {run_file::deck, run_file::result}) {
      const std::string other = written_by(folder / name);
      if (!other.empty() && other != app) {
        problem = "output folder " + folder.string() + " holds a " + other + " run (its " + name +
                  "), and a folder holds the runs of one application, whose checkpoints " + app +
                  " would replace or delete: choose another --output";
        break;
      }
    }
  }
  refuse_from_root(problem, "", comm);
}

OutputLock::OutputLock(const fs::path& dir, MPI_Comm comm) : path_(dir / ".kpmap-lock") {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string problem;
  if (rank == 0) {
    // Lock the file at the path; a file another run removed as we locked it
    // is not the lock any more: open it again.
    for (int attempt = 0; attempt < 10 && fd_ < 0 && problem.empty(); ++attempt) {
      // A lock that is not a plain file of its own (a FIFO, a device, a
      // hard link to a file elsewhere) is not ours to open, truncate or
      // remove.
      if (const std::string why = files::not_ours(path_.string()); !why.empty()) {
        problem = "its lock file " + path_.string() + " " + why +
                  ", and kpmap locks only a file of its own (remove it, or choose another "
                  "--output)";
        break;
      }
      const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
      if (fd < 0) {
        problem = "cannot create its lock file " + path_.string() + ": " + std::strerror(errno);
        break;
      }
      if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        const int err = errno;
        std::string holder(256, '\0');
        const ssize_t n = ::pread(fd, holder.data(), holder.size(), 0);
        holder.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
        while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\0')) {
          holder.pop_back();
        }
        ::close(fd);
        problem = err == EWOULDBLOCK
                      ? "another run is writing to it (" +
                            (holder.empty() ? std::string("its pid is not recorded yet") : holder) +
                            "); wait for it to end, or choose another --output"
                      : "cannot lock " + path_.string() + ": " + std::strerror(err);
        break;
      }
      struct stat held {
      }, named{};
      if (::fstat(fd, &held) != 0 || ::stat(path_.c_str(), &named) != 0 ||
          held.st_ino != named.st_ino || held.st_dev != named.st_dev || !S_ISREG(held.st_mode) ||
          held.st_nlink != 1) {
        ::close(fd);
        continue;
      }
      fd_ = fd;
    }
    if (fd_ >= 0) {
      char host[256] = "";
      ::gethostname(host, sizeof host - 1);
      const std::string me = "pid " + std::to_string(::getpid()) + " on host " + host + "\n";
      if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, me.data(), me.size(), 0) < 0) {
        // The lock holds without the note; a refused run says less.
      }
    } else if (problem.empty()) {
      problem = "cannot hold its lock file " + path_.string();
    }
  }
  refuse_from_root(problem, "output folder " + dir.string() + ": ", comm);
}

OutputLock::~OutputLock() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());  // while locked: a run that opened it sees another inode
  ::close(fd_);
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

CsvTable::CsvTable(fs::path path, const std::string& header, long long restarted_at, bool root)
    : path_(std::move(path)) {
  if (!root) return;
  std::error_code ec;
  bool append = false;
  if (restarted_at >= 0 && fs::is_regular_file(path_, ec)) {
    // The header and the rows up to the restart's step, written back
    // atomically: a table that is not this one's is started anew.
    std::ifstream in(path_);
    std::string line, kept;
    if (std::getline(in, line) && line == header) {
      kept = line + '\n';
      while (std::getline(in, line)) {
        long long step = -1;
        const char* end = line.data() + line.size();
        const auto [ptr, err] = std::from_chars(line.data(), end, step);
        if (err != std::errc() || ptr == end || *ptr != ',' || step > restarted_at) break;
        kept += line + '\n';
      }
      files::write_atomic(path_.string(), kept);
      append = true;
    }
  }
  if (const std::string why = files::not_replaceable(path_.string()); !why.empty()) {
    throw Error("will not write '" + path_.string() + "': it " + why +
                ", and kpmap replaces only regular files");
  }
  // A new table is a new file (written and renamed), never the old one
  // truncated: that may be a hard link to a file elsewhere.
  if (!append) files::write_atomic(path_.string(), header + '\n');
  owner_.reset(std::fopen(path_.c_str(), "a"));
  file_ = owner_.get();
  if (file_ == nullptr) {
    throw Error("cannot write '" + path_.string() +
                "': " + files::write_failure_reason(path_.string(), errno));
  }
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

int write_result(nlohmann::ordered_json& result, const fs::path& dir, int stopped_by,
                 const std::string& checkpoint, const PhaseTimes::Report& report, bool root) {
  // The hosts the ranks ran on, after "ranks" (a scaling study's node column).
  if (Runtime::active() && result.contains("ranks") && !result.contains("nodes")) {
    nlohmann::ordered_json with_nodes;
    for (auto& [key, value] : result.items()) {
      with_nodes[key] = std::move(value);
      if (key == "ranks") with_nodes["nodes"] = Runtime::current().node_count();
    }
    result = std::move(with_nodes);
  }
  result["stopped_by"] = stopped_by ? StopSignals::name(stopped_by) : "";
  result["checkpoint"] = checkpoint;
  result["timing"] = to_json(report);
  // JSON has no NaN or infinity: they are written as null.
  if (root) {
    files::write_atomic(
        (dir / run_file::result).string(),
        result.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
  }
  return stopped_by ? exit_code::stopped : exit_code::success;
}

std::string short_list(const std::vector<double>& v, int digits) {
  constexpr std::size_t shown = 8;  // at each end
  std::ostringstream s;
  s.precision(digits);
  s << "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v.size() > 2 * shown && i == shown) {
      s << ", ... " << v.size() - 2 * shown << " more ...";
      i = v.size() - shown - 1;
      continue;
    }
    s << (i ? ", " : "") << v[i];
  }
  return s.str() + "]";
}

std::string shell_quoted(const std::string& s) {
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string plot_command(const fs::path& dir) { return "kpmap-plot " + shell_quoted(dir.string()); }

long long progress_cadence(long long every, long long planned) {
  if (every >= 0) return every;
  return planned <= 20 ? 1 : (planned + 14) / 15;
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
