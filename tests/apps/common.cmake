# SPDX-License-Identifier: BSD-3-Clause
# The tests of every app: kpmap-info at every rank count, and each app's --help and
# --version its own (included by tests/CMakeLists.txt, whose variables it uses).

if(KPMAP_ENABLE_APPS)
  foreach(n IN LISTS KPMAP_TEST_RANKS)
    math(EXPR last "${n} - 1")
    kpmap_add_mpi_test(NAME apps.kpmap-info COMMAND kpmap-info RANKS ${n} LABELS apps
      EXPECT_OUTPUT "ranks: ${n} on [0-9]+ node.*rank ${last}: host.*GPU-aware MPI: (yes|no) \\(")
  endforeach()
  # KPMAP_DEVICE_BEFORE_MPI: Kokkos first, from the launcher's node-local rank
  # and size (on a host backend: the thread share), and the binding says so.
  foreach(n 1 3)
    kpmap_add_mpi_test(NAME apps.kpmap-info.device_before_mpi COMMAND kpmap-info RANKS ${n}
      LABELS apps ENVIRONMENT KPMAP_DEVICE_BEFORE_MPI=1
      EXPECT_OUTPUT "ranks: ${n} on [0-9]+ node.*before MPI_Init.*GPU-aware MPI: (yes|no) \\(")
  endforeach()
  # A bad environment variable is refused with the variable named and exit code 2.
  kpmap_add_mpi_test(NAME apps.kpmap-info.bad_env COMMAND kpmap-info RANKS 3 TIMEOUT 60
    LABELS apps ENVIRONMENT KPMAP_GPU_AWARE=maybe
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2 --expect "KPMAP_GPU_AWARE='maybe'" --)
  # The BLAS's kernel set, who chose it and the CPU's vector features. With
  # OPENBLAS_CORETYPE unset: the widest this CPU has in the BLAS, the BLAS's
  # own pick or kpmap's; forced to a narrower set: the user's, named, and the
  # one line that says what it costs.
  kpmap_add_mpi_test(NAME apps.kpmap-info.blas COMMAND kpmap-info RANKS 1 LABELS apps
    EXPECT_OUTPUT "BLAS: OpenBLAS [0-9.]+, kernels [A-Za-z0-9]+ \\((chosen by kpmap|the BLAS's own pick, the widest it has here)\\).*CPU: [A-Za-z]+ family [0-9]+ model [0-9]+. vectors: [^\n]*SSE")
  set_tests_properties(apps.kpmap-info.blas.np1 PROPERTIES
    ENVIRONMENT_MODIFICATION "OPENBLAS_CORETYPE=unset:")
  kpmap_add_mpi_test(NAME apps.kpmap-info.blas_narrower COMMAND kpmap-info RANKS 2 LABELS apps
    ENVIRONMENT OPENBLAS_CORETYPE=Prescott
    EXPECT_OUTPUT "kernels Prescott \\(OPENBLAS_CORETYPE, yours\\).*note: OPENBLAS_CORETYPE=Prescott runs narrower kernels than this CPU has")
  kpmap_add_output_test(NAME apps.kpmap-info.help COMMAND kpmap-info --help LABELS apps
    EXPECT "mpiexec -n 4 kpmap-info")
  # Each app's --help and --version are its own: no line of Kokkos' help
  # block, and one line that says where Kokkos' options are.
  foreach(app kpmap-info kpmap-train kpmap-heat)
    add_test(NAME apps.${app}.help_is_its_own
      COMMAND ${EXPECT_EXIT} --exit-code 0 --expect "Usage:"
              "--expect=Kokkos' own options (threads, devices, tools): --kokkos-help"
              "--reject=Kokkos command line arguments" "--reject=--kokkos-threads=INT"
              -- $<TARGET_FILE:${app}> --help)
    add_test(NAME apps.${app}.version_is_its_own
      COMMAND ${EXPECT_EXIT} --exit-code 0 --regex "^kpmap[-a-z]* ${PROJECT_VERSION}\n$"
              -- $<TARGET_FILE:${app}> --version)
    set_tests_properties(apps.${app}.help_is_its_own apps.${app}.version_is_its_own
      PROPERTIES LABELS apps ENVIRONMENT "${KPMAP_MPI_TEST_ENVIRONMENT}")
  endforeach()
endif()
