#include <kpmap/error.hpp>
#include <kpmap/files.hpp>
#include <kpmap/runtime.hpp>
#include <kpmap/trace.hpp>
#include <kpmap/transport/mpi_ops.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

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

std::vector<Open> g_open;
std::string g_events;  // this rank's events, each "{...},\n"
std::string g_path;
MPI_Comm g_comm = MPI_COMM_NULL;
double g_t0 = 0;
int g_rank = 0;
// A long run would grow the trace without bound: past this many events per
// rank (KPMAP_TRACE_MAX_EVENTS, default one million, about 150 MB), later
// events are counted, not kept, and the file says so (at most 5 million).
long long g_max_events = 1000000;
long long g_kept = 0;
long long g_dropped = 0;

std::string escaped(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}

void metadata(std::string& out, int rank) {
  char line[256];
  std::snprintf(line, sizeof line,
                "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"args\": {\"name\": "
                "\"rank %d\"}},\n{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": %d, "
                "\"args\": {\"sort_index\": %d}},\n",
                rank, rank, rank, rank);
  out += line;
  for (const auto& [tid, name] :
       {std::pair<int, const char*>{0, "compute"}, {1, "communication"}}) {
    std::snprintf(line, sizeof line,
                  "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, "
                  "\"args\": {\"name\": \"%s\"}},\n",
                  rank, tid, name);
    out += line;
  }
}

}  // namespace

void start(const std::string& path, MPI_Comm comm) {
  if (detail::g_enabled || path.empty()) return;
  // Refused up front, not after the run: a trace that cannot be written
  // (rank 0 writes it; the probe is the temporary the write will use).
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string why;
  if (rank == 0) {
    // Its folder is made if missing, as --output's is.
    std::error_code ec;
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    const std::string probe = path + ".tmp";
    if (std::FILE* f = std::fopen(probe.c_str(), "w")) {
      std::fclose(f);
      std::remove(probe.c_str());
    } else {
      why = files::write_failure_reason(probe, errno);
    }
  }
  transport::bcast_string(why, 0, comm);
  if (!why.empty()) {
    throw InputError("trace file " + path + ": cannot be written (" + why + ")",
                     ErrorScope::all_ranks);
  }
  MPI_Comm_dup(comm, &g_comm);
  MPI_Comm_rank(g_comm, &g_rank);
  g_path = path;
  g_events.reserve(1 << 20);
  if (const char* m = std::getenv("KPMAP_TRACE_MAX_EVENTS"); m != nullptr && *m != '\0') {
    g_max_events = std::clamp(std::atoll(m), 0LL, 5000000LL);  // under 2 GiB for MPI_Gatherv
  }
  MPI_Barrier(g_comm);  // the ranks' clocks start together
  g_t0 = MPI_Wtime();
  detail::g_enabled = true;
  Runtime::at_finalize([] { finish(); });
}

void begin(const std::string& name, Track track) { g_open.push_back({name, track, MPI_Wtime()}); }

void end(const std::string& args) {
  if (g_open.empty()) return;
  const Open o = std::move(g_open.back());
  g_open.pop_back();
  const double now = MPI_Wtime();
  if (g_kept >= g_max_events) {
    ++g_dropped;
    return;
  }
  ++g_kept;
  char head[160];
  std::snprintf(head, sizeof head,
                "\", \"ph\": \"X\", \"pid\": %d, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f", g_rank,
                static_cast<int>(o.track), 1e6 * (o.start - g_t0), 1e6 * (now - o.start));
  g_events += "{\"name\": \"" + escaped(o.name) + head;
  if (!args.empty()) g_events += ", \"args\": {" + args + "}";
  g_events += "},\n";
}

void finish() {
  if (!detail::g_enabled) return;
  detail::g_enabled = false;
  int size = 1;
  MPI_Comm_size(g_comm, &size);
  long long dropped = g_dropped;
  MPI_Allreduce(MPI_IN_PLACE, &dropped, 1, MPI_LONG_LONG, MPI_SUM, g_comm);
  const int mine = static_cast<int>(g_events.size());
  std::vector<int> lengths(static_cast<std::size_t>(size)), offsets(lengths.size());
  MPI_Gather(&mine, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, g_comm);
  std::string all;
  if (g_rank == 0) {
    int total = 0;
    for (int r = 0; r < size; ++r) {
      offsets[r] = total;
      total += lengths[r];
    }
    all.resize(static_cast<std::size_t>(total));
  }
  MPI_Gatherv(g_events.data(), mine, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
              0, g_comm);
  if (g_rank == 0) {
    std::string text = "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"dropped_events\": " +
                       std::to_string(dropped) + "}, \"traceEvents\": [\n";
    for (int r = 0; r < size; ++r) metadata(text, r);
    text += all;
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
      std::fprintf(stderr, "kpmap: the trace was not written: %s\n", e.what());
    }
  }
  g_events.clear();
  g_open.clear();
  g_kept = g_dropped = 0;
  MPI_Comm_free(&g_comm);
}

}  // namespace kpmap::trace
