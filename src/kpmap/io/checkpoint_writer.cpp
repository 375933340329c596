// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/io/checkpoint.hpp>
#include <kpmap/io/detail/attributes.hpp>

#include <kpmap/base/fault.hpp>
#include <kpmap/base/files.hpp>
#include <kpmap/base/version.hpp>
#include <kpmap/transport/host.hpp>

#include <hdf5.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/falloc.h>
#endif

namespace kpmap::checkpoint {

namespace fs = std::filesystem;
using namespace detail;  // the shared pieces of io/detail/attributes.hpp

struct Writer::Impl {
  std::string path;
  std::string tmp;
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  hid_t file = -1;
  bool committed = false;
  bool agreed_failure = false;  // every rank raised the same error
  int fd = -1;                  // rank 0: the temporary, for reserving its blocks
  std::uint64_t reserved = 0;   // bytes of the temporary whose blocks are reserved
  std::uint64_t high = 0;       // the end of the last dataset's storage
  std::uint64_t datasets = 0;   // written so far
  std::uint64_t tables = 0;     // bytes of their checksum_blocks attributes
  bool can_reserve = true;      // false on file systems without fallocate

  // Rank 0 reserves the temporary's disk blocks [0, end): HDF5's own writes
  // into them then cannot meet a full disk, where parallel
  // HDF5's collective flush and close would wait forever (a rank whose write
  // failed skips the barrier that the others wait in). Collective: a
  // reservation that fails is agreed and raised on every rank, before HDF5
  // has written anything it would need to clean up. Best effort on file
  // systems without fallocate (some network ones).
  void reserve(std::uint64_t end);
};

namespace {
// An HDF5 write, flush or close failed on this rank. Parallel HDF5 can no
// longer be trusted to reach its next collective with the other ranks (its
// clean-up in H5Fclose waits in barriers and broadcasts that a rank whose
// write failed skips), so nothing collective follows: this rank removes the
// temporary (the previous checkpoint is untouched) and throws an error of its
// own, which ends the job (kpmap::run aborts it, and the other ranks with it)
// without closing the file or finalising MPI.
[[noreturn]] void fail_on_this_rank(const std::string& tmp, const std::string& what,
                                    std::string reason = "") {
  if (reason.empty()) reason = files::write_failure_reason(tmp, 0);
  std::error_code ec;
  fs::remove(tmp, ec);
  throw Error(what + ": " + reason, exit_code::failure, ErrorScope::this_rank);
}

// Runs `f`; an error every rank raised together is remembered, so that the
// destructor knows it may still do its collective clean-up.
template <class F>
void remembering_failure(Writer::Impl& impl, F&& f) {
  try {
    f();
  } catch (const Error& e) {
    if (e.all_ranks()) impl.agreed_failure = true;
    throw;
  }
}
}  // namespace

namespace {
// What is wrong with meta.integers' names, or "": each names an int64 root
// attribute beside the built-in ones, which it must not shadow (the reader
// would get the built-in's value), once, in printable ASCII.
std::string integers_problem(const std::string& path, const Metadata& meta) {
  static const char* const builtin[] = {"kpmap_version", "app",           "step", "time",
                                        "ranks",         "decomposition", "deck", "rng_state"};
  std::vector<std::string> seen;
  for (const auto& [name, value] : meta.integers) {
    (void)value;
    const std::string what =
        "will not write checkpoint " + path + ": Metadata::integers names '" + name + "'";
    for (const char* b : builtin) {
      if (name == b) {
        return what + ", a built-in attribute of every checkpoint (Metadata::" + name +
               " holds it); give the integer another name";
      }
    }
    if (name.empty() || name.size() > 64 ||
        std::any_of(name.begin(), name.end(), [](char c) { return c < 0x21 || c > 0x7e; })) {
      return what + ": a name is 1 to 64 printable ASCII characters without spaces";
    }
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) {
      return what + " twice";
    }
    seen.push_back(name);
  }
  return "";
}
}  // namespace

