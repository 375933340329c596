# SPDX-License-Identifier: BSD-3-Clause
# The installed package works for a consumer project (included by tests/CMakeLists.txt).

add_test(NAME install.consumer
  COMMAND ${CMAKE_COMMAND}
    -DBUILD_DIR=${PROJECT_BINARY_DIR} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
    -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/consumer -DGENERATOR=${CMAKE_GENERATOR}
    -DCXX_COMPILER=${CMAKE_CXX_COMPILER} -DMPIEXEC=${MPIEXEC_EXECUTABLE} -DRANKS=2
    -DKokkos_DIR=${Kokkos_DIR} -DKokkosKernels_DIR=${KokkosKernels_DIR}
    -P ${CMAKE_CURRENT_SOURCE_DIR}/scripts/consumer_build.cmake)
set_tests_properties(install.consumer PROPERTIES
  LABELS install TIMEOUT 600 PROCESSORS 2
  ENVIRONMENT "${KPMAP_MPI_TEST_ENVIRONMENT}")
# The numbered examples (examples/, docs/examples.md) build against the
# installed package and pass their own checks at 1, 2 and 3 ranks.
add_test(NAME install.examples
  COMMAND ${CMAKE_COMMAND}
    -DBUILD_DIR=${PROJECT_BINARY_DIR} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
    -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/examples -DGENERATOR=${CMAKE_GENERATOR}
    -DCXX_COMPILER=${CMAKE_CXX_COMPILER} -DMPIEXEC=${MPIEXEC_EXECUTABLE}
    -DKokkos_DIR=${Kokkos_DIR} -DKokkosKernels_DIR=${KokkosKernels_DIR}
    -DPROJECT=examples -DCHECK=ctest
    -P ${CMAKE_CURRENT_SOURCE_DIR}/scripts/consumer_build.cmake)
set_tests_properties(install.examples PROPERTIES
  LABELS "install;examples;mpi" TIMEOUT 1200 PROCESSORS 2
  ENVIRONMENT "${KPMAP_MPI_TEST_ENVIRONMENT}")
