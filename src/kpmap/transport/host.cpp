// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/transport/host.hpp>

#include <kpmap/base/detail/mpi_util.hpp>
#include <kpmap/base/error.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace kpmap::transport {

using detail::check_mpi;
using detail::rank_list;

int sum_below(int value, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  int below = 0;
  check_mpi(MPI_Exscan(&value, &below, 1, MPI_INT, MPI_SUM, comm), "MPI_Exscan (sum_below)");
  return rank == 0 ? 0 : below;  // MPI_Exscan leaves rank 0's result undefined
}

void agree(MPI_Comm comm, const std::string& error, int code, ErrorScope scope) {
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int mine = error.empty() ? size : rank;
  int first = size;
  check_mpi(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce (agree)");
  if (first == size) return;
  std::string message = error;
  bcast_string(message, first, comm);
  throw Error(message, code, scope);
}

namespace {

constexpr char end_of_name = '\x1f';
constexpr char end_of_item = '\x1e';

std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t h = 14695981039346656037ull;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

std::vector<Identity> unpack(std::string_view text) {
  std::vector<Identity> items;
  while (!text.empty()) {
    const auto name_end = text.find(end_of_name);
    const auto item_end = text.find(end_of_item);
    if (name_end == std::string_view::npos || item_end == std::string_view::npos) break;
    items.push_back({std::string(text.substr(0, name_end)),
                     std::string(text.substr(name_end + 1, item_end - name_end - 1))});
    text.remove_prefix(item_end + 1);
  }
  return items;
}

// "ranks 0-1 (host nodeA)", "rank 4 (hosts nodeA, nodeC)".
std::string ranks_and_hosts(const std::vector<int>& ranks,
                            const std::vector<std::string>& host_of) {
  std::vector<std::string> hosts;
  for (const int r : ranks) {
    const auto& h = host_of[static_cast<std::size_t>(r)];
    if (std::find(hosts.begin(), hosts.end(), h) == hosts.end()) hosts.push_back(h);
  }
  std::string s = std::string(ranks.size() > 1 ? "ranks " : "rank ") + rank_list(ranks) +
                  (hosts.size() > 1 ? " (hosts " : " (host ");
  for (std::size_t i = 0; i < hosts.size() && i < 3; ++i) s += (i ? ", " : "") + hosts[i];
  if (hosts.size() > 3) s += " and " + std::to_string(hosts.size() - 3) + " more";
  return s + ")";
}

}  // namespace

std::string disagreement(MPI_Comm comm, const std::vector<Identity>& items) {
  std::string mine;
  for (const auto& item : items) mine += item.name + end_of_name + item.value + end_of_item;
  const std::uint64_t digest = fnv1a(mine);
  // The least digest and the least complement (the greatest digest) at once.
  std::uint64_t least[2] = {digest, ~digest};
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, least, 2, MPI_UINT64_T, MPI_MIN, comm),
            "MPI_Allreduce (disagreement)");
  if (least[0] == ~least[1]) return "";

  int size = 1;
  MPI_Comm_size(comm, &size);
  const auto n = static_cast<std::size_t>(size);
  const int length = static_cast<int>(mine.size());
  std::vector<int> lengths(n);
  check_mpi(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm),
            "MPI_Allgather (disagreement)");
  std::vector<int> offsets(n, 0);
  for (std::size_t r = 1; r < n; ++r) offsets[r] = offsets[r - 1] + lengths[r - 1];
  std::string all(static_cast<std::size_t>(offsets[n - 1] + lengths[n - 1]), '\0');
  check_mpi(MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(),
                           offsets.data(), MPI_CHAR, comm),
            "MPI_Allgatherv (disagreement)");
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int name_length = 0;
  MPI_Get_processor_name(name, &name_length);
  std::vector<char> names(n * MPI_MAX_PROCESSOR_NAME);
  check_mpi(MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(),
                          MPI_MAX_PROCESSOR_NAME, MPI_CHAR, comm),
            "MPI_Allgather (disagreement)");

  std::vector<std::vector<Identity>> held(n);
  std::vector<std::string> host_of(n);
  std::vector<std::string> order;  // every item's name, in the order ranks list them
  for (std::size_t r = 0; r < n; ++r) {
    held[r] = unpack(std::string_view(all).substr(static_cast<std::size_t>(offsets[r]),
                                                  static_cast<std::size_t>(lengths[r])));
    const char* h = names.data() + r * MPI_MAX_PROCESSOR_NAME;
    host_of[r].assign(h, std::find(h, h + MPI_MAX_PROCESSOR_NAME, '\0'));
    for (const auto& item : held[r]) {
      if (std::find(order.begin(), order.end(), item.name) == order.end()) {
        order.push_back(item.name);
      }
    }
  }
  std::string message;
  int differing = 0;
  for (const auto& item_name : order) {
    std::vector<std::string> values;           // each value, in the order of its first rank
    std::vector<std::vector<int>> ranks_with;  // the ranks that hold it
    for (std::size_t r = 0; r < n; ++r) {
      std::string value = "not known";  // a rank (another build) that has no such item
      for (const auto& item : held[r]) {
        if (item.name == item_name) value = item.value;
      }
      const auto at = std::find(values.begin(), values.end(), value);
      if (at == values.end()) {
        values.push_back(value);
        ranks_with.push_back({static_cast<int>(r)});
      } else {
        ranks_with[static_cast<std::size_t>(at - values.begin())].push_back(static_cast<int>(r));
      }
    }
    if (values.size() == 1) continue;
    if (++differing > 3) continue;
    if (!message.empty()) message += "; ";
    message += item_name + " is ";
    for (std::size_t v = 0; v < values.size() && v < 4; ++v) {
      message += std::string(v == 0                             ? ""
                             : v + 1 == values.size() || v == 3 ? " but "
                                                                : ", ") +
                 values[v] + " on " + ranks_and_hosts(ranks_with[v], host_of);
    }
    if (values.size() > 4) message += " and " + std::to_string(values.size() - 4) + " other values";
  }
  if (differing > 3) message += " (and " + std::to_string(differing - 3) + " more that differ)";
  return message.empty() ? "the ranks hold different values" : message;
}

bool first_at_index(int index, MPI_Comm comm) {
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::vector<int> all(static_cast<std::size_t>(size));
  check_mpi(MPI_Allgather(&index, 1, MPI_INT, all.data(), 1, MPI_INT, comm),
            "MPI_Allgather (first_at_index)");
  return std::find(all.begin(), all.begin() + rank, index) == all.begin() + rank;
}

}  // namespace kpmap::transport
