#pragma once
/// \file
/// \brief What a checkpoint's writer and reader share: HDF5 types and names of
/// elements, string and scalar attributes, a block's check against its View and
/// its selection in a dataspace, the checksum of data read into host memory.

#include <kpmap/base/detail/hdf5.hpp>
#include <kpmap/io/checkpoint.hpp>

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kpmap::checkpoint::detail {

using kpmap::detail::h5::agree;
using kpmap::detail::h5::collective_transfer;
using kpmap::detail::h5::mpio_access;
using Quiet = kpmap::detail::h5::Quiet;

hid_t h5type(Elem e);
const char* elem_name(Elem e);
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
