// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Parallel HDF5 checkpoints: distributed Views as global datasets,
/// atomic writes, validated restarts on any rank count.
///
/// Layout of a file (docs/checkpoints.md): attributes on the root group
/// (`kpmap_version`, `app`, `step`, `time`, `ranks`, `decomposition`,
/// `deck`, `rng_state`) and one dataset per array, each with the XXH3 hash of
/// every block written (`checksum_blocks`), which a read checks at any rank
/// count and in any decomposition.
///
/// Every function here is collective over the communicator given to the
/// Writer or Reader; errors are raised on every rank alike (ErrorScope::all_ranks),
/// except a write, flush or close that fails inside HDF5 (a full disk, an I/O
/// error): after one, parallel HDF5 cannot be closed collectively, so the
/// rank that saw it removes the temporary file and raises the error alone
/// (ErrorScope::this_rank), which ends the job.

#include <kpmap/base/detail/backend.hpp>
#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/base/detail/view_utils.hpp>
#include <kpmap/base/error.hpp>
#include <kpmap/tools/profiling.hpp>
#include <kpmap/transport/buffer_pool.hpp>

#include <mpi.h>
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kpmap::checkpoint {

/// \brief Where this rank's block lies in a global array: a block
/// decomposition along any of its dimensions, or a range of its elements
/// in row-major order (flat_range).
struct Block {
  std::vector<std::size_t> global;  ///< extents of the whole array
  std::vector<std::size_t> offset;  ///< first global index of this rank's block
  std::vector<std::size_t> count;   ///< extents of this rank's block
  /// The block is elements [offset[0], offset[0] + count[0]) of the whole
  /// array's row-major order, not a box: it may begin and end inside a row.
  bool flat = false;
  /// For a flat block: the box of the array (first index, extents) in whose
  /// row-major order offset[0] counts, rather than the whole array's. Empty:
  /// the whole array. A rank's part of its box of an array split over
  /// another mesh axis (flat_range_in).
  std::vector<std::size_t> box_offset{}, box_count{};
  /// The same elements as another rank's block, which answers for them: a
  /// write writes nothing of a copy (a replica's block, such as the ranks of
  /// a data axis that hold the same block of a layer split over "model"); a
  /// read reads it as any block.
  bool copy = false;
};

/// \brief The block of rows [begin, begin + rows) of an array whose other
/// dimensions are whole: the decomposition kpmap::shard uses.
Block row_block(std::vector<std::size_t> global, std::size_t begin, std::size_t rows);

/// \brief A block that is the whole array (replicated data).
Block whole(std::vector<std::size_t> global);

/// \brief Elements [begin, begin + count) of the row-major order of an
/// array of extents `global`, held in a View of rank 1: a rank's part of an
/// array flattened and split evenly over the ranks (sharded training state),
/// whatever the array's shape.
Block flat_range(std::vector<std::size_t> global, std::size_t begin, std::size_t count);

/// \brief Elements [begin, begin + count) of the row-major order of `box`, a
/// block of its array that is a box (not flat), held in a View of rank 1: a
/// rank's part of a box flattened and split over the ranks (the sharded
/// training state of a layer whose box is this rank's over another axis).
Block flat_range_in(const Block& box, std::size_t begin, std::size_t count);

/// \brief What a checkpoint says about itself.
struct Metadata {
  std::string app;            ///< the application that wrote it
  long long step = 0;         ///< time step or epoch
  double time = 0.0;          ///< simulated time (s), or 0
  std::string deck;           ///< the resolved deck text
  std::string decomposition;  ///< e.g. "3 ranks, rows split in blocks"
  std::string rng_state;      ///< serialised RNG state, where there is one
  /// An application's own integers (kpmap-train's position: epoch, batch,
  /// optimizer steps, seed), written as int64 root attributes of these names
  /// and read back with Reader::integer.
  std::vector<std::pair<std::string, std::int64_t>> integers;
  int ranks = 0;              ///< rank count of the writer (filled in on write)
  std::string kpmap_version;  ///< filled in on write
};

namespace detail {
/// The same elements as a block of the array seen as one dimension: a
/// flat_range as such; any other block as it is. Checksums number elements
/// by their row-major index, so both forms give the same.
Block linear(const Block& b);

/// Whether `b` is every element of its array.
bool covers_all(const Block& b);

/// A run of a flat block's elements that is a box of the array: its box, and
/// where the run starts in the block's elements.
struct Piece {
  Block box;
  std::size_t at = 0;
};
/// A flat block as the fewest boxes of the array that hold its elements in
/// order (a partial first row, whole rows, a partial last row, recursively);
/// a box as itself.
std::vector<Piece> pieces(const Block& b);

/// A part of a block read or written on its own: its block (a block of the
/// same array), and where its elements start among the block's.
struct Slab {
  Block block;
  std::size_t at = 0;
};
/// \brief `b` cut in order into parts of about `bytes` bytes of
/// `elem_bytes`-byte elements, small enough to stay in the processor's cache
/// between the I/O that moves a part and the hash that reads it: a box
/// along its first dimension (whole rows; a row larger than `bytes` is one
/// part), a flat block along its range. Always at least one part, in b's
/// order: hashing the parts one after another hashes b.
std::vector<Slab> slabs(const Block& b, std::size_t elem_bytes, std::size_t bytes);

/// The size of the parts a checkpoint writes, reads and hashes one at a
/// time: 4 MiB, in the last-level cache of any processor kpmap runs on, and
/// large enough that HDF5's cost per call is about 1 % of the time to move it
/// (smaller parts were slower: docs/performance-history.md).
inline constexpr std::size_t slab_bytes = std::size_t{4} << 20;

/// HDF5 element type codes known to the implementation.
enum class Elem { f32, f64, i32, i64, u64 };
template <class T>
constexpr Elem elem_of() {
  if constexpr (std::is_same_v<T, float>)
    return Elem::f32;
  else if constexpr (std::is_same_v<T, double>)
    return Elem::f64;
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return Elem::i32;
  else if constexpr (std::is_same_v<T, std::int64_t> || std::is_same_v<T, long long>)
    return Elem::i64;
  else {
    static_assert(std::is_same_v<T, std::uint64_t>,
                  "checkpoints hold float, double, int32, int64 or uint64 elements");
    return Elem::u64;
  }
}

/// \brief The checksum of checkpoints of earlier versions (a dataset's
/// `checksum`, read and checked still), of a block of a global array: the sum (mod 2^64) over
/// its elements of splitmix64(bits ^ global index * golden ratio). Blocks of
/// any decomposition add up to the same checksum for the same array, and the
/// sum of integers is exact in any order: a parallel reduction, in the memory
/// space where the data lives, gives the same value at any thread count.
template <class T, class Exec>
struct BlockChecksum {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "checksums read 4- or 8-byte elements");
  static constexpr int max_rank = 8;
  static constexpr std::size_t segment = 4096;  // elements of one row per work item
  const T* data;
  Kokkos::Array<std::size_t, max_rank> count;   // the block's extents
  Kokkos::Array<std::size_t, max_rank> offset;  // its first global index
  Kokkos::Array<std::size_t, max_rank> global;  // the whole array's extents
  int rank;
  std::size_t inner;     // extent of the last dimension
  std::size_t segments;  // work items per row

  KOKKOS_INLINE_FUNCTION static std::uint64_t splitmix64(std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
  }

  // Work item w: segment w % segments of row w / segments (the row is every
  // index but the last, row-major).
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t w, std::uint64_t& sum) const {
    constexpr std::uint64_t golden = 0x9E3779B97F4A7C15ull;
    std::size_t row = w / segments;
    const std::size_t first = (w % segments) * segment;
    const std::size_t last = first + segment < inner ? first + segment : inner;
    // Global linear index of (row, first), and the row's position in the block.
    std::size_t g = 0, stride = 1, local = 0, local_stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      std::size_t i = 0;
      if (d == rank - 1) {
        i = first;
      } else {
        i = row % count[d];
        row /= count[d];
      }
      g += (offset[d] + i) * stride;
      local += i * local_stride;
      stride *= global[d];
      local_stride *= count[d];
    }
    const unsigned char* bytes = reinterpret_cast<const unsigned char*>(data + local);
    std::uint64_t s = 0;
    for (std::size_t j = 0; j < last - first; ++j) {
      std::uint64_t bits = 0;
      if constexpr (sizeof(T) == 8) {
        bits = *reinterpret_cast<const std::uint64_t*>(bytes + 8 * j);
      } else {
        bits = *reinterpret_cast<const std::uint32_t*>(bytes + 4 * j);
      }
      s += splitmix64(bits ^ ((g + j) * golden));
    }
    sum += s;
  }
};

