// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/collectives/checked.hpp>

#include <kpmap/base/error.hpp>
#include <kpmap/transport/mpi_ops.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kpmap {

namespace {

std::optional<bool> g_checked_override;

bool checked_default() {
  if (const char* v = std::getenv("KPMAP_CHECK")) {
    const std::string s(v);
    if (s == "1" || s == "on" || s == "yes" || s == "true") return true;
    if (s == "0" || s == "off" || s == "no" || s == "false" || s.empty()) return false;
    throw InputError("environment variable KPMAP_CHECK='" + s +
                     "' is not allowed: expected 0 or 1");
  }
#if defined(KPMAP_CHECKED_DEFAULT)
  return true;
#else
  return false;
#endif
}

// A fixed-size record of a Signature, gathered across the axis as bytes.
struct Record {
  char op[24];
  char type[16];
  char arg[40];
  std::int64_t rank;
  std::int64_t extents[detail::max_view_rank];
  std::int64_t param;
};

void copy_text(char* dst, std::size_t n, const std::string& s) {
  std::memset(dst, 0, n);
  std::memcpy(dst, s.data(), std::min(n - 1, s.size()));
}

Record to_record(const detail::Signature& s) {
  Record r;
  copy_text(r.op, sizeof(r.op), s.op);
  copy_text(r.type, sizeof(r.type), s.type);
  copy_text(r.arg, sizeof(r.arg), s.arg);
  r.rank = s.rank;
  for (int d = 0; d < detail::max_view_rank; ++d) {
    r.extents[d] = d < s.rank ? static_cast<std::int64_t>(s.extents[d]) : 1;
  }
  r.param = s.param;
  return r;
}

bool is_tree(const Record& r) { return std::strncmp(r.arg, "tree of ", 8) == 0; }

bool same(const Record& a, const Record& b) {
  return std::strcmp(a.op, b.op) == 0 && std::strcmp(a.type, b.type) == 0 && a.rank == b.rank &&
         std::memcmp(a.extents, b.extents, sizeof(a.extents)) == 0 && a.param == b.param;
}

std::string describe(const Record& r) {
  std::string s = std::string(r.op) + " of " + r.type;
  if (r.rank == 0) return s + " scalar";
  s += " shape (";
  for (int d = 0; d < r.rank; ++d) s += (d ? ", " : "") + std::to_string(r.extents[d]);
  s += ")";
  if (r.param != 0 && !is_tree(r)) s += " [parameter " + std::to_string(r.param) + "]";
  return s;
}

// The lines of a tree's leaves as one text, and back.
std::string join_lines(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}
std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> lines;
  std::size_t from = 0;
  for (std::size_t at = s.find('\n'); at != std::string::npos; at = s.find('\n', from)) {
    lines.push_back(s.substr(from, at - from));
    from = at + 1;
  }
  return lines;
}

// Where two ranks' trees first differ: a leaf's shape, the leaf itself, or
// the number of leaves.
std::string first_difference(const std::vector<std::string>& ours,
                             const std::vector<std::string>& theirs, int other) {
  const std::string them = "axis rank " + std::to_string(other);
  const auto leaf = [](const std::string& line) { return line.substr(0, line.find('\t')); };
  const auto shape = [](const std::string& line) {
    const auto tab = line.find('\t');
    return tab == std::string::npos ? std::string() : line.substr(tab + 1);
  };
  for (std::size_t i = 0; i < std::min(ours.size(), theirs.size()); ++i) {
    if (ours[i] == theirs[i]) continue;
    if (leaf(ours[i]) == leaf(theirs[i])) {
      return leaf(ours[i]) + " has shape " + shape(ours[i]) + " on axis rank 0 but " +
             shape(theirs[i]) + " on " + them;
    }
    return "axis rank 0 has " + leaf(ours[i]) + " " + shape(ours[i]) + " where " + them + " has " +
           leaf(theirs[i]) + " " + shape(theirs[i]);
  }
  const bool more_here = ours.size() > theirs.size();
  const auto& longer = more_here ? ours : theirs;
  const std::size_t common = std::min(ours.size(), theirs.size());
  const auto count = [](std::size_t n) {
    return std::to_string(n) + (n == 1 ? " leaf" : " leaves");
  };
  return "axis rank 0 passes " + count(ours.size()) + " of this type, " + them + " " +
         std::to_string(theirs.size()) + "; the first that only " +
         (more_here ? std::string("axis rank 0") : them) + " passes: " + leaf(longer[common]) +
         " " + shape(longer[common]);
}

