// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/io/detail/attributes.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

namespace kpmap::checkpoint {

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

Block flat_range(std::vector<std::size_t> global, std::size_t begin, std::size_t count) {
  Block b;
  b.global = std::move(global);
  b.offset = {begin};
  b.count = {count};
  b.flat = true;
  return b;
}

Block flat_range_in(const Block& box, std::size_t begin, std::size_t count) {
  Block b = flat_range(box.global, begin, count);
  b.box_offset = box.offset;
  b.box_count = box.count;
  b.copy = box.copy;
  return b;
}

namespace detail {

namespace {
std::size_t product(const std::vector<std::size_t>& e) {
  std::size_t n = 1;
  for (std::size_t x : e) n *= x;
  return n;
}

// Whether `count` elements from `offset` lie in [0, limit): offset + count <=
// limit, asked without the sum, which wraps for values read from a damaged file.
bool fits(std::size_t offset, std::size_t count, std::size_t limit) {
  return count <= limit && offset <= limit - count;
}

// Whether a flat block's box is one of its array: as many dimensions, and inside.
bool box_fits(const Block& b) {
  if (b.box_count.empty() && b.box_offset.empty()) return true;
  if (b.box_count.size() != b.global.size() || b.box_offset.size() != b.global.size()) {
    return false;
  }
  for (std::size_t d = 0; d < b.global.size(); ++d) {
    if (!fits(b.box_offset[d], b.box_count[d], b.global[d])) return false;
  }
  return true;
}
}  // namespace

Block linear(const Block& b) {
  if (!b.flat) return b;
  Block l;
  l.global = {product(b.box_count.empty() ? b.global : b.box_count)};
  l.offset = b.offset;
  l.count = b.count;
  return l;
}

bool covers_all(const Block& b) {
  if (b.flat && !b.box_count.empty() && b.box_count != b.global) return false;
  const Block l = linear(b);
  for (std::size_t d = 0; d < l.global.size(); ++d) {
    if (l.offset.at(d) != 0 || l.count.at(d) != l.global[d]) return false;
  }
  return true;
}

namespace {
// Adds the boxes that hold elements [begin, end) of the row-major order of
// dimensions d and on of `extents`, within the index `at` of the dimensions
// before d, to `out` (in the box's coordinates; `first` counts the elements
// added so far): a partial first row, whole rows, a partial last row, each
// split further where it is partial.
void range_boxes(const std::vector<std::size_t>& extents, std::size_t d,
                 std::vector<std::size_t>& at, std::size_t begin, std::size_t end,
                 std::vector<Piece>& out, std::size_t& first) {
  if (begin >= end) return;
  std::size_t inner = 1;  // elements of one index of dimension d
  for (std::size_t k = d + 1; k < extents.size(); ++k) inner *= extents[k];
  std::size_t r0 = begin / inner;
  const std::size_t r1 = end / inner;
  const auto part_of_row = [&](std::size_t row, std::size_t b, std::size_t e) {
    at.push_back(row);
    range_boxes(extents, d + 1, at, b, e, out, first);
    at.pop_back();
  };
  if (r0 == r1) {  // inside one index of dimension d
    part_of_row(r0, begin - r0 * inner, end - r0 * inner);
    return;
  }
  if (begin % inner != 0) part_of_row(r0++, begin % inner, inner);
  if (r1 > r0) {  // whole indices r0 .. r1 - 1 of dimension d
    Piece p;
    p.box.offset = at;
    p.box.count.assign(at.size(), 1);
    p.box.offset.push_back(r0);
    p.box.count.push_back(r1 - r0);
    for (std::size_t k = d + 1; k < extents.size(); ++k) {
      p.box.offset.push_back(0);
      p.box.count.push_back(extents[k]);
    }
    p.at = first;
    first += (r1 - r0) * inner;
    out.push_back(std::move(p));
  }
  if (end % inner != 0) part_of_row(r1, 0, end % inner);
}
}  // namespace

std::vector<Piece> pieces(const Block& b) {
  if (!b.flat) return {{b, 0}};
  std::vector<Piece> out;
  if (b.global.empty() || !box_fits(b)) return out;
  const bool boxed = !b.box_count.empty();
  const std::vector<std::size_t>& extents = boxed ? b.box_count : b.global;
  std::vector<std::size_t> at;
  std::size_t first = 0;
  range_boxes(extents, 0, at, b.offset.at(0), b.offset.at(0) + b.count.at(0), out, first);
  for (Piece& p : out) {
    p.box.global = b.global;
    p.box.copy = b.copy;
    if (boxed) {
      for (std::size_t d = 0; d < b.global.size(); ++d) p.box.offset[d] += b.box_offset[d];
    }
  }
  return out;
}

std::vector<Slab> slabs(const Block& b, std::size_t elem_bytes, std::size_t bytes) {
  if (b.count.empty() || b.count[0] <= 1) return {{b, 0}};
  std::size_t row = 1;  // elements of one index of the first dimension
  if (!b.flat) {
    for (std::size_t d = 1; d < b.count.size(); ++d) row *= b.count[d];
  }
  if (row == 0) return {{b, 0}};
  const std::size_t per =
      std::max<std::size_t>(1, bytes / (row * std::max<std::size_t>(elem_bytes, 1)));
  std::vector<Slab> out;
  for (std::size_t first = 0; first < b.count[0]; first += per) {
    Slab s{b, first * row};
    s.block.offset[0] += first;
    s.block.count[0] = std::min(per, b.count[0] - first);
    out.push_back(std::move(s));
  }
  return out;
}

hid_t h5type(Elem e) {
  switch (e) {
    case Elem::f32:
      return H5T_NATIVE_FLOAT;
    case Elem::f64:
      return H5T_NATIVE_DOUBLE;
    case Elem::i32:
      return H5T_NATIVE_INT32;
    case Elem::i64:
      return H5T_NATIVE_INT64;
    case Elem::u64:
      return H5T_NATIVE_UINT64;
  }
  return H5T_NATIVE_DOUBLE;
}

std::vector<std::uint64_t> block_record(const Block& b, std::uint64_t hash) {
  const std::size_t dims = b.global.size();
  std::vector<std::uint64_t> row(record_width(dims), 0);
  row[0] = b.flat && dims > 0 ? 1 : 0;  // a scalar's one element is the whole
  const std::vector<std::size_t>* fields[] = {&b.offset, &b.count, &b.box_offset, &b.box_count};
  for (std::size_t f = 0; f < 4; ++f) {
    for (std::size_t d = 0; d < fields[f]->size() && d < dims; ++d) {
      row[1 + f * dims + d] = (*fields[f])[d];
    }
  }
  row.back() = hash;
  return row;
}

Block record_block(const std::uint64_t* row, const std::vector<std::size_t>& global) {
  const std::size_t dims = global.size();
  if (dims == 0) return whole({});
  Block b;
  b.global = global;
  b.flat = row[0] == 1;
  const auto field = [&](std::size_t f, std::size_t n) {
    return std::vector<std::size_t>(row + 1 + f * dims, row + 1 + f * dims + n);
  };
  b.offset = field(0, b.flat ? 1 : dims);
  b.count = field(1, b.flat ? 1 : dims);
  if (b.flat) {
    bool boxed = false;
    for (std::size_t d = 0; d < dims; ++d) boxed |= row[1 + 3 * dims + d] != 0;
    if (boxed) {
      b.box_offset = field(2, dims);
      b.box_count = field(3, dims);
    }
  }
  return b;
}

std::size_t elements(const Block& b) { return product(b.count); }

std::size_t table_elements(const std::vector<std::uint64_t>& table,
                           const std::vector<std::size_t>& global) {
  const std::size_t width = record_width(global.size());
  constexpr std::size_t most = std::numeric_limits<std::size_t>::max();
  std::size_t n = 0;
  for (std::size_t j = 0; j + width <= table.size(); j += width) {
    const std::size_t e = elements(record_block(&table[j], global));
    n = e > most - n ? most : n + e;  // a table of too many rows holds too many
  }
  return n;
}

std::string table_problem(const std::vector<std::uint64_t>& table,
                          const std::vector<std::size_t>& global) {
  const std::size_t dims = global.size();
  const std::size_t width = record_width(dims);
  for (std::size_t j = 0; j + width <= table.size(); j += width) {
    const std::uint64_t* row = &table[j];
    std::string why;
    if (row[0] > 1) {
      why = "flags " + std::to_string(row[0]) + ", where 0 is a box and 1 a flat range";
    } else if (dims > 0) {
      const Block b = record_block(row, global);
      if (b.flat && !box_fits(b)) {
        why = "a flat range in a box that is not inside the array " + shape_text(global);
      } else if (b.flat && !fits(b.offset[0], b.count[0], product(linear(b).global))) {
        why = std::to_string(b.count[0]) + " elements from element " + std::to_string(b.offset[0]) +
              " overrun the " + std::to_string(product(linear(b).global)) + " it ranges over";
      }
      for (std::size_t d = 0; !b.flat && d < dims && why.empty(); ++d) {
        if (!fits(b.offset[d], b.count[d], global[d])) {
          why = "a block at " + shape_text(b.offset) + " of size " + shape_text(b.count) +
                " that overruns the array " + shape_text(global);
        }
      }
    }
    if (!why.empty()) {
      return "row " + std::to_string(j / width) + " of its checksum_blocks holds " + why +
             ": the file is corrupted";
    }
  }
  return "";
}

bool same_block(const std::uint64_t* row, const Block& b) {
  if (elements(b) == 0) return false;  // no block written is empty
  const std::vector<std::uint64_t> mine = block_record(b, 0);
  return std::equal(mine.begin(), mine.end() - 1, row);
}

void write_table_attr(hid_t obj, const char* name, const std::vector<std::uint64_t>& values,
                      std::size_t width) {
  const hsize_t dims[2] = {values.size() / width, width};
  hid_t space = H5Screate_simple(2, dims, nullptr);
  hid_t attr = H5Acreate2(obj, name, H5T_NATIVE_UINT64, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(attr, H5T_NATIVE_UINT64, values.data());
  H5Aclose(attr);
  H5Sclose(space);
}

bool read_table_attr(hid_t obj, const char* name, std::vector<std::uint64_t>& values,
                     std::size_t width) {
  if (H5Aexists(obj, name) <= 0) return false;
  hid_t attr = H5Aopen(obj, name, H5P_DEFAULT);
  if (attr < 0) return false;
  hid_t ftype = H5Aget_type(attr);
  hid_t space = H5Aget_space(attr);
  hsize_t dims[2] = {0, 0};
  bool ok = H5Tget_class(ftype) == H5T_INTEGER && H5Sget_simple_extent_ndims(space) == 2 &&
            H5Sget_simple_extent_dims(space, dims, nullptr) == 2 && dims[1] == width;
  if (ok) {
    values.resize(dims[0] * dims[1]);
    ok = H5Aread(attr, H5T_NATIVE_UINT64, values.data()) >= 0;
  }
  H5Sclose(space);
  H5Tclose(ftype);
  H5Aclose(attr);
  return ok;
}

std::size_t elem_bytes(Elem e) { return e == Elem::f32 || e == Elem::i32 ? 4 : 8; }

std::string shape_text(const std::vector<std::size_t>& e) {
  std::string s = "(";
  for (std::size_t i = 0; i < e.size(); ++i) s += (i ? ", " : "") + std::to_string(e[i]);
  return s + ")";
}

std::uint64_t host_checksum(const void* data, Elem elem, const Block& block) {
  const Kokkos::DefaultHostExecutionSpace host;
  switch (elem) {
    case Elem::f32:
      return checksum_of(host, static_cast<const float*>(data), block);
    case Elem::f64:
      return checksum_of(host, static_cast<const double*>(data), block);
    case Elem::i32:
      return checksum_of(host, static_cast<const std::int32_t*>(data), block);
    case Elem::i64:
      return checksum_of(host, static_cast<const std::int64_t*>(data), block);
    case Elem::u64:
      break;
  }
  return checksum_of(host, static_cast<const std::uint64_t*>(data), block);
}

std::string check_block(const std::string& name, const std::vector<std::size_t>& local,
                        const Block& block) {
  if (block.flat && (block.offset.size() != 1 || block.count.size() != 1)) {
    return "checkpoint dataset '" + name + "': a flat range has one offset and one count";
  }
  if (block.flat && local.size() != 1) {
    return "checkpoint dataset '" + name + "': a flat range is read into a View of rank 1";
  }
  if (block.flat && !box_fits(block)) {
    return "checkpoint dataset '" + name + "': the box " + shape_text(block.box_count) + " at " +
           shape_text(block.box_offset) + " of a flat range is not inside the array " +
           shape_text(block.global);
  }
  const Block b = linear(block);
  const std::size_t r = b.global.size();
  if (b.offset.size() != r || b.count.size() != r || local.size() != r) {
    return "checkpoint dataset '" + name + "': the block's rank does not match the View's";
  }
  for (std::size_t d = 0; d < r; ++d) {
    if (b.count[d] != local[d]) {
      return "checkpoint dataset '" + name + "': the block " + shape_text(b.count) +
             " does not match the View " + shape_text(local);
    }
    if (!fits(b.offset[d], b.count[d], b.global[d])) {
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

void select(hid_t space, const Block& b, bool none) {
  if (none || (b.flat && b.count.at(0) == 0)) {
    H5Sselect_none(space);
    return;
  }
  if (b.global.empty()) return;  // a scalar dataspace: its one element
  bool first = true;
  for (const Piece& p : pieces(b)) {
    const std::vector<hsize_t> off(p.box.offset.begin(), p.box.offset.end());
    const std::vector<hsize_t> cnt(p.box.count.begin(), p.box.count.end());
    H5Sselect_hyperslab(space, first ? H5S_SELECT_SET : H5S_SELECT_OR, off.data(), nullptr,
                        cnt.data(), nullptr);
    first = false;
  }
}

namespace {
// Whether each of the `n` values at `v` is among `values`, without a branch
// an element (a NaN fails every comparison; the loop vectorizes).
template <class T>
bool all_good(const T* v, std::size_t n, Reader::Values values) {
  const T top = std::numeric_limits<T>::max();
  const T low = values == Reader::Values::finite ? -top : T(0);
  std::size_t good = 0;
  if (values == Reader::Values::positive) {
    for (std::size_t k = 0; k < n; ++k)
      good += static_cast<std::size_t>((v[k] > low) & (v[k] <= top));
  } else {
    for (std::size_t k = 0; k < n; ++k)
      good += static_cast<std::size_t>((v[k] >= low) & (v[k] <= top));
  }
  return good == n;
}

// The first element of this rank's block (row-major) whose value is not
// among `values`, as "element [i, j] is nan (...)", or "".
template <class T>
std::string first_bad_of(const T* v, const Block& block, Reader::Values values) {
  const std::size_t n = elements(block);
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
    // The global multi-index of local element k, in the box that holds it.
    std::vector<std::size_t> at;
    for (const Piece& p : pieces(block)) {
      const std::size_t size = elements(p.box);
      if (k < p.at || k - p.at >= size) continue;
      at.resize(p.box.count.size());
      std::size_t rest = k - p.at;
      for (std::size_t d = p.box.count.size(); d-- > 0;) {
        at[d] = p.box.offset[d] + rest % p.box.count[d];
        rest /= p.box.count[d];
      }
      break;
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

bool all_good(const void* v, Elem elem, std::size_t n, Reader::Values values) {
  if (values == Reader::Values::any) return true;
  if (elem == Elem::f64) return all_good(static_cast<const double*>(v), n, values);
  if (elem == Elem::f32) return all_good(static_cast<const float*>(v), n, values);
  return true;
}

std::string first_bad_value(const void* v, Elem elem, const Block& block, Reader::Values values) {
  if (values == Reader::Values::any) return "";
  if (elem == Elem::f64) return first_bad_of(static_cast<const double*>(v), block, values);
  if (elem == Elem::f32) return first_bad_of(static_cast<const float*>(v), block, values);
  return "";
}

using kpmap::detail::h5::collective_transfer;

}  // namespace detail

}  // namespace kpmap::checkpoint
