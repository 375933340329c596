// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/io/checkpoint.hpp>
#include <kpmap/io/detail/attributes.hpp>

#include <kpmap/base/files.hpp>
#include <kpmap/transport/host.hpp>

#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>
#include <utility>

namespace kpmap::checkpoint {

using namespace detail;  // the shared pieces of io/detail/attributes.hpp

struct Reader::Impl {
  std::string path;
  MPI_Comm comm = MPI_COMM_NULL;
  hid_t file = -1;
  Metadata meta;
};

Reader::Reader(const std::string& path, MPI_Comm comm, const std::string& expected_app)
    : impl_(std::make_unique<Impl>()) {
  ErrorStackSilenced quiet;
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
  } else if (step < 0 || step > max_step) {
    error = "restart file " + path + ": attribute step is " + std::to_string(step) +
            " (a damaged file: a step lies from 0 to " + std::to_string(max_step) +
            ", the most steps a run can take)";
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
    ErrorStackSilenced quiet;
    H5Fclose(impl_->file);
  }
}

const Metadata& Reader::metadata() const noexcept { return impl_->meta; }

std::optional<std::int64_t> Reader::integer(const std::string& name) const {
  ErrorStackSilenced quiet;
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
  ErrorStackSilenced quiet;
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

// Elements [first, last) of the array's row-major order that `b` is, when it
// is such a run (a flat range of the whole array, rows of whole rows, a scalar).
std::optional<std::pair<std::size_t, std::size_t>> run_of(const Block& b) {
  if (b.global.empty()) return std::make_pair(std::size_t{0}, elements(b) > 0 ? 1 : 0);
  if (b.flat) {
    if (!b.box_count.empty() && b.box_count != b.global) return std::nullopt;
    return std::make_pair(b.offset[0], b.offset[0] + b.count[0]);
  }
  std::size_t row = 1;
  for (std::size_t d = 1; d < b.global.size(); ++d) {
    if (b.offset[d] != 0 || b.count[d] != b.global[d]) return std::nullopt;
    row *= b.global[d];
  }
  return std::make_pair(b.offset[0] * row, (b.offset[0] + b.count[0]) * row);
}

// Where the elements of written block `w` start among those of `b`, when
// they are all there, one after another in w's order; nothing otherwise.
std::optional<std::size_t> inside(const Block& w, const Block& b) {
  const auto rw = run_of(w), rb = run_of(b);
  if (rw && rb) {
    if (rw->first >= rb->first && rw->second <= rb->second) return rw->first - rb->first;
    return std::nullopt;
  }
  if (!w.flat && !b.flat) {  // rows of a box inside a box as wide
    for (std::size_t d = 1; d < w.global.size(); ++d) {
      if (w.offset[d] != b.offset[d] || w.count[d] != b.count[d]) return std::nullopt;
    }
    if (w.offset[0] < b.offset[0] || w.offset[0] + w.count[0] > b.offset[0] + b.count[0]) {
      return std::nullopt;
    }
    return (w.offset[0] - b.offset[0]) * (elements(b) / std::max<std::size_t>(b.count[0], 1));
  }
  if (w.flat && b.flat && w.box_offset == b.box_offset && w.box_count == b.box_count &&
      w.offset[0] >= b.offset[0] && w.offset[0] + w.count[0] <= b.offset[0] + b.count[0]) {
    return w.offset[0] - b.offset[0];
  }
  return std::nullopt;
}

std::string block_text(const Block& b) {
  std::ostringstream s;
  if (b.flat) {
    s << "elements " << b.offset[0] << " to " << b.offset[0] + b.count[0] - 1;
    if (!b.box_count.empty()) s << " of the box at " << shape_text(b.box_offset);
  } else {
    s << "the block of " << shape_text(b.count) << " at " << shape_text(b.offset);
  }
  return s.str();
}

// Checks every block written of dataset `dset` (rows of `table`) against its
// XXH3: this rank's own block (row `same`, hashed while it was read:
// `same_hash`) and those inside it from the elements read (`data`, in
// block's order); the blocks no rank holds whole are read again from the
// file, each by one rank. Collective. "" or why the checksum does not match.
std::string check_blocks(MPI_Comm comm, hid_t dset, hid_t fspace, Elem elem, const void* data,
                         const Block& block, const std::vector<std::uint64_t>& table,
                         std::size_t same, std::uint64_t same_hash) {
  const std::size_t width = record_width(block.global.size());
  const std::size_t rows = table.size() / width;
  const std::size_t esize = elem_bytes(elem);
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::string bad;
  const auto compare = [&](std::size_t j, std::uint64_t got) {
    const std::uint64_t want = table[j * width + width - 1];
    if (got == want || !bad.empty()) return;
    std::ostringstream s;
    s << "in " << block_text(record_block(&table[j * width], block.global)) << " (XXH3 stored "
      << std::hex << want << ", computed " << got << "): the file is corrupted";
    bad = s.str();
  };
  // The blocks written must be every element once: a table that misses one
  // would leave it unchecked.
  const std::size_t written = table_elements(table, block.global);
  const std::size_t all = elements(whole(block.global));
  if (written != all) {
    return "(its checksum_blocks hold " + std::to_string(written) + " elements of " +
           std::to_string(all) + "): the file is corrupted";
  }
  std::vector<int> seen(rows, 0);
  if (same < rows) {
    seen[same] = 1;
    compare(same, same_hash);
  }
  for (std::size_t j = 0; j < rows; ++j) {
    if (j == same) continue;
    const Block w = record_block(&table[j * width], block.global);
    if (const auto at = inside(w, block)) {
      BlockHash h;
      h.add(static_cast<const char*>(data) + *at * esize, elements(w) * esize);
      seen[j] = 1;
      compare(j, h.value());
    }
  }
  transport::host_allreduce(seen.data(), seen.size(), MPI_MAX, comm);
  std::vector<char> again;
  for (std::size_t j = 0; j < rows; ++j) {
    if (seen[j] || static_cast<int>(j % static_cast<std::size_t>(size)) != rank) continue;
    const Block w = record_block(&table[j * width], block.global);
    BlockHash h;
    for (const Slab& part : slabs(w, esize, slab_bytes)) {
      const std::size_t n = elements(part.block);
      again.resize(n * esize);
      std::vector<hsize_t> cnt(part.block.count.begin(), part.block.count.end());
      hid_t mspace = cnt.empty()
                         ? H5Screate(H5S_SCALAR)
                         : H5Screate_simple(static_cast<int>(cnt.size()), cnt.data(), nullptr);
      select(fspace, part.block, false);
      const herr_t rc = H5Dread(dset, h5type(elem), mspace, fspace, H5P_DEFAULT, again.data());
      H5Sclose(mspace);
      if (rc < 0) return "(reading " + block_text(w) + " again failed): the file is corrupted";
      h.add(again.data(), n * esize);
    }
    compare(j, h.value());
  }
  return bad;
}
}  // namespace

