// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/base/detail/finalize.hpp>
#include <kpmap/base/error.hpp>
#include <kpmap/base/files.hpp>
#include <kpmap/tools/trace.hpp>
#include <kpmap/transport/host.hpp>
#include <kpmap/transport/mpi_ops.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace kpmap::trace {

namespace detail {
bool g_enabled = false;
}  // namespace detail

namespace {

struct Open {
  std::string name;
  Track track;
  double start;
};

// One closed event: what the file shows of it.
struct Event {
  std::string name;
  Track track;
  double ts, dur;  // microseconds since recording started
  Args args;
};

std::vector<Open> g_open;
std::vector<Event> g_events;
std::string g_path;
MPI_Comm g_comm = MPI_COMM_NULL;
double g_t0 = 0;
int g_rank = 0;
// A long run would grow the trace without bound: past this many events per
// rank (KPMAP_TRACE_MAX_EVENTS, default one million, about 150 MB of JSON),
// later events are counted, not kept, and the file says so (at most 5 million).
long long g_max_events = 1000000;
long long g_dropped = 0;

using Json = nlohmann::ordered_json;

Json to_json(const Event& e, int rank) {
  Json j{{"name", e.name}, {"ph", "X"},   {"pid", rank}, {"tid", static_cast<int>(e.track)},
         {"ts", e.ts},     {"dur", e.dur}};
  Json args = Json::object();
  if (!e.args.axis.empty()) args["axis"] = e.args.axis;
  if (e.args.bytes >= 0) args["bytes"] = e.args.bytes;
  if (e.args.arrays >= 0) args["arrays"] = e.args.arrays;
  if (e.args.path != nullptr) args["path"] = e.args.path;
  if (!args.empty()) j["args"] = std::move(args);
  return j;
}

// The names Perfetto gives each rank's process and tracks.
void metadata(Json& events, int rank) {
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", rank},
                    {"args", {{"name", "rank " + std::to_string(rank)}}}});
  events.push_back({{"name", "process_sort_index"},
                    {"ph", "M"},
                    {"pid", rank},
                    {"args", {{"sort_index", rank}}}});
  for (const auto& [tid, name] :
       {std::pair<int, const char*>{0, "compute"}, {1, "communication"}}) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", rank},
                      {"tid", tid},
                      {"args", {{"name", name}}}});
  }
}

// Why the trace cannot go to `path`, or "". It replaces only a regular file
// that is empty or a kpmap trace (never a device, a FIFO, a link, a folder,
// the input deck), and creates no folder.
std::string unwritable(const std::string& path) {
  namespace fs = std::filesystem;
  if (const std::string why = files::not_replaceable(path); !why.empty()) {
    return "it " + why + "; a trace is written only as a regular file";
  }
  std::error_code ec;
  if (fs::exists(path, ec) && fs::file_size(path, ec) > 0) {
    std::string head(18, '\0');
    if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
      head.resize(std::fread(head.data(), 1, head.size(), f));
      std::fclose(f);
    }
    if (head != "{\"displayTimeUnit\"") {
      return "it exists and is not a kpmap trace; kpmap replaces only its own traces (remove it "
             "or name another file)";
    }
  }
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    return "its folder " + parent.string() +
           " does not exist (kpmap creates no folder for a trace)";
  }
  // The probe is the temporary the write will use.
  const std::string probe = path + ".tmp";
  try {
    files::clear_temporary(probe);
  } catch (const Error& e) {
    return e.what();
  }
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot be written (" + files::write_failure_reason(probe, errno) + ")";
  ::close(fd);
  std::remove(probe.c_str());
  return "";
}

}  // namespace

// KPMAP_TRACE_MAX_EVENTS: a whole number in range, or an error naming it.
long long max_events(const std::string& value) {
  // Under 2 GiB of events for MPI_Gatherv.
  constexpr long long most = 5'000'000;
  long long n = -1;
  const char* end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data(), end, n);
  if (ec != std::errc() || ptr != end || n < 0 || n > most) {
    throw InputError("environment variable KPMAP_TRACE_MAX_EVENTS='" + value +
                         "': expected a whole number of events from 0 to " + std::to_string(most) +
                         " (the events each rank keeps)",
                     ErrorScope::all_ranks);
  }
  return n;
}

