// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/base/files.hpp>
#include <kpmap/io/detail/hdf5.hpp>
#include <kpmap/train/data_files.hpp>

#include <hdf5.h>

#include <cmath>
#include <filesystem>

namespace kpmap::train {

namespace {

using kpmap::detail::h5::agree;

// An open data file, closed on every rank when it goes out of scope. Every
// failure after the open is agreed by all ranks (h5::agree) before anyone
// leaves, so all ranks reach H5Fclose, which is collective.
struct DataFile {
  hid_t id = -1;
  explicit DataFile(hid_t file) : id(file) {}
  ~DataFile() {
    if (id >= 0) H5Fclose(id);
  }
  DataFile(const DataFile&) = delete;
  DataFile& operator=(const DataFile&) = delete;
};

// Opens `path` read-only over `comm`, or throws the same InputError everywhere.
hid_t open_data_file(const std::string& path, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string error;
  if (rank == 0) {
    if (const std::string why = files::not_a_regular_file(path); !why.empty()) {
      error = "data file " + path + " " + why + " (data.path)";
    } else if (H5Fis_hdf5(path.c_str()) <= 0) {
      error = "data file " + path + " is not an HDF5 file (data.path)";
    }
  }
  agree(comm, error, exit_code::bad_input);
  hid_t fapl = kpmap::detail::h5::mpio_access(comm);
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl);
  H5Pclose(fapl);
  agree(comm, file < 0 ? "data file " + path + " cannot be opened as HDF5" : "",
        exit_code::bad_input);
  return file;
}

// Why dataset `d`'s storage cannot be read here ("" when it can): a filter
// this HDF5 build lacks, or data kept in external files.
std::string storage_problem(hid_t d) {
  hid_t dcpl = H5Dget_create_plist(d);
  std::string why;
  const int filters = H5Pget_nfilters(dcpl);
  for (int i = 0; i < filters && why.empty(); ++i) {
    unsigned flags = 0;
    std::size_t n = 0;
    char name[128] = {};
    unsigned config = 0;
    const H5Z_filter_t id = H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &n, nullptr,
                                           sizeof name, name, &config);
    if (id >= 0 && H5Zfilter_avail(id) <= 0) {
      why = "is compressed with filter " + std::to_string(id) + (name[0] ? " (" : "") + name +
            (name[0] ? ")" : "") + ", which this HDF5 library does not have";
    }
  }
  if (why.empty() && H5Pget_external_count(dcpl) > 0) {
    why =
        "keeps its data in external files, which parallel HDF5 does not read (copy it into "
        "the file: h5repack)";
  }
  H5Pclose(dcpl);
  return why;
}

// Extents of dataset `name`, or an error message naming it.
std::string dataset_extents(hid_t file, const std::string& path, const std::string& name,
                            const char* key, std::vector<hsize_t>& dims, bool* bytes = nullptr) {
  if (H5Lexists(file, name.c_str(), H5P_DEFAULT) <= 0) {
    return "data file " + path + " has no dataset '" + name + "' (" + key + ")";
  }
  hid_t d = H5Dopen2(file, name.c_str(), H5P_DEFAULT);
  if (d < 0) return "data file " + path + ": '" + name + "' is not a dataset (" + key + ")";
  hid_t space = H5Dget_space(d);
  const int rank = H5Sget_simple_extent_ndims(space);
  dims.assign(static_cast<std::size_t>(rank > 0 ? rank : 0), 0);
  if (rank > 0) H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  hid_t type = H5Dget_type(d);
  const bool numeric = H5Tget_class(type) == H5T_FLOAT || H5Tget_class(type) == H5T_INTEGER;
  if (bytes != nullptr) {
    *bytes = H5Tget_class(type) == H5T_INTEGER && H5Tget_size(type) == 1 &&
             H5Tget_sign(type) == H5T_SGN_NONE;
  }
  const std::string storage = storage_problem(d);
  H5Tclose(type);
  H5Sclose(space);
  H5Dclose(d);
  if (!numeric) {
    return "data file " + path + ": dataset '" + name + "' is not numeric (" + key + ")";
  }
  if (!storage.empty())
    return "data file " + path + ": dataset '" + name + "' " + storage + " (" + key + ")";
  return "";
}

std::string check_shape(hid_t file, const std::string& path, const std::string& x_name,
                        const std::string& y_name, HdfDataShape& shape) {
  std::vector<hsize_t> dx;
  std::vector<hsize_t> dy;
  std::string e = dataset_extents(file, path, x_name, "data.x", dx, &shape.bytes);
  if (e.empty()) e = dataset_extents(file, path, y_name, "data.y", dy);
  if (!e.empty()) return e;
  if (dx.size() < 2 || dx.size() > 4) {
    return "data file " + path + ": features dataset '" + x_name + "' must be samples x " +
           "features, or images: samples x height x width (x channels); it has " +
           std::to_string(dx.size()) + " dimensions (data.x)";
  }
  const bool column = dy.size() == 2 && dy[1] == 1;
  if (!(dy.size() == 1 || column)) {
    return "data file " + path + ": targets dataset '" + y_name +
           "' must be 1-D (samples), or samples x 1 (data.y)";
  }
  if (dy[0] != dx[0]) {
    return "data file " + path + ": '" + x_name + "' has " + std::to_string(dx[0]) +
           " samples but '" + y_name + "' has " + std::to_string(dy[0]) + " (data.x, data.y)";
  }
  shape.samples = static_cast<std::size_t>(dx[0]);
  shape.sample.assign(dx.begin() + 1, dx.end());
  shape.features = 1;
  for (std::size_t d : shape.sample) shape.features *= d;
  if (shape.features == 0) {
    std::string extents;
    for (hsize_t d : dx) extents += (extents.empty() ? "" : " x ") + std::to_string(d);
    return "data file " + path + ": features dataset '" + x_name + "' is " + extents +
           ": its samples have no features (data.x)";
  }
  return "";
}