void Reader::read_raw(const std::string& name, detail::Elem elem, void* data,
                      const std::vector<std::size_t>& local_extents, const Block& block,
                      Values values) {
  ErrorStackSilenced quiet;
  const std::string where = "restart file " + impl_->path + ", dataset '" + name + "'";
  agree(impl_->comm, check_block(name, local_extents, block), exit_code::failure);
  const auto stored = shape(name);
  agree(impl_->comm,
        stored != block.global
            ? where + ": its shape is " + shape_text(stored) + " but this run needs " +
                  shape_text(block.global) +
                  (impl_->meta.deck.empty()
                       ? std::string(" (read it with the global shape it was written with)")
                       : " (does the deck match the run that wrote it?)")
            : "",
        exit_code::bad_input);
  hid_t dset = H5Dopen2(impl_->file, name.c_str(), H5P_DEFAULT);
  hid_t ftype = H5Dget_type(dset);
  const bool same_type = H5Tequal(ftype, h5type(elem)) > 0;
  H5Tclose(ftype);
  if (!same_type) {
    H5Dclose(dset);
    agree(impl_->comm, where + ": stored with another element type than " + kpmap::word_of(elem),
          exit_code::bad_input);
  }
  // The dataset's checksum: XXH3 of each block as it was written (a table,
  // checksum_blocks), or, in files of earlier versions, one sum over its
  // elements (checksum, BlockChecksum).
  std::string algorithm;
  const bool by_block = read_string_attr(dset, "checksum_algorithm", algorithm);
  const std::size_t width = record_width(block.global.size());
  std::vector<std::uint64_t> table;
  std::uint64_t stored_sum = 0;
  const bool has_sum =
      by_block ? algorithm == xxh3_blocks && read_table_attr(dset, "checksum_blocks", table, width)
               : read_scalar_attr(dset, "checksum", H5T_NATIVE_UINT64, stored_sum);
  if (!has_sum) {
    H5Dclose(dset);
    agree(impl_->comm,
          !by_block ? where + ": has no checksum attribute"
          : algorithm != xxh3_blocks
              ? where + ": its checksum is '" + algorithm +
                    "', which this kpmap does not know (written by a newer version?)"
              : where + ": its checksum_blocks attribute is missing or damaged",
          exit_code::bad_input);
  }
  // The table is the file's: every row is checked before its offsets and
  // counts are added up or used to find elements (a wrapped sum would pass
  // the count check below and index far outside the data read).
  if (by_block) {
    const std::string problem = table_problem(table, block.global);
    try {
      agree(impl_->comm, problem.empty() ? "" : where + ": " + problem, exit_code::bad_input);
    } catch (const Error&) {
      H5Dclose(dset);
      throw;
    }
  }
  // This rank's block as it was written (a restart at the same
  // decomposition): hashed part by part as it is read.
  const std::size_t rows = table.size() / width;
  std::size_t same = rows;
  for (std::size_t j = 0; j < rows && same == rows; ++j) {
    if (same_block(&table[j * width], block)) same = j;
  }

  // Read and hash a few MiB at a time: the checksum and the check of the
  // values read each part while it is still in cache, instead of two more
  // passes over memory after the read. Every rank makes as many (collective)
  // reads as the rank with the most parts; past its own, it reads nothing.
  const std::size_t esize = elem_bytes(elem);
  const std::vector<Slab> parts = slabs(block, esize, slab_bytes);
  unsigned long long calls = parts.size();
  transport::host_allreduce(&calls, 1, MPI_MAX, impl_->comm);
  hid_t fspace = H5Dget_space(dset);
  hid_t dxpl = collective_transfer();
  herr_t rc = 0;
  std::uint64_t mine = 0;
  BlockHash hash;
  std::string bad;
  for (std::size_t i = 0; i < calls; ++i) {
    const bool nothing = i >= parts.size();
    const Slab& part = parts[nothing ? parts.size() - 1 : i];
    char* at = static_cast<char*>(data) + part.at * esize;
    std::vector<hsize_t> cnt(part.block.count.begin(), part.block.count.end());
    hid_t mspace = cnt.empty()
                       ? H5Screate(H5S_SCALAR)
                       : H5Screate_simple(static_cast<int>(cnt.size()), cnt.data(), nullptr);
    if (nothing) H5Sselect_none(mspace);
    select(fspace, part.block, nothing);
    const herr_t got = H5Dread(dset, h5type(elem), mspace, fspace, dxpl, at);
    H5Sclose(mspace);
    if (got < 0) rc = got;
    if (nothing || rc < 0) continue;
    if (!by_block) mine += host_checksum(at, elem, part.block);
    // Hashed and checked 128 KiB at a time: what the hash has read, the
    // check finds in the processor's nearest caches.
    const std::size_t n = elements(part.block);
    constexpr std::size_t piece = std::size_t{128} << 10;
    bool good = true;
    for (std::size_t off = 0; off < n * esize; off += piece) {
      const std::size_t len = std::min(piece, n * esize - off);
      if (by_block && same < rows) hash.add(at + off, len);
      if (good && bad.empty()) good = all_good(at + off, elem, len / esize, values);
    }
    if (!good && bad.empty()) {
      bad = first_bad_value(at, elem, part.block, values);
    }
  }
  H5Pclose(dxpl);
  if (rc < 0) {
    H5Sclose(fspace);
    H5Dclose(dset);
  }
  agree(impl_->comm, rc < 0 ? where + ": reading failed (truncated or corrupted file?)" : "",
        exit_code::bad_input);

  std::ostringstream msg;
  if (by_block) {
    msg << check_blocks(impl_->comm, dset, fspace, elem, data, block, table, same,
                        same < rows ? hash.value() : 0);
    if (!msg.str().empty()) msg.str(where + ": checksum mismatch " + msg.str());
  } else {
    // Blocks that partition the array add up to its checksum (a copy of
    // another rank's block adds nothing: that rank counts it); a whole-array
    // read (replicated data) is checked by each rank on its own.
    const bool whole_read = covers_all(block);
    std::uint64_t sum = mine;
    int all_whole = whole_read ? 1 : 0;
    transport::host_allreduce(&all_whole, 1, MPI_LAND, impl_->comm);
    if (!all_whole) {
      sum = block.copy ? 0 : mine;
      transport::host_allreduce(&sum, 1, MPI_SUM, impl_->comm);
    }
    if (sum != stored_sum) {
      msg << where << ": checksum mismatch (stored " << stored_sum << ", computed " << sum
          << "): the file is corrupted";
    }
  }
  H5Sclose(fspace);
  H5Dclose(dset);
  agree(impl_->comm, msg.str(), exit_code::bad_input);

  // Values a run cannot continue from (the checksum only says the file is
  // as written: a run that had diverged, or an edit, writes them too).
  agree(impl_->comm, bad.empty() ? "" : where + ": " + bad, exit_code::bad_input);
}

}  // namespace kpmap::checkpoint
