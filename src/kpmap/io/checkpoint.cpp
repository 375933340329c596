#include <kpmap/io/checkpoint.hpp>

#include <kpmap/base/detail/hdf5.hpp>
#include <kpmap/base/fault.hpp>
#include <kpmap/base/files.hpp>
#include <kpmap/base/version.hpp>

#include <hdf5.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/falloc.h>
#endif

namespace kpmap::checkpoint {

namespace fs = std::filesystem;

namespace {

hid_t h5type(detail::Elem e) {
  switch (e) {
    case detail::Elem::f32:
      return H5T_NATIVE_FLOAT;
    case detail::Elem::f64:
      return H5T_NATIVE_DOUBLE;
    case detail::Elem::i32:
      return H5T_NATIVE_INT32;
    case detail::Elem::i64:
      return H5T_NATIVE_INT64;
    case detail::Elem::u64:
      return H5T_NATIVE_UINT64;
  }
  return H5T_NATIVE_DOUBLE;
}

const char* elem_name(detail::Elem e) {
  switch (e) {
    case detail::Elem::f32:
      return "float32";
    case detail::Elem::f64:
      return "float64";
    case detail::Elem::i32:
      return "int32";
    case detail::Elem::i64:
      return "int64";
    case detail::Elem::u64:
      return "uint64";
  }
  return "?";
}

using kpmap::detail::h5::agree;
using Quiet = kpmap::detail::h5::Quiet;

std::string shape_text(const std::vector<std::size_t>& e) {
  std::string s = "(";
  for (std::size_t i = 0; i < e.size(); ++i) s += (i ? ", " : "") + std::to_string(e[i]);
  return s + ")";
}

// The checksum of data that HDF5 read into host memory: a parallel
// reduction over the host's threads.
std::uint64_t host_checksum(const void* data, detail::Elem elem, const Block& block) {
  const Kokkos::DefaultHostExecutionSpace host;
  switch (elem) {
    case detail::Elem::f32:
      return detail::block_checksum(host, static_cast<const float*>(data), block);
    case detail::Elem::f64:
      return detail::block_checksum(host, static_cast<const double*>(data), block);
    case detail::Elem::i32:
      return detail::block_checksum(host, static_cast<const std::int32_t*>(data), block);
    case detail::Elem::i64:
      return detail::block_checksum(host, static_cast<const std::int64_t*>(data), block);
    case detail::Elem::u64:
      break;
  }
  return detail::block_checksum(host, static_cast<const std::uint64_t*>(data), block);
}

std::string check_block(const std::string& name, const std::vector<std::size_t>& local,
                        const Block& b) {
  const std::size_t r = b.global.size();
  if (b.offset.size() != r || b.count.size() != r || local.size() != r) {
    return "checkpoint dataset '" + name + "': the block's rank does not match the View's";
  }
  for (std::size_t d = 0; d < r; ++d) {
    if (b.count[d] != local[d]) {
      return "checkpoint dataset '" + name + "': the block " + shape_text(b.count) +
             " does not match the View " + shape_text(local);
    }
    if (b.offset[d] + b.count[d] > b.global[d]) {
      return "checkpoint dataset '" + name + "': the block at " + shape_text(b.offset) +
             " of size " + shape_text(b.count) + " overruns the array " + shape_text(b.global);
    }
  }
  return "";
}

void write_string_attr(hid_t obj, const char* name, const std::string& value) {
  hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, std::max<std::size_t>(1, value.size()));
  H5Tset_strpad(type, H5T_STR_NULLPAD);
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t attr = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  const std::string padded = value.empty() ? std::string(1, '\0') : value;
  H5Awrite(attr, type, padded.data());
  H5Aclose(attr);
  H5Sclose(space);
  H5Tclose(type);
}

template <class T>
void write_scalar_attr(hid_t obj, const char* name, hid_t type, T value) {
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t attr = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(attr, type, &value);
  H5Aclose(attr);
  H5Sclose(space);
}

bool read_string_attr(hid_t obj, const char* name, std::string& out) {
  if (H5Aexists(obj, name) <= 0) return false;
  hid_t attr = H5Aopen(obj, name, H5P_DEFAULT);
  if (attr < 0) return false;
  hid_t ftype = H5Aget_type(attr);
  bool ok = H5Tget_class(ftype) == H5T_STRING && H5Tis_variable_str(ftype) == 0;
  if (ok) {
    const std::size_t n = H5Tget_size(ftype);
    std::string buf(n, '\0');
    hid_t mtype = H5Tcopy(H5T_C_S1);
    H5Tset_size(mtype, n);
    H5Tset_strpad(mtype, H5T_STR_NULLPAD);
    ok = H5Aread(attr, mtype, buf.data()) >= 0;
    H5Tclose(mtype);
    buf.resize(std::strlen(buf.c_str()));
    out = buf;
  }
  H5Tclose(ftype);
  H5Aclose(attr);
  return ok;
}

// One value of the class of `type` (an integer attribute for an integer, not
// a float HDF5 would round into one).
template <class T>
bool read_scalar_attr(hid_t obj, const char* name, hid_t type, T& out) {
  if (H5Aexists(obj, name) <= 0) return false;
  hid_t attr = H5Aopen(obj, name, H5P_DEFAULT);
  if (attr < 0) return false;
  hid_t ftype = H5Aget_type(attr);
  hid_t space = H5Aget_space(attr);
  const bool ok = H5Tget_class(ftype) == H5Tget_class(type) &&
                  H5Sget_simple_extent_npoints(space) == 1 && H5Aread(attr, type, &out) >= 0;
  H5Sclose(space);
  H5Tclose(ftype);
  H5Aclose(attr);
  return ok;
}

// Selects this rank's block (or nothing) in a dataspace.
void select(hid_t space, const Block& b, bool none) {
  if (none) {
    H5Sselect_none(space);
    return;
  }
  std::vector<hsize_t> off(b.offset.begin(), b.offset.end());
  std::vector<hsize_t> cnt(b.count.begin(), b.count.end());
  if (off.empty()) return;  // a scalar dataspace: everything
  H5Sselect_hyperslab(space, H5S_SELECT_SET, off.data(), nullptr, cnt.data(), nullptr);
}

using kpmap::detail::h5::collective_transfer;
using kpmap::detail::h5::mpio_access;

}  // namespace