/// \brief The checksum of this rank's `block` of a global array, whose
/// elements `data` (row-major, block.count extents) live in the memory of
/// `exec`. One parallel reduction on `exec`; blocking.
template <class Exec, class T>
std::uint64_t block_checksum(const Exec& exec, const T* data, const Block& block) {
  BlockChecksum<T, Exec> f{};
  f.data = data;
  f.rank = static_cast<int>(block.global.size());
  if (f.rank > BlockChecksum<T, Exec>::max_rank) {
    throw Error("kpmap::checkpoint: arrays have at most 8 dimensions");
  }
  std::size_t rows = 1;
  for (int d = 0; d < f.rank; ++d) {
    f.count[d] = block.count[d];
    f.offset[d] = block.offset[d];
    f.global[d] = block.global[d];
    if (d + 1 < f.rank) rows *= block.count[d];
  }
  if (f.rank == 0) {  // a scalar: one row of one element, global index 0
    f.rank = 1;
    f.count[0] = f.global[0] = 1;
    f.offset[0] = 0;
  }
  f.inner = f.count[f.rank - 1];
  if (f.inner == 0 || rows == 0) return 0;
  const std::size_t seg = BlockChecksum<T, Exec>::segment;
  f.segments = (f.inner + seg - 1) / seg;
  std::uint64_t sum = 0;
  Kokkos::parallel_reduce("kpmap::checkpoint::checksum",
                          Kokkos::RangePolicy<Exec>(exec, 0, rows * f.segments), f, sum);
  return sum;
}