Writer::Writer(const std::string& path, MPI_Comm comm, Metadata meta)
    : impl_(std::make_unique<Impl>()) {
  ErrorStackSilenced quiet;
  impl_->path = path;
  impl_->tmp = path + ".tmp";
  impl_->comm = comm;
  MPI_Comm_rank(comm, &impl_->rank);
  MPI_Comm_size(comm, &impl_->size);

  std::string error = integers_problem(path, meta);
  if (impl_->rank == 0 && error.empty()) {
    const fs::path dir =
        fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      error = "cannot write checkpoint " + path + ": directory " + dir.string() + " does not exist";
    } else if (::access(dir.c_str(), W_OK) != 0) {
      error = "cannot write checkpoint " + path + ": directory " + dir.string() +
              " is not writable (" + std::strerror(errno) + ")";
    } else if (const std::string why = files::not_replaceable(path); !why.empty()) {
      error = "will not write checkpoint " + path + ": it " + why +
              ", and kpmap replaces only regular files";
    } else {
      try {
        files::clear_temporary(impl_->tmp);
      } catch (const Error& e) {
        error = e.what();
      }
    }
  }
  agree(comm, error, exit_code::failure);

  hid_t fapl = mpio_access(comm);
  // HDF5 1.8's object format: an attribute may be larger than 64 KiB (the
  // checksum table of a dataset written by thousands of ranks).
  H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V18);
  impl_->file = H5Fcreate(impl_->tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  H5Pclose(fapl);
  agree(comm,
        impl_->file < 0 ? "cannot create checkpoint file " + impl_->tmp +
                              " (disk full or "
                              "no permission?)"
                        : "",
        exit_code::failure);
  if (impl_->rank == 0) impl_->fd = ::open(impl_->tmp.c_str(), O_WRONLY | O_CLOEXEC);

  meta.ranks = impl_->size;
  meta.kpmap_version = version_string;
  write_string_attr(impl_->file, "kpmap_version", meta.kpmap_version);
  write_string_attr(impl_->file, "app", meta.app);
  write_scalar_attr(impl_->file, "step", H5T_NATIVE_INT64, static_cast<std::int64_t>(meta.step));
  write_scalar_attr(impl_->file, "time", H5T_NATIVE_DOUBLE, meta.time);
  write_scalar_attr(impl_->file, "ranks", H5T_NATIVE_INT32, static_cast<std::int32_t>(meta.ranks));
  write_string_attr(impl_->file, "decomposition", meta.decomposition);
  write_string_attr(impl_->file, "deck", meta.deck);
  write_string_attr(impl_->file, "rng_state", meta.rng_state);
  for (const auto& [name, value] : meta.integers) {
    write_scalar_attr(impl_->file, name.c_str(), H5T_NATIVE_INT64, value);
  }
}

void Writer::Impl::reserve(std::uint64_t end) {
  std::string error;
#if !defined(__linux__)
  can_reserve = false;  // fallocate with KEEP_SIZE is Linux's
#endif
  if (rank == 0 && fd >= 0 && can_reserve && end > reserved) {
#if defined(__linux__)
    // KEEP_SIZE: the blocks are the file's, its length stays HDF5's.
    if (::fallocate(fd, FALLOC_FL_KEEP_SIZE, off_t(reserved), off_t(end - reserved)) == 0) {
      reserved = end;
    } else if (errno == EOPNOTSUPP || errno == ENOSYS) {
      can_reserve = false;
    } else {
      const int e = errno;
      error = "writing checkpoint " + tmp + ": " +
              (e == ENOSPC
                   ? "no space left on the device (the file has reached " +
                         std::to_string(reserved) + " of about " + std::to_string(end) +
                         " bytes; " + std::to_string(files::free_bytes(tmp)) + " bytes are free)"
                   : std::string("reserving its disk space failed: ") + std::strerror(e));
      ::close(fd);
      fd = -1;
      std::remove(tmp.c_str());
    }
#endif
  }
  // A file size limit (ulimit -f) would fail the write of whichever rank
  // writes past it, inside a collective write the others then wait in for
  // ever (Open MPI's OMPIO): every rank checks its own limit first.
  rlimit fsize{};
  if (error.empty() && getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY &&
      end > std::uint64_t(fsize.rlim_cur)) {
    error = "writing checkpoint " + tmp + ": it needs about " + std::to_string(end) +
            " bytes, past this process's file size limit (ulimit -f: " +
            std::to_string(fsize.rlim_cur) + " bytes)";
    if (fd >= 0) {
      ::close(fd);
      fd = -1;
    }
    if (rank == 0) std::remove(tmp.c_str());
  }
  // HDF5 has written nothing it could not leave behind, but closing the file
  // would flush its metadata onto the full disk: the job ends without it.
  agree(comm, error, exit_code::failure, ErrorScope::all_ranks_abort);
}

