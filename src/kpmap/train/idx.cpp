// IDX files (the MNIST family's format) through zlib, which reads
// gzip-compressed and plain files alike: a 4-byte magic number (0, 0, element
// type, number of dimensions), the dimensions as big-endian 32-bit integers,
// then the elements in row-major order.

#include <kpmap/files.hpp>
#include <kpmap/train/data.hpp>

#include <zlib.h>

#include <climits>
#include <cstring>
#include <filesystem>
#include <memory>

namespace kpmap::train {

namespace {

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

std::uint32_t big_endian(const unsigned char* b) {
  return (std::uint32_t(b[0]) << 24) | (std::uint32_t(b[1]) << 16) | (std::uint32_t(b[2]) << 8) |
         std::uint32_t(b[3]);
}

// Reads exactly `bytes` bytes, or says why not.
std::string read_exactly(gzFile f, unsigned char* out, std::size_t bytes) {
  while (bytes > 0) {
    const unsigned chunk = bytes > (1u << 30) ? (1u << 30) : static_cast<unsigned>(bytes);
    const int got = gzread(f, out, chunk);
    if (got < 0) {
      int code = 0;
      const char* msg = gzerror(f, &code);
      return std::string("it cannot be read (") + (msg ? msg : "zlib error") + ")";
    }
    if (got == 0) return "it ends early (truncated?)";
    out += got;
    bytes -= static_cast<std::size_t>(got);
  }
  return "";
}

std::string read_header(const std::string& path, IdxInfo& info, std::size_t& header_bytes) {
  if (std::string why = files::not_a_regular_file(path); !why.empty()) return why;
  GzFile f(gzopen(path.c_str(), "rb"));
  if (!f) return "cannot be opened";
  unsigned char magic[4];
  if (auto e = read_exactly(f.get(), magic, 4); !e.empty()) return "is not an IDX file: " + e;
  if (magic[0] != 0 || magic[1] != 0 || magic[3] == 0) {
    return "is not an IDX file (its first bytes are not an IDX magic number)";
  }
  if (magic[2] != 0x08) {
    char code[8];
    std::snprintf(code, sizeof code, "0x%02x", magic[2]);
    return std::string("holds IDX elements of type ") + code +
           "; kpmap reads unsigned bytes (type 0x08)";
  }
  const unsigned ndims = magic[3];
  std::vector<unsigned char> d(4 * ndims);
  if (auto e = read_exactly(f.get(), d.data(), d.size()); !e.empty()) {
    return "has a cut-off IDX header: " + e;
  }
  info.dims.clear();
  for (unsigned i = 0; i < ndims; ++i) info.dims.push_back(big_endian(&d[4 * i]));
  header_bytes = 4 + 4 * ndims;
  return "";
}

}  // namespace

IdxInfo idx_info(const std::string& path, const std::string& key, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  IdxInfo info;
  std::string error;
  if (rank == 0) {
    std::size_t header = 0;
    error = read_header(path, info, header);
  }
  // Share the outcome: the error text, or the dimensions.
  int length = static_cast<int>(error.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, comm);
  error.resize(static_cast<std::size_t>(length));
  MPI_Bcast(error.data(), length, MPI_CHAR, 0, comm);
  if (!error.empty()) {
    throw InputError("data file " + path + " (" + key + ") " + error, ErrorScope::all_ranks);
  }
  unsigned long long n = info.dims.size();
  MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, comm);
  std::vector<unsigned long long> dims(info.dims.begin(), info.dims.end());
  dims.resize(n);
  MPI_Bcast(dims.data(), static_cast<int>(n), MPI_UNSIGNED_LONG_LONG, 0, comm);
  info.dims.assign(dims.begin(), dims.end());
  return info;
}

std::vector<double> read_idx_items(const std::string& path, const IdxInfo& info, std::size_t begin,
                                   std::size_t count) {
  const std::size_t item = info.item_size();
  std::vector<double> out(count * item);
  if (count == 0) return out;
  IdxInfo here;
  std::size_t header = 0;
  std::string e = read_header(path, here, header);
  if (e.empty() && here.dims != info.dims) e = "changed while it was being read";
  GzFile f(e.empty() ? gzopen(path.c_str(), "rb") : nullptr);
  if (e.empty() && !f) e = "cannot be opened";
  if (e.empty()) {
    gzbuffer(f.get(), 1 << 18);
    const auto offset = static_cast<long long>(header + begin * item);
    if (offset > LONG_MAX || gzseek(f.get(), static_cast<z_off_t>(offset), SEEK_SET) < 0) {
      e = "ends before item " + std::to_string(begin) + " (truncated?)";
    }
  }
  if (e.empty()) {
    std::vector<unsigned char> bytes(count * item);
    e = read_exactly(f.get(), bytes.data(), bytes.size());
    for (std::size_t i = 0; i < bytes.size(); ++i) out[i] = bytes[i];
  }
  if (!e.empty()) throw InputError("data file " + path + " " + e);
  return out;
}

void PixelScaling::apply(std::vector<double>& x, std::size_t channels) const {
  for (std::size_t i = 0; i < x.size(); ++i) {
    double v = x[i] / 255.0;
    if (!mean.empty()) {
      const std::size_t c = i % channels;
      v = (v - mean[c]) / std[c];
    }
    x[i] = v;
  }
}

}  // namespace kpmap::train