/// \brief The checksum of this rank's `block`, whose elements `data` lie in
/// the memory of `exec` in the block's order: block_checksum of the block, or
/// of each piece of a flat range of a box (the sum is the same whatever the
/// pieces). Blocking.
template <class Exec, class T>
std::uint64_t checksum_of(const Exec& exec, const T* data, const Block& block) {
  if (!block.flat || block.box_count.empty()) return block_checksum(exec, data, linear(block));
  std::uint64_t sum = 0;
  for (const Piece& p : pieces(block)) sum += block_checksum(exec, data + p.at, p.box);
  return sum;
}

/// A lease of the one pinned staging pool (transport/buffer_pool.hpp) that
/// holds a block's elements in host memory while it is written or read: a
/// checkpoint after the first allocates nothing, and no host memory is freed
/// in one (Kokkos 4 with CUDA fences every instance when it frees host memory).
using Staging = kpmap::transport::StagingPool::Lease;

/// `n` elements of T in a lease of the staging pool, kept by `lease`.
template <class T>
kpmap::detail::flat_view_t<T, kpmap::detail::PinnedHostSpace> staged(std::size_t n,
                                                                     Staging& lease) {
  lease = kpmap::transport::StagingPool::instance().acquire(n * sizeof(T));
  return kpmap::detail::flat_view_t<T, kpmap::detail::PinnedHostSpace>(
      static_cast<T*>(lease.data()), n);
}

/// `v`'s elements in row-major order in host memory, once `exec`'s work on
/// it is done: `v` itself when it is already there in that order (no copy),
/// else a copy in staging held by `lease`: one copy of a contiguous
/// row-major View, a packing kernel on `exec` of any other.
template <class Exec, class V>
Kokkos::View<const typename V::non_const_value_type*, Kokkos::HostSpace,
             Kokkos::MemoryTraits<Kokkos::Unmanaged>>
host_canonical(const Exec& exec, const V& v, Staging& lease) {
  using T = typename V::non_const_value_type;
  using Out = Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  if constexpr (kpmap::detail::host_reaches_v<typename V::memory_space>) {
    if (kpmap::detail::is_canonical(v)) {
      kpmap::detail::fence(exec, "kpmap::checkpoint: before writing");
      return Out(v.data(), v.size());
    }
  }
  const auto host = staged<T>(v.size(), lease);
  if (kpmap::detail::is_canonical(v)) {
    Kokkos::deep_copy(
        exec, host,
        kpmap::detail::flat_view_t<const T, typename V::memory_space>(v.data(), v.size()));
  } else {
    kpmap::detail::pack(exec, v, host);
  }
  kpmap::detail::fence(exec, "kpmap::checkpoint: staged for writing");
  return Out(host.data(), host.size());
}

/// The instance a checkpoint call without one works on: every instance is
/// fenced first, since any of them may have written the data (as a
/// collective without an instance does).
inline constexpr const char* write_waits =
    "kpmap: a checkpoint write without an execution space waits for every instance";
inline constexpr const char* read_waits =
    "kpmap: a checkpoint read without an execution space waits for every instance";
template <class V>
typename V::execution_space every_instance_done(const char* what) {
  kpmap::detail::fence_all(what);
  return typename V::execution_space();
}

template <class V>
std::vector<std::size_t> extents_vector(const V& v) {
  std::vector<std::size_t> e;
  for (int d = 0; d < kpmap::detail::rank_v<V>; ++d) e.push_back(v.extent(d));
  return e;
}

}  // namespace detail

