// SPDX-License-Identifier: BSD-3-Clause
// IDX files (the MNIST family's format) through zlib, which reads
// gzip-compressed and plain files alike: a 4-byte magic number (0, 0, element
// type, number of dimensions), the dimensions as big-endian 32-bit integers,
// then the elements in row-major order.

#include <kpmap/base/files.hpp>
#include <kpmap/train/data_files.hpp>
#include <kpmap/transport/host.hpp>

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

// Why zlib could not read `f`: its message without the path it prefixes.
std::string gz_error(gzFile f, const std::string& path) {
  int code = 0;
  const char* msg = gzerror(f, &code);
  std::string text = msg != nullptr && *msg != '\0' ? msg : "zlib error";
  if (text.rfind(path + ": ", 0) == 0) text.erase(0, path.size() + 2);
  return "cannot be read: " + text + " (a damaged .gz file?)";
}

// Reads exactly `bytes` bytes, or says why not.
std::string read_exactly(gzFile f, const std::string& path, unsigned char* out, std::size_t bytes) {
  while (bytes > 0) {
    const unsigned chunk = bytes > (1u << 30) ? (1u << 30) : static_cast<unsigned>(bytes);
    const int got = gzread(f, out, chunk);
    if (got < 0) return gz_error(f, path);
    if (got == 0) return "ends early (truncated?)";
    out += got;
    bytes -= static_cast<std::size_t>(got);
  }
  return "";
}

// Reads the header of `path` into `info` (its dimensions) and `header_bytes`;
// returns why the file is no IDX file of unsigned bytes, or "".
std::string read_header(const std::string& path, IdxInfo& info, std::size_t& header_bytes) {
  if (std::string why = files::not_a_regular_file(path); !why.empty()) return why;
  GzFile f(gzopen(path.c_str(), "rb"));
  if (!f) return "cannot be opened";
  unsigned char magic[4];
  if (auto e = read_exactly(f.get(), path, magic, 4); !e.empty()) {
    return e.rfind("ends", 0) == 0 ? "is not an IDX file: it is shorter than an IDX header" : e;
  }
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
  if (auto e = read_exactly(f.get(), path, d.data(), d.size()); !e.empty()) {
    return e.rfind("ends", 0) == 0 ? "has a cut-off IDX header (truncated?)" : e;
  }
  info.dims.clear();
  for (unsigned i = 0; i < ndims; ++i) info.dims.push_back(big_endian(&d[4 * i]));
  header_bytes = 4 + 4 * ndims;
  return "";
}

// "60000 x 28 x 28"
std::string extents(const std::vector<std::size_t>& dims) {
  std::string s;
  for (std::size_t d : dims) s += (s.empty() ? "" : " x ") + std::to_string(d);
  return s;
}

// Checks that the header's dimensions describe the file: their product does
// not overflow, and the data after the header is exactly that many bytes
// (counted through the whole gzip stream, which also proves it intact).
std::string check_size(const std::string& path, const IdxInfo& info, std::size_t header) {
  std::size_t bytes = 1;
  for (std::size_t d : info.dims) {
    if (__builtin_mul_overflow(bytes, d, &bytes)) {
      return "has an IDX header of " + extents(info.dims) +
             " elements, more than 2^64 bytes: the header is damaged";
    }
  }
  GzFile f(gzopen(path.c_str(), "rb"));
  if (!f) return "cannot be opened";
  gzbuffer(f.get(), 1 << 18);
  std::vector<unsigned char> buffer(1 << 20);
  std::size_t total = 0;
  for (;;) {
    const int got = gzread(f.get(), buffer.data(), static_cast<unsigned>(buffer.size()));
    if (got < 0) return gz_error(f.get(), path);
    if (got == 0) break;
    total += static_cast<std::size_t>(got);
  }
  const std::size_t data = total >= header ? total - header : 0;
  if (data != bytes) {
    return "has an IDX header of " + extents(info.dims) + " = " + std::to_string(bytes) +
           " bytes of data, but " + std::to_string(data) + " follow it" +
           (data < bytes ? " (a truncated file?)" : " (trailing bytes: a damaged header?)");
  }
  return "";
}

}  // namespace

IdxInfo idx_info(const std::string& path, const std::string& key, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  IdxInfo info;
  info.path = path;
  info.key = key;
  std::string error;
  if (rank == 0) {
    std::size_t header = 0;
    error = read_header(path, info, header);
    if (error.empty()) error = check_size(path, info, header);
    if (!error.empty()) error = info.where() + " " + error;
  }
  kpmap::transport::agree(comm, error, exit_code::bad_input);
  // Share the dimensions.
  unsigned long long n = info.dims.size();
  transport::host_bcast(&n, 1, 0, comm);
  std::vector<unsigned long long> dims(info.dims.begin(), info.dims.end());
  dims.resize(n);
  transport::host_bcast(dims.data(), n, 0, comm);
  info.dims.assign(dims.begin(), dims.end());
  return info;
}

std::string read_idx_items(const IdxInfo& info, std::size_t begin, std::size_t count,
                           std::vector<double>& out) {
  const std::size_t item = info.item_size();
  out.assign(count * item, 0.0);
  if (count == 0) return "";
  IdxInfo here;
  std::size_t header = 0;
  std::string e = read_header(info.path, here, header);
  if (e.empty() && here.dims != info.dims) e = "changed while it was being read";
  GzFile f(e.empty() ? gzopen(info.path.c_str(), "rb") : nullptr);
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
    e = read_exactly(f.get(), info.path, bytes.data(), bytes.size());
    for (std::size_t i = 0; i < bytes.size(); ++i) out[i] = bytes[i];
  }
  return e.empty() ? ""
                   : info.where() + ": items " + std::to_string(begin) + " to " +
                         std::to_string(begin + count - 1) + ": " + e;
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
