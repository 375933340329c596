// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/transport/mpi_ops.hpp>

#include <kpmap/base/error.hpp>

#include <algorithm>
#include <climits>
#include <string>

namespace kpmap::transport {

namespace {

std::size_t g_max_count = INT_MAX;

MPI_Aint extent_of(MPI_Datatype type) {
  MPI_Aint lb = 0;
  MPI_Aint extent = 0;
  MPI_Type_get_extent(type, &lb, &extent);
  return extent;
}

// `elements` past `p`. At 0 (every call that fits one message) MPI is not
// asked for the extent: a collective of a few bytes would pay for the query.
const char* at(const void* p, std::size_t elements, MPI_Datatype type) {
  if (elements == 0) return static_cast<const char*>(p);
  return static_cast<const char*>(p) + elements * static_cast<std::size_t>(extent_of(type));
}
char* at(void* p, std::size_t elements, MPI_Datatype type) {
  if (elements == 0) return static_cast<char*>(p);
  return static_cast<char*>(p) + elements * static_cast<std::size_t>(extent_of(type));
}

// A datatype describing `count` consecutive elements, so that one MPI call
// with count 1 moves more elements than an int can count. The caller frees it.
MPI_Datatype big_type(std::size_t count, MPI_Datatype type) {
  const std::size_t chunk = g_max_count;
  const std::size_t chunks = count / chunk;
  const std::size_t rest = count % chunk;
  MPI_Datatype chunk_type = MPI_DATATYPE_NULL;
  MPI_Type_contiguous(static_cast<int>(chunk), type, &chunk_type);
  int lengths[2] = {static_cast<int>(chunks), static_cast<int>(rest)};
  MPI_Aint displs[2] = {0, static_cast<MPI_Aint>(chunks * chunk) * extent_of(type)};
  MPI_Datatype types[2] = {chunk_type, type};
  MPI_Datatype big = MPI_DATATYPE_NULL;
  MPI_Type_create_struct(rest > 0 ? 2 : 1, lengths, displs, types, &big);
  // The extent must be exactly count elements, so that block j starts at j*count.
  MPI_Datatype resized = MPI_DATATYPE_NULL;
  MPI_Type_create_resized(big, 0, static_cast<MPI_Aint>(count) * extent_of(type), &resized);
  MPI_Type_commit(&resized);
  MPI_Type_free(&big);
  MPI_Type_free(&chunk_type);
  return resized;
}

// (count, type) for one MPI call moving `count` elements: the plain type when
// the count fits, else a one-element big type (freed by the returned guard).
struct OneCallCountType {
  int count;
  MPI_Datatype type;
  bool owned = false;
  OneCallCountType(std::size_t n, MPI_Datatype t) : count(static_cast<int>(n)), type(t) {
    if (n > g_max_count) {
      count = 1;
      type = big_type(n, t);
      owned = true;
    }
  }
  OneCallCountType(const OneCallCountType&) = delete;
  OneCallCountType& operator=(const OneCallCountType&) = delete;
  // Freeing a datatype used by a pending operation is allowed: MPI keeps it
  // alive until the operation completes.
  ~OneCallCountType() {
    if (owned) MPI_Type_free(&type);
  }
};

}  // namespace

std::size_t max_count() noexcept { return g_max_count; }
void set_max_count(std::size_t n) noexcept { g_max_count = std::clamp<std::size_t>(n, 1, INT_MAX); }

void allreduce(const void* send, void* recv, std::size_t count, MPI_Datatype type, MPI_Op op,
               MPI_Comm comm, Pending* pending) {
  const bool in_place = send == MPI_IN_PLACE;
  for (std::size_t off = 0; off < count || (count == 0 && off == 0); off += g_max_count) {
    const int n = static_cast<int>(std::min(count - off, g_max_count));
    const void* s = in_place ? MPI_IN_PLACE : at(send, off, type);
    void* r = at(recv, off, type);
    if (pending) {
      pending->emplace_back();
      check_mpi(MPI_Iallreduce(s, r, n, type, op, comm, &pending->back()), "MPI_Iallreduce");
    } else {
      check_mpi(MPI_Allreduce(s, r, n, type, op, comm), "MPI_Allreduce");
    }
    if (count == 0) break;
  }
}

void bcast(void* buf, std::size_t count, MPI_Datatype type, int root, MPI_Comm comm,
           Pending* pending) {
  for (std::size_t off = 0; off < count || (count == 0 && off == 0); off += g_max_count) {
    const int n = static_cast<int>(std::min(count - off, g_max_count));
    if (pending) {
      pending->emplace_back();
      check_mpi(MPI_Ibcast(at(buf, off, type), n, type, root, comm, &pending->back()),
                "MPI_Ibcast");
    } else {
      check_mpi(MPI_Bcast(at(buf, off, type), n, type, root, comm), "MPI_Bcast");
    }
    if (count == 0) break;
  }
}

void allgather(const void* send, void* recv, std::size_t count, MPI_Datatype type, MPI_Comm comm,
               Pending* pending) {
  const OneCallCountType d(count, type);
  if (pending) {
    pending->emplace_back();
    check_mpi(MPI_Iallgather(send, d.count, d.type, recv, d.count, d.type, comm, &pending->back()),
              "MPI_Iallgather");
  } else {
    check_mpi(MPI_Allgather(send, d.count, d.type, recv, d.count, d.type, comm), "MPI_Allgather");
  }
}

namespace {
bool fits(const std::vector<std::size_t>& counts) {
  std::size_t total = 0;
  for (auto c : counts) total += c;
  return total <= g_max_count;
}
std::vector<int> int_displs(const std::vector<std::size_t>& counts) {
  std::vector<int> d(counts.size());
  std::size_t off = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    d[r] = static_cast<int>(off);
    off += counts[r];
  }
  return d;
}
}  // namespace