/// \brief Writes one checkpoint file atomically: everything goes to a
/// temporary file beside `path`, which commit() closes and renames over
/// `path`. A crash, an error or a kill before commit() leaves any previous
/// file at `path` untouched (the Writer's destructor, or the rank whose
/// write failed, removes the temporary).
class Writer {
 public:
  /// Collective over `comm`.
  /// \throws kpmap::Error (all ranks) if the directory cannot be written.
  Writer(const std::string& path, MPI_Comm comm, Metadata meta);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  /// \brief Writes this rank's block `local` of the global array `name`
  /// (collective hyperslab I/O) once the work `exec` was given is done: only
  /// `exec` is fenced. The block's checksum (XXH3) is taken of each part of
  /// it as it is written, in host memory: a block in device memory, or not
  /// contiguous in row-major order, is copied to pinned staging first (no
  /// allocation once the pool holds a buffer of its size). `block.count`
  /// must equal local's extents (a flat_range: local is of rank 1). Of a
  /// copy (block.copy), another rank writes the elements: `local` is not read.
  template <class Exec, class V>
  void write(const Exec& exec, const std::string& name, const V& local, const Block& block) {
    kpmap::detail::require_kernel_ready<Exec, V>();
    const ProfilingRegion region("kpmap::checkpoint::write");
    using T = typename V::non_const_value_type;
    const auto extents = detail::extents_vector(local);
    if (block.copy) {  // another rank writes these elements: nothing to copy or hash
      const T nothing{};
      write_raw(name, detail::elem_of<T>(), &nothing, extents, block, false);
      return;
    }
    detail::Staging lease;
    auto flat = detail::host_canonical(exec, local, lease);
    write_raw(name, detail::elem_of<T>(), flat.data(), extents, block, false);
  }
  /// \brief As write(exec, ...), after fencing every instance (any may have
  /// written `local`).
  template <class V>
  void write(const std::string& name, const V& local, const Block& block) {
    write(detail::every_instance_done<V>(detail::write_waits), name, local, block);
  }

  /// \brief Writes `v`, which every rank holds identically, once, after the
  /// work `exec` was given.
  template <class Exec, class V>
  void write_replicated(const Exec& exec, const std::string& name, const V& v) {
    kpmap::detail::require_kernel_ready<Exec, V>();
    const ProfilingRegion region("kpmap::checkpoint::write");
    using T = typename V::non_const_value_type;
    detail::Staging lease;
    const auto e = detail::extents_vector(v);
    auto flat = detail::host_canonical(exec, v, lease);
    write_raw(name, detail::elem_of<T>(), flat.data(), e, whole(e), /*replicated=*/true);
  }
  /// \brief As write_replicated(exec, ...), after fencing every instance.
  template <class V>
  void write_replicated(const std::string& name, const V& v) {
    write_replicated(detail::every_instance_done<V>(detail::write_waits), name, v);
  }

  /// \brief Closes the file and renames it over the target. Collective.
  void commit();

  const std::string& path() const noexcept;

 private:
  // `data`: the block's elements in host memory, in the block's order.
  void write_raw(const std::string& name, detail::Elem elem, const void* data,
                 const std::vector<std::size_t>& local_extents, const Block& block,
                 bool replicated);

 public:
  struct Impl;  // internal

 private:
  std::unique_ptr<Impl> impl_;
};

/// \brief Opens a checkpoint for restart and checks it: the file exists, is
/// HDF5, was written by `expected_app`; every read checks the global shape
/// and the dataset's checksum. Any problem is an InputError (exit 2) that
/// names the file and what is wrong, raised on every rank.
class Reader {
 public:
  /// Collective over `comm`.
  Reader(const std::string& path, MPI_Comm comm, const std::string& expected_app);
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  /// \brief What a dataset's values may be: anything (integers), finite
  /// numbers (every floating-point dataset by default: a NaN or an Inf is a
  /// damaged or diverged file, not a state to continue from), or finite and
  /// above zero, or at or above zero (a physical quantity the deck would
  /// refuse otherwise).
  enum class Values { any, finite, positive, non_negative };

  const Metadata& metadata() const noexcept;
  /// \brief The integer root attribute `name` (Metadata::integers), or
  /// nothing when the file has none of that name. Collective (every rank reads
  /// it). \throws InputError (all ranks) naming the file when the attribute
  /// holds no integer.
  std::optional<std::int64_t> integer(const std::string& name) const;
  /// \brief Global extents of dataset `name`. \throws InputError if absent.
  std::vector<std::size_t> shape(const std::string& name) const;