Writer::~Writer() {
  if (impl_ && impl_->fd >= 0) ::close(impl_->fd);
  if (!impl_ || impl_->committed) return;
  // An error raised on this rank alone is on its way to kpmap::run, which
  // aborts the job: collective clean-up here could wait forever for ranks
  // that are elsewhere. The temporary stays; the previous checkpoint is intact.
  if (std::uncaught_exceptions() > 0 && !impl_->agreed_failure) return;
  // Abandoned (an error on every rank): drop the temporary, keep the old file.
  ErrorStackSilenced quiet;
  if (impl_->file >= 0) H5Fclose(impl_->file);
  if (impl_->rank == 0) std::remove(impl_->tmp.c_str());
  // Collective like the rest: when it returns, the temporary is gone for everyone.
  MPI_Barrier(impl_->comm);
}

const std::string& Writer::path() const noexcept { return impl_->path; }

void Writer::write_raw(const std::string& name, detail::Elem elem, const void* data,
                       const std::vector<std::size_t>& local_extents, const Block& block,
                       bool replicated) {
  remembering_failure(*impl_, [&] {
    ErrorStackSilenced quiet;
    agree(impl_->comm, check_block(name, local_extents, block), exit_code::failure);
    std::vector<hsize_t> dims(block.global.begin(), block.global.end());
    hid_t fspace = dims.empty()
                       ? H5Screate(H5S_SCALAR)
                       : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
    // Names may hold groups ("fields/temperature"): create them on the way.
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hid_t dset =
        H5Dcreate2(impl_->file, name.c_str(), h5type(elem), fspace, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    H5Pclose(lcpl);
    std::string error = dset < 0 ? "cannot create dataset '" + name + "' in " + impl_->tmp : "";
    agree(impl_->comm, error, exit_code::failure);
    // Parallel HDF5 allocates a dataset's storage when it creates it.
    const haddr_t at = H5Dget_offset(dset);
    if (at != HADDR_UNDEF) {
      impl_->high = std::max<std::uint64_t>(impl_->high, at + H5Dget_storage_size(dset));
    }
    ++impl_->datasets;
    impl_->reserve(impl_->high);

    // Written a few MiB at a time, each part hashed while it is in cache.
    // Every rank makes as many (collective) writes as the rank with the most
    // parts; past its own, or where another rank writes its elements, it
    // writes nothing.
    const bool none = (replicated && impl_->rank != 0) || block.copy;
    const std::size_t esize = elem_bytes(elem);
    const std::vector<Slab> parts = none ? std::vector<Slab>{} : slabs(block, esize, slab_bytes);
    unsigned long long calls = parts.size();
    transport::host_allreduce(&calls, 1, MPI_MAX, impl_->comm);
    hid_t dxpl = collective_transfer();
    herr_t rc = fault::write_fails() ? -1 : 0;  // an injected failure takes a real one's path
    BlockHash hash;
    std::size_t hashed = 0;  // elements hashed
    std::string bad;         // the first value a restart would refuse
    for (std::size_t i = 0; i < calls && rc >= 0; ++i) {
      const bool nothing = i >= parts.size();
      const Block& part = nothing ? block : parts[i].block;
      const char* at = static_cast<const char*>(data) + (nothing ? 0 : parts[i].at) * esize;
      std::vector<hsize_t> cnt(part.count.begin(), part.count.end());
      hid_t mspace = cnt.empty()
                         ? H5Screate(H5S_SCALAR)
                         : H5Screate_simple(static_cast<int>(cnt.size()), cnt.data(), nullptr);
      if (nothing) H5Sselect_none(mspace);
      select(fspace, part, nothing);
      const std::size_t n = elements(part);
      if (!nothing) {
        hash.add(at, n * esize);
        hashed += n;
        // Checked while the part is in cache: a checkpoint is never written
        // that a restart would refuse (Reader::Values::finite).
        if (bad.empty() && !all_good(at, elem, n, Reader::Values::finite)) {
          bad = first_bad_value(at, elem, part, Reader::Values::finite);
        }
      }
      rc = H5Dwrite(dset, h5type(elem), mspace, fspace, dxpl, at);
      H5Sclose(mspace);
    }
    H5Pclose(dxpl);
    if (rc < 0) {
      fail_on_this_rank(impl_->tmp, "writing dataset '" + name + "' to " + impl_->tmp + " failed",
                        fault::write_fails() ? "injected by KPMAP_FAULT_INJECT" : "");
    }

    try {  // every rank closes the dataset before the file's collective close
      agree(impl_->comm,
            bad.empty() ? ""
                        : "will not write checkpoint " + impl_->path + ": dataset '" + name +
                              "': " + bad + ", and a restart from it would be refused",
            exit_code::diverged);
    } catch (const Error&) {
      H5Sclose(fspace);
      H5Dclose(dset);
      throw;
    }

    // Every block written, with its hash, in rank order: the table a reader
    // checks what it reads against.
    // Each rank sends whether it wrote anything, then its row.
    const std::size_t width = record_width(block.global.size());
    std::vector<std::uint64_t> mine(width + 1, 0);
    if (hashed > 0) {
      const auto row = block_record(block, hash.value());
      mine[0] = 1;
      std::copy(row.begin(), row.end(), mine.begin() + 1);
    }
    std::vector<std::uint64_t> all((width + 1) * static_cast<std::size_t>(impl_->size));
    MPI_Allgather(mine.data(), static_cast<int>(width + 1), MPI_UINT64_T, all.data(),
                  static_cast<int>(width + 1), MPI_UINT64_T, impl_->comm);
    std::vector<std::uint64_t> table;
    for (int r = 0; r < impl_->size; ++r) {
      const std::uint64_t* sent = all.data() + (width + 1) * static_cast<std::size_t>(r);
      if (sent[0] != 0) table.insert(table.end(), sent + 1, sent + 1 + width);
    }
    const std::size_t written = table_elements(table, block.global);
    const std::size_t array = elements(whole(block.global));
    // A block written twice (a replica not marked Block::copy) or an element
    // not written at all: the file would hold what no rank wrote.
    if (written != array) {
      H5Sclose(fspace);
      H5Dclose(dset);
      agree(impl_->comm,
            "the blocks written of '" + name + "' hold " + std::to_string(written) +
                " elements of its " + std::to_string(array) +
                " (overlapping blocks, or a replica not marked Block::copy?)",
            exit_code::failure);
    }
    write_string_attr(dset, "checksum_algorithm", xxh3_blocks);
    write_table_attr(dset, "checksum_blocks", table, width);
    impl_->tables += 8 * table.size();
    H5Sclose(fspace);
    H5Dclose(dset);
  });
}

void Writer::commit() {
  remembering_failure(*impl_, [&] {
    ErrorStackSilenced quiet;
    std::string error;
    // The metadata goes to disk here: room for what HDF5 places after the
    // last dataset (the last object headers and attributes: about 2 KiB in a
    // file of 20 datasets).
    impl_->reserve(impl_->high + 16384 + 512 * impl_->datasets + impl_->tables);
    if (H5Fflush(impl_->file, H5F_SCOPE_GLOBAL) < 0) {
      fail_on_this_rank(impl_->tmp, "flushing " + impl_->tmp + " failed");
    }
    if (H5Fclose(impl_->file) < 0)
      fail_on_this_rank(impl_->tmp, "closing " + impl_->tmp + " failed");
    impl_->file = -1;
    if (impl_->fd >= 0) {
      // Give back the reserved blocks past the file's end (a hole there
      // changes nothing the file holds).
#if defined(__linux__)
      struct stat st {};
      if (::fstat(impl_->fd, &st) == 0 && std::uint64_t(st.st_size) < impl_->reserved) {
        [[maybe_unused]] int rc =
            ::fallocate(impl_->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, st.st_size,
                        off_t(impl_->reserved - std::uint64_t(st.st_size)));
      }
#endif
      ::close(impl_->fd);
      impl_->fd = -1;
    }
    if (impl_->rank == 0) {
      // Make the data durable before the rename makes it the checkpoint.
      const int fd = ::open(impl_->tmp.c_str(), O_RDONLY);
      if (fd < 0 || ::fsync(fd) != 0) {
        error = "syncing " + impl_->tmp + " failed: " + std::strerror(errno);
      }
      if (fd >= 0) ::close(fd);
      if (error.empty() && std::rename(impl_->tmp.c_str(), impl_->path.c_str()) != 0) {
        error =
            "renaming " + impl_->tmp + " to " + impl_->path + " failed: " + std::strerror(errno);
      }
      if (error.empty()) {
        const auto dir = fs::path(impl_->path).parent_path();
        const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY);
        if (dfd >= 0) {
          ::fsync(dfd);
          ::close(dfd);
        }
      }
    }
    agree(impl_->comm, error, exit_code::failure);
    impl_->committed = true;
  });
}

}  // namespace kpmap::checkpoint