namespace {
// Copies count elements from src to dst through MPI itself, so that it works
// for device pointers handed to a GPU-aware MPI as well as for host memory.
void self_copy(const void* src, void* dst, std::size_t count, MPI_Datatype type, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const OneCallCountType d(count, type);
  check_mpi(MPI_Sendrecv(src, d.count, d.type, rank, 9, dst, d.count, d.type, rank, 9, comm,
                         MPI_STATUS_IGNORE),
            "MPI_Sendrecv (self copy)");
}

// Uneven gathers (to_root) and scatters (!to_root) too large for the v-variants'
// int counts: block by block between the root's buffer of all blocks and each
// rank's own block. A block in the root's buffer is only read or only written,
// depending on the direction.
void rooted_blocks(void* blocks, void* mine, const std::vector<std::size_t>& counts,
                   MPI_Datatype type, int root, MPI_Comm comm, bool to_root) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  constexpr int tag = 7;
  std::size_t off = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    const int peer = static_cast<int>(r);
    const OneCallCountType d(counts[r], type);
    void* block = rank == root ? at(blocks, off, type) : nullptr;
    if (rank == root && peer == root) {
      to_root ? self_copy(mine, block, counts[r], type, comm)
              : self_copy(block, mine, counts[r], type, comm);
    } else if (rank == root) {
      check_mpi(to_root ? MPI_Recv(block, d.count, d.type, peer, tag, comm, MPI_STATUS_IGNORE)
                        : MPI_Send(block, d.count, d.type, peer, tag, comm),
                to_root ? "MPI_Recv" : "MPI_Send");
    } else if (rank == peer) {
      check_mpi(to_root ? MPI_Send(mine, d.count, d.type, root, tag, comm)
                        : MPI_Recv(mine, d.count, d.type, root, tag, comm, MPI_STATUS_IGNORE),
                to_root ? "MPI_Send" : "MPI_Recv");
    }
    off += counts[r];
  }
}
}  // namespace