  /// \brief Reads this rank's block of `name` into `local` (any memory space
  /// and layout), in order with the work `exec` was given: what `exec` does
  /// with `local` before is done first, and what it does after sees the
  /// values. The file may come from any rank count. Collective.
  /// \throws InputError naming the file, the dataset and the first element
  /// (global index) whose value is not among `values`.
  template <class Exec, class V>
  void read(const Exec& exec, const std::string& name, const V& local, const Block& block,
            Values values = Values::finite) {
    kpmap::detail::require_kernel_ready<Exec, V>();
    const ProfilingRegion region("kpmap::checkpoint::read");
    using T = typename V::non_const_value_type;
    if constexpr (kpmap::detail::host_reaches_v<typename V::memory_space>) {
      if (kpmap::detail::is_canonical(local)) {  // read straight into the View
        kpmap::detail::fence(exec, "kpmap::checkpoint: before reading");
        read_raw(name, detail::elem_of<T>(), local.data(), detail::extents_vector(local), block,
                 values);
        return;
      }
    }
    // Into staging, checked there, then one copy (or an unpacking kernel on
    // `exec`) into place: `local` is untouched when the read is refused.
    detail::Staging lease;
    const auto host = detail::staged<T>(local.size(), lease);
    read_raw(name, detail::elem_of<T>(), host.data(), detail::extents_vector(local), block, values);
    if (kpmap::detail::is_canonical(local)) {
      Kokkos::deep_copy(
          exec, kpmap::detail::flat_view_t<T, typename V::memory_space>(local.data(), local.size()),
          host);
    } else {
      kpmap::detail::unpack(exec, host, local);
    }
    kpmap::detail::fence(exec, "kpmap::checkpoint: read into place");  // the lease goes now
  }
  /// \brief As read(exec, ...), after fencing every instance (any may still
  /// be using `local`).
  template <class V>
  void read(const std::string& name, const V& local, const Block& block,
            Values values = Values::finite) {
    read(detail::every_instance_done<V>(detail::read_waits), name, local, block, values);
  }

  /// \brief Reads the whole of `name` into `v` on every rank, in order with `exec`.
  template <class Exec, class V>
  void read_replicated(const Exec& exec, const std::string& name, const V& v,
                       Values values = Values::finite) {
    read(exec, name, v, whole(detail::extents_vector(v)), values);
  }
  /// \brief As read_replicated(exec, ...), after fencing every instance.
  template <class V>
  void read_replicated(const std::string& name, const V& v, Values values = Values::finite) {
    read(name, v, whole(detail::extents_vector(v)), values);
  }

 private:
  void read_raw(const std::string& name, detail::Elem elem, void* data,
                const std::vector<std::size_t>& local_extents, const Block& block, Values values);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// \brief "; the last good checkpoint is FILE (continue with --restart FILE)",
/// or "; no checkpoint was written" when `file` is empty: the tail of a
/// message that stops a run.
std::string last_good_note(const std::string& file);

/// \brief The largest step (or epoch) a checkpoint may record: 10^15, the
/// most steps train.max_steps allows, far beyond any run, and far enough
/// below 2^63 that counting on from it never overflows. A reader refuses a
/// file that records more.
inline constexpr long long max_step = 1'000'000'000'000'000LL;

/// \brief Deletes all but the newest `keep` files named `<stem>_<digits>.h5`
/// (and their .xmf sidecars) in `dir`. With `newest` >= 0 (the step just
/// written), files of later steps, left in the folder by an earlier run, are
/// neither counted nor deleted: the checkpoint just written always stays.
/// Call on one rank.
void keep_last(const std::string& dir, const std::string& stem, int keep, long long newest = -1);

/// \brief Deletes all but the last `keep` of `files` (checkpoints, oldest
/// first), with their .xmf sidecars, and drops them from the list: a run
/// prunes only the checkpoints it wrote itself. Call on one rank.
void keep_last(std::vector<std::string>& files, int keep);

/// \brief A cell-centred field on a uniform grid, for write_xdmf.
struct XdmfField {
  std::string dataset;  ///< dataset name in the HDF5 file
  std::string name;     ///< name shown in ParaView / VisIt
};

/// \brief Writes an XDMF sidecar so ParaView and VisIt open the HDF5 file
/// `h5_file` (named relative to the sidecar) as a uniform grid of `cells`
/// cells (2 or 3 extents, slowest first), with `origin` and `spacing` per
/// dimension, and cell-centred `fields`. Written to a temporary name and
/// renamed, like the checkpoint. Call on one rank.
void write_xdmf(const std::string& xmf_path, const std::string& h5_file,
                const std::vector<std::size_t>& cells, const std::vector<double>& origin,
                const std::vector<double>& spacing, const std::vector<XdmfField>& fields,
                double time);

}  // namespace kpmap::checkpoint
