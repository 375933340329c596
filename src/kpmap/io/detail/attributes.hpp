// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief What a checkpoint's writer and reader share: HDF5 types and names of
/// elements, string and scalar attributes, a block's check against its View and
/// its selection in a dataspace, the checksum of data read into host memory.

#include <kpmap/base/words.hpp>
#include <kpmap/io/checkpoint.hpp>
#include <kpmap/io/detail/hdf5.hpp>

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

/// \brief An element type's name in messages ("float64").
template <>
struct kpmap::EnumWords<kpmap::checkpoint::detail::Elem> {
  using E = kpmap::checkpoint::detail::Elem;
  static constexpr std::pair<E, const char*> list[] = {{E::f32, "float32"},
                                                       {E::f64, "float64"},
                                                       {E::i32, "int32"},
                                                       {E::i64, "int64"},
                                                       {E::u64, "uint64"}};
};

namespace kpmap::checkpoint::detail {

using kpmap::detail::h5::agree;
using kpmap::detail::h5::collective_transfer;
using kpmap::detail::h5::mpio_access;
using ErrorStackSilenced = kpmap::detail::h5::ErrorStackSilenced;

hid_t h5type(Elem e);
/// Bytes of one element.
std::size_t elem_bytes(Elem e);
/// "(2, 3)"
std::string shape_text(const std::vector<std::size_t>& e);
/// The checksum of data that HDF5 read into host memory (checksum_of `block`): a
/// parallel reduction over the host's threads.
std::uint64_t host_checksum(const void* data, Elem elem, const Block& block);
/// Why `b` cannot be a block of the View with extents `local`; empty when it can.
std::string check_block(const std::string& name, const std::vector<std::size_t>& local,
                        const Block& b);
void write_string_attr(hid_t obj, const char* name, const std::string& value);
bool read_string_attr(hid_t obj, const char* name, std::string& out);
/// Selects this rank's block (or nothing) in a dataspace.
void select(hid_t space, const Block& b, bool none);

/// \brief The `checksum_algorithm` attribute of a dataset whose checksum is
/// XXH3 (64 bits, seed 0) of each written block's bytes in the block's
/// order, one row of `checksum_blocks` a block (block_record). A dataset
/// without the attribute holds the earlier `checksum`: one sum over its
/// elements (BlockChecksum).
inline constexpr const char* xxh3_blocks = "xxh3-64 of each written block";

/// \brief XXH3-64 of bytes given in pieces (a block read or written a part at
/// a time): the hash of their concatenation.
class BlockHash {
 public:
  BlockHash();
  ~BlockHash();
  BlockHash(const BlockHash&) = delete;
  BlockHash& operator=(const BlockHash&) = delete;
  void add(const void* bytes, std::size_t n);
  std::uint64_t value() const;

 private:
  void* state_;
};

/// Values of one row of `checksum_blocks` for an array of `dims` dimensions:
/// flags (1: flat), then offset, count, box_offset and box_count, each padded
/// with zeros to `dims` values, then the hash.
inline std::size_t record_width(std::size_t dims) { return 2 + 4 * dims; }
/// `b` (with `hash`) as a row of `checksum_blocks`.
std::vector<std::uint64_t> block_record(const Block& b, std::uint64_t hash);
/// The block a row of `checksum_blocks` describes (its hash is the last value).
Block record_block(const std::uint64_t* row, const std::vector<std::size_t>& global);
/// Whether the row describes the elements of `b`, in b's order.
bool same_block(const std::uint64_t* row, const Block& b);
/// Elements of a block (the product of its extents).
std::size_t elements(const Block& b);
/// Elements of the blocks of a `checksum_blocks` table of an array of extents
/// `global`: the array's size when they hold each element once.
std::size_t table_elements(const std::vector<std::uint64_t>& table,
                           const std::vector<std::size_t>& global);

/// Why a `checksum_blocks` table read from a file cannot describe blocks of
/// an array of extents `global` (a row whose flags are unknown, or whose block
/// or box overruns the array, sums that would wrap included); empty when every
/// row can. Asked before any of its values is added, multiplied or used to
/// index.
std::string table_problem(const std::vector<std::uint64_t>& table,
                          const std::vector<std::size_t>& global);

/// Whether each of the `n` values at `v` is among `values`, without a branch
/// an element (integers always are).
bool all_good(const void* v, Elem elem, std::size_t n, Reader::Values values);
/// The first of the elements at `v` (`block`'s, in its order) whose value is
/// not among `values`, as "element [i, j] is nan (why)" in the array's
/// indices; "" when there is none.
std::string first_bad_value(const void* v, Elem elem, const Block& block, Reader::Values values);

/// A 2-D uint64 attribute of `rows` x `width` values (row-major), and back:
/// false when it is absent or not such an attribute.
void write_table_attr(hid_t obj, const char* name, const std::vector<std::uint64_t>& values,
                      std::size_t width);
bool read_table_attr(hid_t obj, const char* name, std::vector<std::uint64_t>& values,
                     std::size_t width);

template <class T>
inline void write_scalar_attr(hid_t obj, const char* name, hid_t type, T value) {
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t attr = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(attr, type, &value);
  H5Aclose(attr);
  H5Sclose(space);
}

// One value of the class of `type` (an integer attribute for an integer, not
// a float HDF5 would round into one).
template <class T>
inline bool read_scalar_attr(hid_t obj, const char* name, hid_t type, T& out) {
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

}  // namespace kpmap::checkpoint::detail
