// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Internal helpers shared by the parallel HDF5 readers and writers
// (checkpoints, training data). Not part of the public API.

#include <kpmap/base/error.hpp>
#include <kpmap/transport/host.hpp>

#include <hdf5.h>
#include <mpi.h>

#include <string>

namespace kpmap::detail::h5 {

/// While it lives, HDF5 prints no error stack on a failure (kpmap reports its
/// own messages); the printing it replaced comes back at its end.
struct ErrorStackSilenced {
  H5E_auto2_t func = nullptr;
  void* data = nullptr;
  ErrorStackSilenced() {
    H5Eget_auto2(H5E_DEFAULT, &func, &data);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~ErrorStackSilenced() { H5Eset_auto2(H5E_DEFAULT, func, data); }
  ErrorStackSilenced(const ErrorStackSilenced&) = delete;
  ErrorStackSilenced& operator=(const ErrorStackSilenced&) = delete;
};

/// The most specific message on HDF5's error stack ("data error detected by
/// Fletcher32 checksum", "inflate() failed"), or "" when the stack is empty.
/// Call it right after the failing call: the next HDF5 call clears the stack.
inline std::string error_reason() {
  std::string reason;
  auto innermost = [](unsigned n, const H5E_error2_t* e, void* out) -> herr_t {
    auto& r = *static_cast<std::string*>(out);
    if (n == 0 && e != nullptr && e->desc != nullptr) r = e->desc;
    return 0;
  };
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, innermost, &reason);
  return reason;
}

/// Every failure of a collective read or write is agreed across ranks
/// before anyone closes the file (H5Fclose is collective).
using kpmap::transport::agree;

/// A dataset transfer property list for collective MPI-IO.
inline hid_t collective_transfer() {
  hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
  H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
  return dxpl;
}

/// A file access property list for MPI-IO over `comm`. Collective over `comm`.
inline hid_t mpio_access(MPI_Comm comm) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  // HDF5 keeps a duplicate of the communicator, and a duplicate keeps any
  // Cartesian topology. Open MPI's OMPIO groups its I/O aggregators by that
  // topology and then sometimes writes or reads wrong data (seen with 3
  // ranks and column blocks; open-mpi/ompi#12718). A split with one colour
  // gives the same ranks in the same order without the topology.
  int topology = MPI_UNDEFINED;
  MPI_Topo_test(comm, &topology);
  if (topology == MPI_UNDEFINED) {
    H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL);
  } else {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm plain = MPI_COMM_NULL;
    MPI_Comm_split(comm, 0, rank, &plain);
    H5Pset_fapl_mpio(fapl, plain, MPI_INFO_NULL);
    MPI_Comm_free(&plain);
  }
  return fapl;
}

}  // namespace kpmap::detail::h5
