# SPDX-License-Identifier: BSD-3-Clause
# The GPU bundle, proven on this machine (included by tests/CMakeLists.txt).

# scripts/gpu-bundle packs this build's programs with every library they load
# beyond glibc and libstdc++; its gpu-check --quick runs with the system's MPI,
# HDF5, Kokkos and BLAS out of reach (tests/scripts/check_gpu_bundle.sh). A
# sanitized build would carry its runtime's interposers: not bundled.
find_program(KPMAP_OMPI_INFO ompi_info)
if(NOT KPMAP_ENABLE_SANITIZERS AND KPMAP_OMPI_INFO AND TARGET kpmap-train AND TARGET kpmap-heat
   AND CMAKE_SYSTEM_NAME STREQUAL "Linux")
  add_test(NAME scripts.gpu-bundle.host
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_gpu_bundle.sh ${PROJECT_SOURCE_DIR}
            ${PROJECT_BINARY_DIR} ${CMAKE_CURRENT_BINARY_DIR}/gpu_bundle)
  set_tests_properties(scripts.gpu-bundle.host PROPERTIES
    LABELS "scripts;mpi" PROCESSORS 2 TIMEOUT 600)
endif()