// Reads rows [begin, begin + rows) of `name` (its first dimension) as doubles,
// collectively; returns why that failed, naming file, dataset, key and rows,
// or "".
std::string read_rows(hid_t file, const std::string& path, const std::string& name, const char* key,
                      std::size_t begin, std::size_t rows, double* out) {
  hid_t d = H5Dopen2(file, name.c_str(), H5P_DEFAULT);
  hid_t space = H5Dget_space(d);
  const int ndims = H5Sget_simple_extent_ndims(space);
  std::vector<hsize_t> off(static_cast<std::size_t>(ndims), 0);
  std::vector<hsize_t> cnt(static_cast<std::size_t>(ndims), 0);
  H5Sget_simple_extent_dims(space, cnt.data(), nullptr);
  off[0] = begin;
  cnt[0] = rows;
  if (rows == 0) {
    H5Sselect_none(space);
  } else {
    H5Sselect_hyperslab(space, H5S_SELECT_SET, off.data(), nullptr, cnt.data(), nullptr);
  }
  hid_t mem = H5Screate_simple(ndims, cnt.data(), nullptr);
  if (rows == 0) H5Sselect_none(mem);
  hid_t dxpl = kpmap::detail::h5::collective_transfer();
  const herr_t st = H5Dread(d, H5T_NATIVE_DOUBLE, mem, space, dxpl, out);
  const std::string reason = st < 0 ? kpmap::detail::h5::error_reason() : "";
  H5Pclose(dxpl);
  H5Sclose(mem);
  H5Sclose(space);
  H5Dclose(d);
  if (st >= 0) return "";
  return "data file " + path + ", dataset '" + name + "' (" + key + "): samples " +
         std::to_string(begin) + " to " + std::to_string(begin + rows - 1) +
         " cannot be read: " + (reason.empty() ? "HDF5 gives no reason" : reason) +
         " (a damaged file?)";
}

}  // namespace

HdfDataShape hdf5_data_shape(const std::string& path, const std::string& x_name,
                             const std::string& y_name, MPI_Comm comm) {
  kpmap::detail::h5::ErrorStackSilenced quiet;
  DataFile file(open_data_file(path, comm));
  HdfDataShape shape;
  agree(comm, check_shape(file.id, path, x_name, y_name, shape), exit_code::bad_input);
  return shape;
}

HostRows read_hdf5_rows(const std::string& path, const std::string& x_name,
                        const std::string& y_name, std::size_t begin, std::size_t rows,
                        MPI_Comm comm) {
  kpmap::detail::h5::ErrorStackSilenced quiet;
  HostRows h;
  {
    DataFile file(open_data_file(path, comm));
    HdfDataShape shape;
    std::string e = check_shape(file.id, path, x_name, y_name, shape);
    agree(comm, e, exit_code::bad_input);
    if (begin + rows > shape.samples)
      e = "data file " + path + ": rows past the end of the data set";
    agree(comm, e, exit_code::bad_input);
    h.features = shape.features;
    h.x.resize(rows * h.features);
    h.y.resize(rows);
    // Each read is collective: a rank whose read failed (a damaged chunk)
    // must not leave the others waiting in the next read; all agree first.
    agree(comm, read_rows(file.id, path, x_name, "data.x", begin, rows, h.x.data()),
          exit_code::bad_input);
    agree(comm, read_rows(file.id, path, y_name, "data.y", begin, rows, h.y.data()),
          exit_code::bad_input);
  }
  std::string e;
  // A NaN or an Inf in the data is bad input, found here rather than as a
  // loss that diverges later.
  for (std::size_t k = 0; k < h.x.size() && e.empty(); ++k) {
    if (!std::isfinite(h.x[k])) {
      e = "data file " + path + ", dataset '" + x_name + "': sample " +
          std::to_string(begin + k / h.features) + ", feature " + std::to_string(k % h.features) +
          " is " + (std::isnan(h.x[k]) ? "nan" : "inf") + " (the data must be finite numbers)";
    }
  }
  for (std::size_t k = 0; k < h.y.size() && e.empty(); ++k) {
    if (!std::isfinite(h.y[k])) {
      e = "data file " + path + ", dataset '" + y_name + "': sample " + std::to_string(begin + k) +
          " is " + (std::isnan(h.y[k]) ? "nan" : "inf") + " (the data must be finite numbers)";
    }
  }
  agree(comm, e, exit_code::bad_input);
  return h;
}

}  // namespace kpmap::train