Block row_block(std::vector<std::size_t> global, std::size_t begin, std::size_t rows) {
  Block b;
  b.global = global;
  b.offset.assign(global.size(), 0);
  b.count = global;
  if (!global.empty()) {
    b.offset[0] = begin;
    b.count[0] = rows;
  }
  return b;
}

Block whole(std::vector<std::size_t> global) {
  Block b;
  b.offset.assign(global.size(), 0);
  b.count = global;
  b.global = std::move(global);
  return b;
}

// ---- Writer ----------------------------------------------------------------------

struct Writer::Impl {
  std::string path;
  std::string tmp;
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  hid_t file = -1;
  bool committed = false;
  bool agreed_failure = false;  // every rank raised the same error
  int fd = -1;                  // rank 0: the temporary, for reserving its blocks
  std::uint64_t reserved = 0;   // bytes of the temporary whose blocks are reserved
  std::uint64_t high = 0;       // the end of the last dataset's storage
  std::uint64_t datasets = 0;   // written so far
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

Writer::Writer(const std::string& path, MPI_Comm comm, Metadata meta)
    : impl_(std::make_unique<Impl>()) {
  Quiet quiet;
  impl_->path = path;
  impl_->tmp = path + ".tmp";
  impl_->comm = comm;
  MPI_Comm_rank(comm, &impl_->rank);
  int size = 1;
  MPI_Comm_size(comm, &size);

  std::string error;
  if (impl_->rank == 0) {
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
  impl_->file = H5Fcreate(impl_->tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  H5Pclose(fapl);
  agree(comm,
        impl_->file < 0 ? "cannot create checkpoint file " + impl_->tmp +
                              " (disk full or "
                              "no permission?)"
                        : "",
        exit_code::failure);
  if (impl_->rank == 0) impl_->fd = ::open(impl_->tmp.c_str(), O_WRONLY | O_CLOEXEC);

  meta.ranks = size;
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
  Quiet quiet;
  if (impl_->file >= 0) H5Fclose(impl_->file);
  if (impl_->rank == 0) std::remove(impl_->tmp.c_str());
  // Collective like the rest: when it returns, the temporary is gone for everyone.
  MPI_Barrier(impl_->comm);
}

const std::string& Writer::path() const noexcept { return impl_->path; }

void Writer::write_raw(const std::string& name, detail::Elem elem, const void* data,
                       const std::vector<std::size_t>& local_extents, const Block& block,
                       bool replicated, std::uint64_t checksum) {
  remembering_failure(*impl_, [&] {
    Quiet quiet;
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

    const bool none = replicated && impl_->rank != 0;
    std::vector<hsize_t> cnt(block.count.begin(), block.count.end());
    hid_t mspace = cnt.empty()
                       ? H5Screate(H5S_SCALAR)
                       : H5Screate_simple(static_cast<int>(cnt.size()), cnt.data(), nullptr);
    if (none) H5Sselect_none(mspace);
    select(fspace, block, none);
    hid_t dxpl = collective_transfer();
    // An injected failure takes the path of a real one (KPMAP_FAULT_INJECT=R:S:io).
    const herr_t rc =
        fault::write_fails() ? -1 : H5Dwrite(dset, h5type(elem), mspace, fspace, dxpl, data);
    H5Pclose(dxpl);
    H5Sclose(mspace);
    if (rc < 0) {
      fail_on_this_rank(impl_->tmp, "writing dataset '" + name + "' to " + impl_->tmp + " failed",
                        fault::write_fails() ? "injected by KPMAP_FAULT_INJECT" : "");
    }

    // The checksum of the whole array, from every rank's share.
    std::uint64_t sum = none ? 0 : checksum;
    MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_UINT64_T, MPI_SUM, impl_->comm);
    write_scalar_attr(dset, "checksum", H5T_NATIVE_UINT64, sum);
    H5Sclose(fspace);
    H5Dclose(dset);
  });
}

void Writer::commit() {
  remembering_failure(*impl_, [&] {
    Quiet quiet;
    std::string error;
    // The metadata goes to disk here: room for what HDF5 places after the
    // last dataset (the last object headers and attributes: about 2 KiB in a
    // file of 20 datasets).
    impl_->reserve(impl_->high + 16384 + 512 * impl_->datasets);
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

// ---- Reader --------------------------------------------------------------------

struct Reader::Impl {
  std::string path;
  MPI_Comm comm = MPI_COMM_NULL;
  hid_t file = -1;
  Metadata meta;
};

Reader::Reader(const std::string& path, MPI_Comm comm, const std::string& expected_app)
    : impl_(std::make_unique<Impl>()) {
  Quiet quiet;
  impl_->path = path;
  impl_->comm = comm;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string error;
  if (rank == 0) {
    if (const std::string why = files::not_a_regular_file(path); !why.empty()) {
      error = "restart file " + path + " " + why;
    } else if (H5Fis_hdf5(path.c_str()) <= 0) {
      error = "restart file " + path + " is not an HDF5 file (or it is truncated or corrupted)";
    }
  }
  agree(comm, error, exit_code::bad_input);

  hid_t fapl = mpio_access(comm);
  impl_->file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl);
  H5Pclose(fapl);
  agree(comm,
        impl_->file < 0
            ? "restart file " + path + " cannot be opened as HDF5 (truncated or corrupted?)"
            : "",
        exit_code::bad_input);

  auto& m = impl_->meta;
  std::int64_t step = 0;
  std::int32_t ranks = 0;
  // The first root attribute that is missing or of another type.
  const char* bad = nullptr;
  const auto need = [&bad](bool ok, const char* name) {
    if (!ok && bad == nullptr) bad = name;
  };
  need(read_string_attr(impl_->file, "app", m.app), "app");
  need(read_string_attr(impl_->file, "kpmap_version", m.kpmap_version), "kpmap_version");
  need(read_scalar_attr(impl_->file, "step", H5T_NATIVE_INT64, step), "step (an integer)");
  need(read_scalar_attr(impl_->file, "time", H5T_NATIVE_DOUBLE, m.time), "time (a number)");
  need(read_scalar_attr(impl_->file, "ranks", H5T_NATIVE_INT32, ranks), "ranks (an integer)");
  need(read_string_attr(impl_->file, "decomposition", m.decomposition), "decomposition");
  need(read_string_attr(impl_->file, "deck", m.deck), "deck");
  need(read_string_attr(impl_->file, "rng_state", m.rng_state), "rng_state");
  m.step = step;
  m.ranks = ranks;
  if (bad != nullptr) {
    error = "restart file " + path + " is not a kpmap checkpoint: its root attribute " + bad +
            " is missing or of another type (a damaged file, or another program's)";
  } else if (m.app != expected_app) {
    error = "restart file " + path + " was written by '" + m.app + "', not by " + expected_app;
  } else if (step < 0) {
    error = "restart file " + path + ": attribute step is " + std::to_string(step) +
            " (a damaged file: a step is never negative)";
  } else if (!std::isfinite(m.time) || m.time < 0) {
    std::ostringstream t;
    t << m.time;
    error = "restart file " + path + ": attribute time is " + t.str() +
            " (a damaged file: the time is a finite number, never negative)";
  } else if (ranks < 1) {
    error = "restart file " + path + ": attribute ranks is " + std::to_string(ranks) +
            " (a damaged file: it was written by at least one rank)";
  }
  agree(comm, error, exit_code::bad_input);
}

Reader::~Reader() {
  if (impl_ && impl_->file >= 0) {
    Quiet quiet;
    H5Fclose(impl_->file);
  }
}

const Metadata& Reader::metadata() const noexcept { return impl_->meta; }

std::optional<std::int64_t> Reader::integer(const std::string& name) const {
  Quiet quiet;
  if (H5Aexists(impl_->file, name.c_str()) <= 0) return std::nullopt;
  hid_t attr = H5Aopen(impl_->file, name.c_str(), H5P_DEFAULT);
  hid_t type = attr >= 0 ? H5Aget_type(attr) : -1;
  hid_t space = attr >= 0 ? H5Aget_space(attr) : -1;
  const bool integral = type >= 0 && H5Tget_class(type) == H5T_INTEGER && space >= 0 &&
                        H5Sget_simple_extent_npoints(space) == 1;
  std::int64_t value = 0;
  const bool ok = integral && H5Aread(attr, H5T_NATIVE_INT64, &value) >= 0;
  if (space >= 0) H5Sclose(space);
  if (type >= 0) H5Tclose(type);
  if (attr >= 0) H5Aclose(attr);
  if (!ok) {
    throw InputError("restart file " + impl_->path + ": attribute " + name +
                         " holds no integer (a damaged file?)",
                     ErrorScope::all_ranks);
  }
  return value;
}

std::vector<std::size_t> Reader::shape(const std::string& name) const {
  Quiet quiet;
  std::vector<std::size_t> out;
  hid_t dset = H5Lexists(impl_->file, name.c_str(), H5P_DEFAULT) > 0
                   ? H5Dopen2(impl_->file, name.c_str(), H5P_DEFAULT)
                   : -1;
  if (dset >= 0) {
    hid_t space = H5Dget_space(dset);
    const int nd = H5Sget_simple_extent_ndims(space);
    std::vector<hsize_t> dims(static_cast<std::size_t>(std::max(nd, 0)));
    if (nd > 0) H5Sget_simple_extent_dims(space, dims.data(), nullptr);
    out.assign(dims.begin(), dims.end());
    H5Sclose(space);
    H5Dclose(dset);
  }
  agree(impl_->comm,
        dset < 0 ? "restart file " + impl_->path + " has no dataset '" + name + "'" : "",
        exit_code::bad_input);
  return out;
}

namespace {
// The first element of this rank's block (row-major) whose value is not
// among `values`, as "element [i, j] is nan (...)", or "".
template <class T>
std::string first_bad_value(const T* v, const Block& block, Reader::Values values) {
  std::size_t n = 1;
  for (std::size_t c : block.count) n *= c;
  for (std::size_t k = 0; k < n; ++k) {
    const double x = static_cast<double>(v[k]);
    const char* rule = nullptr;
    if (!std::isfinite(x)) {
      rule = "a checkpoint holds finite numbers only";
    } else if (values == Reader::Values::positive && !(x > 0)) {
      rule = "it must be above zero";
    } else if (values == Reader::Values::non_negative && !(x >= 0)) {
      rule = "it must not be negative";
    }
    if (rule == nullptr) continue;
    // The global multi-index of local element k.
    std::vector<std::size_t> at(block.count.size());
    std::size_t rest = k;
    for (std::size_t d = block.count.size(); d-- > 0;) {
      at[d] = block.offset[d] + rest % block.count[d];
      rest /= block.count[d];
    }
    std::ostringstream s;
    s << "element [";
    for (std::size_t d = 0; d < at.size(); ++d) s << (d ? ", " : "") << at[d];
    s << "] is " << x << " (" << rule << ")";
    return s.str();
  }
  return "";
}
}  // namespace

void Reader::read_raw(const std::string& name, detail::Elem elem, void* data,
                      const std::vector<std::size_t>& local_extents, const Block& block,
                      Values values) {
  Quiet quiet;
  const std::string where = "restart file " + impl_->path + ", dataset '" + name + "'";
  agree(impl_->comm, check_block(name, local_extents, block), exit_code::failure);
  const auto stored = shape(name);
  agree(impl_->comm,
        stored != block.global
            ? where + ": its shape is " + shape_text(stored) + " but this run needs " +
                  shape_text(block.global) + " (does the deck match the run that wrote it?)"
            : "",
        exit_code::bad_input);
  hid_t dset = H5Dopen2(impl_->file, name.c_str(), H5P_DEFAULT);
  hid_t ftype = H5Dget_type(dset);
  const bool same_type = H5Tequal(ftype, h5type(elem)) > 0;
  H5Tclose(ftype);
  if (!same_type) {
    H5Dclose(dset);
    agree(impl_->comm, where + ": stored with another element type than " + elem_name(elem),
          exit_code::bad_input);
  }
  hid_t fspace = H5Dget_space(dset);
  std::vector<hsize_t> cnt(block.count.begin(), block.count.end());
  hid_t mspace = cnt.empty() ? H5Screate(H5S_SCALAR)
                             : H5Screate_simple(static_cast<int>(cnt.size()), cnt.data(), nullptr);
  select(fspace, block, false);
  hid_t dxpl = collective_transfer();
  const herr_t rc = H5Dread(dset, h5type(elem), mspace, fspace, dxpl, data);
  H5Pclose(dxpl);
  H5Sclose(mspace);
  H5Sclose(fspace);
  std::uint64_t stored_sum = 0;
  const bool has_sum = read_scalar_attr(dset, "checksum", H5T_NATIVE_UINT64, stored_sum);
  H5Dclose(dset);
  agree(impl_->comm, rc < 0 ? where + ": reading failed (truncated or corrupted file?)" : "",
        exit_code::bad_input);
  agree(impl_->comm, has_sum ? "" : where + ": has no checksum attribute", exit_code::bad_input);

  // Blocks that partition the array add up to its checksum; a whole-array
  // read (replicated data) is checked by each rank on its own.
  std::uint64_t sum = host_checksum(data, elem, block);
  bool whole_read = true;
  for (std::size_t d = 0; d < block.global.size(); ++d) {
    whole_read = whole_read && block.offset[d] == 0 && block.count[d] == block.global[d];
  }
  int all_whole = whole_read ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &all_whole, 1, MPI_INT, MPI_LAND, impl_->comm);
  if (!all_whole) MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_UINT64_T, MPI_SUM, impl_->comm);
  std::ostringstream msg;
  if (sum != stored_sum) {
    msg << where << ": checksum mismatch (stored " << stored_sum << ", computed " << sum
        << "): the file is corrupted";
  }
  agree(impl_->comm, msg.str(), exit_code::bad_input);

  // Values a run cannot continue from (the checksum only says the file is
  // as written: a run that had diverged, or an edit, writes them too).
  std::string bad;
  if (values != Values::any && elem == detail::Elem::f64) {
    bad = first_bad_value(static_cast<const double*>(data), block, values);
  } else if (values != Values::any && elem == detail::Elem::f32) {
    bad = first_bad_value(static_cast<const float*>(data), block, values);
  }
  agree(impl_->comm, bad.empty() ? "" : where + ": " + bad, exit_code::bad_input);
}

// ---- housekeeping and sidecars -----------------------------------------------------

void keep_last(const std::string& dir, const std::string& stem, int keep, long long newest) {
  // <stem>_<digits>.h5, with the step as the number.
  const std::string prefix = stem + "_";
  std::vector<std::pair<long long, fs::path>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir.empty() ? "." : dir, ec)) {
    const std::string file = entry.path().filename().string();
    if (file.size() <= prefix.size() + 3 || file.compare(0, prefix.size(), prefix) != 0 ||
        file.compare(file.size() - 3, 3, ".h5") != 0) {
      continue;
    }
    const std::string digits = file.substr(prefix.size(), file.size() - prefix.size() - 3);
    if (digits.empty() || digits.size() > 18 ||
        digits.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    const long long step = std::stoll(digits);
    if (newest < 0 || step <= newest) found.emplace_back(step, entry.path());
  }
  std::sort(found.begin(), found.end());
  const std::size_t keep_n = static_cast<std::size_t>(std::max(keep, 0));
  for (std::size_t i = 0; i + keep_n < found.size(); ++i) {
    fs::remove(found[i].second, ec);
    auto xmf = found[i].second;
    xmf.replace_extension(".xmf");
    fs::remove(xmf, ec);
  }
}

void write_xdmf(const std::string& xmf_path, const std::string& h5_file,
                const std::vector<std::size_t>& cells, const std::vector<double>& origin,
                const std::vector<double>& spacing, const std::vector<XdmfField>& fields,
                double time) {
  const std::size_t nd = cells.size();
  if ((nd != 2 && nd != 3) || origin.size() != nd || spacing.size() != nd) {
    throw Error("kpmap::checkpoint::write_xdmf: give 2 or 3 cell extents, origins and spacings");
  }
  auto join = [](const auto& v, auto f) {
    std::ostringstream s;
    s.precision(17);
    for (std::size_t i = 0; i < v.size(); ++i) s << (i ? " " : "") << f(v[i]);
    return s.str();
  };
  std::vector<std::size_t> nodes;
  for (auto c : cells) nodes.push_back(c + 1);
  const std::string dim = std::to_string(nd);
  std::ostringstream x;
  x << "<?xml version=\"1.0\" ?>\n"
    << "<Xdmf Version=\"3.0\">\n  <Domain>\n    <Grid Name=\"mesh\" GridType=\"Uniform\">\n"
    << "      <Time Value=\"" << time << "\"/>\n"
    << "      <Topology TopologyType=\"" << dim << "DCoRectMesh\" Dimensions=\""
    << join(nodes, [](auto v) { return v; }) << "\"/>\n"
    << "      <Geometry GeometryType=\"ORIGIN_" << (nd == 2 ? "DXDY" : "DXDYDZ") << "\">\n"
    << "        <DataItem Dimensions=\"" << dim << "\" Format=\"XML\">"
    << join(origin, [](auto v) { return v; }) << "</DataItem>\n"
    << "        <DataItem Dimensions=\"" << dim << "\" Format=\"XML\">"
    << join(spacing, [](auto v) { return v; }) << "</DataItem>\n"
    << "      </Geometry>\n";
  for (const auto& f : fields) {
    x << "      <Attribute Name=\"" << f.name << "\" AttributeType=\"Scalar\" Center=\"Cell\">\n"
      << "        <DataItem Dimensions=\"" << join(cells, [](auto v) { return v; })
      << "\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">" << h5_file << ":/" << f.dataset
      << "</DataItem>\n      </Attribute>\n";
  }
  x << "    </Grid>\n  </Domain>\n</Xdmf>\n";
  files::write_atomic(xmf_path, x.str());
}

std::string last_good_note(const std::string& file) {
  if (file.empty()) return "; no checkpoint was written";
  return "; the last good checkpoint is " + file + " (continue with --restart " + file + ")";
}

}  // namespace kpmap::checkpoint