void start(const std::string& path, MPI_Comm comm) {
  if (detail::g_enabled || path.empty()) return;
  // Refused up front, not after the run: a trace that cannot be written
  // (rank 0 writes it; the probe is the temporary the write will use).
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string why;
  if (rank == 0) why = unwritable(path);
  transport::bcast_string(why, 0, comm);
  if (!why.empty()) {
    throw InputError("trace file " + path + ": " + why, ErrorScope::all_ranks);
  }
  MPI_Comm_dup(comm, &g_comm);
  MPI_Comm_rank(g_comm, &g_rank);
  g_path = path;
  g_events.reserve(1 << 14);
  if (const char* m = std::getenv("KPMAP_TRACE_MAX_EVENTS"); m != nullptr && *m != '\0') {
    g_max_events = max_events(m);
  }
  MPI_Barrier(g_comm);  // the ranks' clocks start together
  g_t0 = MPI_Wtime();
  detail::g_enabled = true;
  kpmap::detail::at_finalize([] { finish(); });
}

const std::string& path() noexcept {
  static const std::string none;
  return detail::g_enabled ? g_path : none;
}

void discard() noexcept {
  detail::g_enabled = false;
  g_events.clear();
  g_open.clear();
}

void check_environment() {
  if (const char* m = std::getenv("KPMAP_TRACE_MAX_EVENTS"); m != nullptr && *m != '\0') {
    max_events(m);
  }
}

void begin(const std::string& name, Track track) { g_open.push_back({name, track, MPI_Wtime()}); }

Args& Args::operator+=(const Args& more) {
  if (!more.axis.empty()) axis = more.axis;
  if (more.bytes >= 0) bytes = more.bytes;
  if (more.arrays >= 0) arrays = more.arrays;
  if (more.path != nullptr) path = more.path;
  return *this;
}

void end(const Args& args) {
  if (g_open.empty()) return;
  Open o = std::move(g_open.back());
  g_open.pop_back();
  const double now = MPI_Wtime();
  if (static_cast<long long>(g_events.size()) >= g_max_events) {
    ++g_dropped;
    return;
  }
  // Microseconds to the nanosecond: MPI_Wtime's resolution, and short text.
  auto us = [](double seconds) { return std::round(1e9 * seconds) / 1e3; };
  g_events.push_back({std::move(o.name), o.track, us(o.start - g_t0), us(now - o.start), args});
}

bool finish() {
  if (!detail::g_enabled) return true;
  detail::g_enabled = false;
  int size = 1;
  MPI_Comm_size(g_comm, &size);
  long long dropped = g_dropped;
  transport::host_allreduce(&dropped, 1, MPI_SUM, g_comm);
  // Each rank's events as JSON array elements ("{...},\n"), gathered on rank 0
  // and spliced into one traceEvents array.
  std::string mine;
  for (const Event& e : g_events) {
    mine += to_json(e, g_rank).dump(-1, ' ', false, Json::error_handler_t::replace) + ",\n";
  }
  const int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<std::size_t>(size)), offsets(lengths.size());
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, g_comm);
  std::string all;
  if (g_rank == 0) {
    int total = 0;
    for (int r = 0; r < size; ++r) {
      offsets[r] = total;
      total += lengths[r];
    }
    all.resize(static_cast<std::size_t>(total));
  }
  MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
              0, g_comm);
  int written = 1;
  if (g_rank == 0) {
    Json head;
    head["displayTimeUnit"] = "ms";
    head["otherData"] = {{"dropped_events", dropped}};
    Json names = Json::array();
    for (int r = 0; r < size; ++r) metadata(names, r);
    head["traceEvents"] = std::move(names);
    // The document with the metadata events, then the ranks' events before
    // its closing "]}".
    std::string text = head.dump(-1, ' ', false, Json::error_handler_t::replace);
    text.resize(text.size() - 2);
    text += ",\n" + all;
    text.resize(text.size() - 2);  // the last ",\n"
    text += "\n]}\n";
    try {
      files::write_atomic(g_path, text);
      std::printf("kpmap: trace of %d rank(s) written to %s (open it in ui.perfetto.dev)\n", size,
                  g_path.c_str());
      if (dropped > 0) {
        std::printf(
            "kpmap: the trace holds the first %lld events of each rank; %lld later ones "
            "were not kept (raise KPMAP_TRACE_MAX_EVENTS)\n",
            g_max_events, dropped);
      }
    } catch (const Error& e) {
      std::fprintf(stderr, "kpmap: error: the trace was not written: %s\n", e.what());
      written = 0;
    }
  }
  transport::host_bcast(&written, 1, 0, g_comm);
  g_events.clear();
  g_open.clear();
  g_dropped = 0;
  MPI_Comm_free(&g_comm);
  return written != 0;
}

}  // namespace kpmap::trace