// Uneven gathers and scatters are rare and blocking: the int count arrays of
// the v-variants would have to outlive a non-blocking request.
void allgatherv(const void* send, void* recv, const std::vector<std::size_t>& counts,
                MPI_Datatype type, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (fits(counts)) {
    std::vector<int> c(counts.begin(), counts.end());
    auto displs = int_displs(counts);
    check_mpi(MPI_Allgatherv(send, c[rank], type, recv, c.data(), displs.data(), type, comm),
              "MPI_Allgatherv");
    return;
  }
  // Large totals: every rank broadcasts its block in turn.
  std::size_t off = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    void* dst = at(recv, off, type);
    if (static_cast<int>(r) == rank && send != MPI_IN_PLACE) {
      self_copy(send, dst, counts[r], type, comm);
    }
    bcast(dst, counts[r], type, static_cast<int>(r), comm, nullptr);
    off += counts[r];
  }
}

void allgatherv_inplace(void* buf, const int* counts, const int* displs, MPI_Datatype type,
                        MPI_Comm comm, Pending* pending) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  std::size_t end = 0;
  for (int j = 0; j < size; ++j) {
    end = std::max(end, static_cast<std::size_t>(displs[j]) + static_cast<std::size_t>(counts[j]));
  }
  if (end <= g_max_count) {
    if (pending) {
      pending->emplace_back();
      check_mpi(
          MPI_Iallgatherv(MPI_IN_PLACE, 0, type, buf, counts, displs, type, comm, &pending->back()),
          "MPI_Iallgatherv");
    } else {
      check_mpi(MPI_Allgatherv(MPI_IN_PLACE, 0, type, buf, counts, displs, type, comm),
                "MPI_Allgatherv");
    }
    return;
  }
  // Past int counts (lowered for tests): every block broadcast from its owner.
  for (int j = 0; j < size; ++j) {
    if (counts[j] == 0) continue;
    bcast(at(buf, static_cast<std::size_t>(displs[j]), type), static_cast<std::size_t>(counts[j]),
          type, j, comm, pending);
  }
}

void gatherv(const void* send, void* recv, const std::vector<std::size_t>& counts,
             MPI_Datatype type, int root, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (fits(counts)) {
    std::vector<int> c(counts.begin(), counts.end());
    auto displs = int_displs(counts);
    check_mpi(MPI_Gatherv(send, c[rank], type, recv, c.data(), displs.data(), type, root, comm),
              "MPI_Gatherv");
    return;
  }
  rooted_blocks(recv, const_cast<void*>(send), counts, type, root, comm, /*to_root=*/true);
}

void scatterv(const void* send, void* recv, const std::vector<std::size_t>& counts,
              MPI_Datatype type, int root, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (fits(counts)) {
    std::vector<int> c(counts.begin(), counts.end());
    auto displs = int_displs(counts);
    check_mpi(MPI_Scatterv(send, c.data(), displs.data(), type, recv, c[rank], type, root, comm),
              "MPI_Scatterv");
    return;
  }
  rooted_blocks(const_cast<void*>(send), recv, counts, type, root, comm, /*to_root=*/false);
}

void alltoall(const void* send, void* recv, std::size_t count, MPI_Datatype type, MPI_Comm comm,
              Pending* pending) {
  const OneCallCountType d(count, type);
  if (pending) {
    pending->emplace_back();
    check_mpi(MPI_Ialltoall(send, d.count, d.type, recv, d.count, d.type, comm, &pending->back()),
              "MPI_Ialltoall");
  } else {
    check_mpi(MPI_Alltoall(send, d.count, d.type, recv, d.count, d.type, comm), "MPI_Alltoall");
  }
}

void reduce_scatter_block(const void* send, void* recv, std::size_t count, MPI_Datatype type,
                          MPI_Op op, MPI_Comm comm, Pending* pending) {
  if (count <= g_max_count) {
    const int n = static_cast<int>(count);
    if (pending) {
      pending->emplace_back();
      check_mpi(MPI_Ireduce_scatter_block(send, recv, n, type, op, comm, &pending->back()),
                "MPI_Ireduce_scatter_block");
    } else {
      check_mpi(MPI_Reduce_scatter_block(send, recv, n, type, op, comm),
                "MPI_Reduce_scatter_block");
    }
    return;
  }
  // Large blocks: reduce each block to its owner in int-sized pieces.
  int size = 1;
  MPI_Comm_size(comm, &size);
  for (int j = 0; j < size; ++j) {
    for (std::size_t off = 0; off < count; off += g_max_count) {
      const int n = static_cast<int>(std::min(count - off, g_max_count));
      const void* s = at(send, static_cast<std::size_t>(j) * count + off, type);
      void* r = at(recv, off, type);
      if (pending) {
        pending->emplace_back();
        check_mpi(MPI_Ireduce(s, r, n, type, op, j, comm, &pending->back()), "MPI_Ireduce");
      } else {
        check_mpi(MPI_Reduce(s, r, n, type, op, j, comm), "MPI_Reduce");
      }
    }
  }
}

