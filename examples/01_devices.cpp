// SPDX-License-Identifier: BSD-3-Clause
// 01 devices and ranks: what jax.devices() and jax.device_count() show.
//
// In JAX one Python process drives every device. In kpmap every MPI rank runs
// this same program and owns one device: a Kokkos execution space (a GPU, or
// the CPU cores given to the rank). The ranks form the axis "devices".
//
//   mpiexec -n 3 ./01_devices

#include <kpmap/kpmap.hpp>

#include <Kokkos_Core.hpp>

#include <cstdio>

int devices(kpmap::Runtime& rt) {
  // jax.device_count() and this device's position in jax.devices().
  const int count = kpmap::axis_size("devices");
  const int me = kpmap::axis_index("devices");

  // jax.devices()[me]: where this rank computes and keeps its arrays.
  std::printf("device %d of %d: %s, memory %s, GPU id %d, host %d of %d\n", me, count,
              Kokkos::DefaultExecutionSpace::name(),
              Kokkos::DefaultExecutionSpace::memory_space::name(), rt.device_id(), rt.node_index(),
              rt.node_count());
  std::fflush(stdout);

  // Every device counts itself: psum(1) over the axis is the device count.
  const int counted = kpmap::psum(1, "devices");

  // Checked against MPI's own count of the processes.
  int processes = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &processes);
  if (me == 0) std::printf("devices: %d (MPI processes: %d)\n", counted, processes);
  return counted == processes && count == processes ? 0 : 1;
}

int main(int argc, char** argv) { return kpmap::run(argc, argv, devices); }