std::uint64_t fnv1a(const void* p, std::size_t n) {
  std::uint64_t h = 1469598103934665603ull;
  const auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) {
    h ^= b[i];
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

bool checked_mode() {
  if (!g_checked_override) g_checked_override = checked_default();
  return *g_checked_override;
}

void set_checked_mode(bool on) { g_checked_override = on; }

namespace detail {

void verify_signature(const Axis& axis, const Signature& mine,
                      const std::vector<std::string>* leaves) {
  const Record rec = to_record(mine);
  std::vector<Record> all(static_cast<std::size_t>(axis.size()));
  MPI_Allgather(&rec, sizeof(Record), MPI_BYTE, all.data(), sizeof(Record), MPI_BYTE, axis.comm());
  for (int r = 1; r < axis.size(); ++r) {
    if (!same(all[0], all[r]) && is_tree(all[0]) && is_tree(all[r]) &&
        std::strcmp(all[0].op, all[r].op) == 0 && std::strcmp(all[0].type, all[r].type) == 0) {
      // Two trees of one element type: every rank sees this from the records
      // alike. The other rank's leaves go to axis rank 0, which names the
      // first that differs to everyone.
      std::string message;
      const int me = axis.index();
      if (me == r) {
        const std::string text =
            join_lines(leaves != nullptr ? *leaves : std::vector<std::string>{});
        MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, 0, 12, axis.comm());
      } else if (me == 0) {
        MPI_Status status;
        MPI_Probe(r, 12, axis.comm(), &status);
        int n = 0;
        MPI_Get_count(&status, MPI_CHAR, &n);
        std::string text(static_cast<std::size_t>(n), '\0');
        MPI_Recv(text.data(), n, MPI_CHAR, r, 12, axis.comm(), MPI_STATUS_IGNORE);
        message = first_difference(leaves != nullptr ? *leaves : std::vector<std::string>{},
                                   split_lines(text), r);
      }
      transport::bcast_string(message, 0, axis.comm());
      throw Error("kpmap checked mode: " + std::string(all[0].op) + " over axis '" + axis.name() +
                      "' called with trees that differ between ranks: " + message +
                      " (every rank of the axis must pass a tree of the same leaves, each of the "
                      "same shape)",
                  exit_code::failure, ErrorScope::all_ranks);
    }
    if (!same(all[0], all[r])) {
      throw Error("kpmap checked mode: collective over axis '" + axis.name() +
                      "' called differently on different ranks: argument '" + all[0].arg +
                      "': axis rank 0 called " + describe(all[0]) + ", axis rank " +
                      std::to_string(r) + " called " + describe(all[r]) +
                      " (every rank of the axis must call the same collectives in the same "
                      "order with the same shapes)",
                  exit_code::failure, ErrorScope::all_ranks);
    }
  }
}

void verify_identical(const Axis& axis, const std::string& what, const void* bytes,
                      std::size_t nbytes, std::size_t elem_size,
                      std::string (*format)(const void* element)) {
  const std::uint64_t mine[2] = {fnv1a(bytes, nbytes), nbytes};
  std::vector<std::uint64_t> all(2 * static_cast<std::size_t>(axis.size()));
  MPI_Allgather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, axis.comm());
  int other = -1;
  for (int r = 1; r < axis.size() && other < 0; ++r) {
    if (all[2 * r] != all[0] || all[2 * r + 1] != all[1]) other = r;
  }
  if (other < 0) return;

  // Axis rank 0 compares its bytes with the first disagreeing rank's and
  // tells everyone where they differ.
  std::string message;
  if (all[2 * other + 1] != all[1]) {
    message = "sizes differ: axis rank 0 has " + std::to_string(all[1] / elem_size) +
              " elements, axis rank " + std::to_string(other) + " has " +
              std::to_string(all[2 * other + 1] / elem_size);
  } else if (axis.index() == other) {
    MPI_Send(bytes, static_cast<int>(nbytes), MPI_BYTE, 0, 11, axis.comm());
  } else if (axis.index() == 0) {
    std::vector<unsigned char> theirs(nbytes);
    MPI_Recv(theirs.data(), static_cast<int>(nbytes), MPI_BYTE, other, 11, axis.comm(),
             MPI_STATUS_IGNORE);
    const auto* ours = static_cast<const unsigned char*>(bytes);
    for (std::size_t i = 0; i < nbytes / elem_size; ++i) {
      if (std::memcmp(ours + i * elem_size, theirs.data() + i * elem_size, elem_size) != 0) {
        message = "element " + std::to_string(i) + " is " + format(ours + i * elem_size) +
                  " on axis rank 0 " + axis.coordinates(0) + " but " +
                  format(theirs.data() + i * elem_size) + " on axis rank " + std::to_string(other) +
                  " " + axis.coordinates(other);
        break;
      }
    }
  }
  transport::bcast_string(message, 0, axis.comm());
  const std::string over = axis.differs_over(0, other);
  throw Error("kpmap checked mode: " + what + " should be replicated over axis '" + axis.name() +
                  "' but differs " +
                  (over == axis.name() ? std::string("between ranks")
                                       : "over '" + over + "' (between ranks)") +
                  ": " + message,
              exit_code::failure, ErrorScope::all_ranks);
}

}  // namespace detail
namespace detail {

namespace {
std::mutex g_in_flight_mutex;
std::vector<std::pair<std::uintptr_t, std::uintptr_t>> g_in_flight;  // [begin, end) of each sum
}  // namespace

void check_host_numbers(const char* who, const void* values, long long count,
                        std::size_t element_size) {
  if (count < 0) {
    throw InputError(std::string(who) + ": count " + std::to_string(count) +
                     " is negative; it is how many numbers to sum (0 or more)");
  }
  if (count == 0) return;
  if (values == nullptr) {
    throw InputError(std::string(who) + ": values is a null pointer, with count " +
                     std::to_string(count) + "; pass the first of the numbers to sum");
  }
  const std::size_t bytes = static_cast<std::size_t>(count) * element_size;
  if (bytes <= (std::size_t(1) << 20) && !checked_mode()) return;
  // Every page the numbers touch must be mapped: msync says ENOMEM where one
  // is not (MS_ASYNC asks nothing else of it).
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(values);
  const std::uintptr_t first = begin / page * page;
  if (::msync(reinterpret_cast<void*>(first), begin + bytes - first, MS_ASYNC) != 0 &&
      errno == ENOMEM) {
    throw InputError(std::string(who) + ": values holds " + std::to_string(count) + " numbers of " +
                     std::to_string(element_size) +
                     " bytes (count), but not all of it is this "
                     "process's memory: count is more than the array holds");
  }
}

void begin_host_sum(const char* who, const void* values, std::size_t bytes) {
  const auto begin = reinterpret_cast<std::uintptr_t>(values);
  const std::uintptr_t end = begin + bytes;
  const std::lock_guard<std::mutex> lock(g_in_flight_mutex);
  for (const auto& [b, e] : g_in_flight) {
    if (begin < e && b < end) {
      throw InputError(std::string(who) +
                       ": its numbers overlap those of a sum still in flight "
                       "over the same memory (its result is written there when it "
                       "completes); wait for that sum first, or sum other numbers");
    }
  }
  g_in_flight.emplace_back(begin, end);
}

void end_host_sum(const void* values) noexcept {
  const auto begin = reinterpret_cast<std::uintptr_t>(values);
  const std::lock_guard<std::mutex> lock(g_in_flight_mutex);
  const auto at = std::find_if(g_in_flight.begin(), g_in_flight.end(),
                               [&](const auto& r) { return r.first == begin; });
  if (at != g_in_flight.end()) g_in_flight.erase(at);
}

}  // namespace detail

}  // namespace kpmap