void reduce_scatter(const void* send, void* recv, const int* counts, MPI_Datatype type, MPI_Op op,
                    MPI_Comm comm, Pending* pending) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  std::size_t total = 0;
  bool fits = true;
  for (int j = 0; j < size; ++j) {
    total += static_cast<std::size_t>(counts[j]);
    fits = fits && static_cast<std::size_t>(counts[j]) <= g_max_count;
  }
  if (fits && total <= g_max_count) {
    if (pending) {
      pending->emplace_back();
      check_mpi(MPI_Ireduce_scatter(send, recv, counts, type, op, comm, &pending->back()),
                "MPI_Ireduce_scatter");
    } else {
      check_mpi(MPI_Reduce_scatter(send, recv, counts, type, op, comm), "MPI_Reduce_scatter");
    }
    return;
  }
  // Large blocks: reduce each block to its owner in int-sized pieces.
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::size_t first = 0;
  for (int j = 0; j < size; ++j) {
    const auto count = static_cast<std::size_t>(counts[j]);
    for (std::size_t off = 0; off < count; off += g_max_count) {
      const int n = static_cast<int>(std::min(count - off, g_max_count));
      const void* s = at(send, first + off, type);
      void* r = j == rank ? at(recv, off, type) : nullptr;
      if (pending) {
        pending->emplace_back();
        check_mpi(MPI_Ireduce(s, r, n, type, op, j, comm, &pending->back()), "MPI_Ireduce");
      } else {
        check_mpi(MPI_Reduce(s, r, n, type, op, j, comm), "MPI_Reduce");
      }
    }
    first += count;
  }
}

void sendrecv(const void* send, void* recv, std::size_t count, MPI_Datatype type, int dest,
              int source, int tag, MPI_Comm comm, Pending* pending) {
  const OneCallCountType d(count, type);
  if (pending) {
    pending->emplace_back();
    check_mpi(MPI_Irecv(recv, d.count, d.type, source, tag, comm, &pending->back()), "MPI_Irecv");
    pending->emplace_back();
    check_mpi(MPI_Isend(send, d.count, d.type, dest, tag, comm, &pending->back()), "MPI_Isend");
  } else {
    check_mpi(MPI_Sendrecv(send, d.count, d.type, dest, tag, recv, d.count, d.type, source, tag,
                           comm, MPI_STATUS_IGNORE),
              "MPI_Sendrecv");
  }
}

void wait_all(Pending& pending) {
  if (pending.empty()) return;
  const int rc = MPI_Waitall(static_cast<int>(pending.size()), pending.data(), MPI_STATUSES_IGNORE);
  pending.clear();
  check_mpi(rc, "MPI_Waitall");
}

bool test_all(Pending& pending) {
  if (pending.empty()) return true;
  int done = 0;
  check_mpi(
      MPI_Testall(static_cast<int>(pending.size()), pending.data(), &done, MPI_STATUSES_IGNORE),
      "MPI_Testall");
  if (done) pending.clear();
  return done != 0;
}

void bcast_string(std::string& text, int root, MPI_Comm comm) {
  int length = static_cast<int>(text.size());
  check_mpi(MPI_Bcast(&length, 1, MPI_INT, root, comm), "MPI_Bcast (string length)");
  text.resize(static_cast<std::size_t>(length));
  check_mpi(MPI_Bcast(text.data(), length, MPI_CHAR, root, comm), "MPI_Bcast (string)");
}

}  // namespace kpmap::transport
