# SPDX-License-Identifier: BSD-3-Clause
# kpmap_add_mpi_test: register one test per rank count.
#
#   kpmap_add_mpi_test(NAME <name> COMMAND <target-or-exe> [args...]
#                      [RANKS 1 2 3 4] [LABELS ...] [ENVIRONMENT VAR=value ...]
#                      [TIMEOUT seconds] [EXPECT_OUTPUT regex]
#                      [WRAPPER cmd...])
#
# Adds tests `<name>.np<N>` that run
#   ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} N ${MPIEXEC_PREFLAGS} exe ${MPIEXEC_POSTFLAGS} args
# with PROCESSORS N x KPMAP_TEST_THREADS, OMP_NUM_THREADS=KPMAP_TEST_THREADS
# and the variables Open MPI needs to run as root and with more ranks than cores. WRAPPER puts a command (for example a
# checker script) in front of the whole mpiexec line; the checker then gets the
# mpiexec line as its arguments. EXPECT_OUTPUT: the run must exit 0 and its
# output match the regex (tests/scripts/expect_exit.py checks both; ctest's
# PASS_REGULAR_EXPRESSION alone would pass a run that printed the line and then
# failed). The text {np} in an argument becomes the rank count, so that each
# rank count's run writes a folder of its own (ctest runs them side by side).
#
# The rank counts default to KPMAP_TEST_RANKS (1;2;3;4): 3 catches the bugs
# that powers of two hide. KPMAP_TEST_THREADS (default 1) is the number of
# host threads each rank runs (OpenMP builds): the openmp-ci preset runs the
# whole suite at 2 threads per rank. Threads wait passively, so that a test
# with more threads than cores in all stays fast.

include_guard(GLOBAL)

set(KPMAP_TEST_RANKS "1;2;3;4" CACHE STRING "Rank counts at which MPI tests run")
set(KPMAP_TEST_THREADS 1 CACHE STRING "Host threads per rank in the tests (OpenMP builds)")

# Open MPI refuses to run as root and to place more ranks than cores unless
# told; these variables are ignored by other MPI libraries. When a rank exits
# with an error, Open MPI's mpiexec ends the job with SIGTERM and then SIGKILL,
# odls_base_sigkill_timeout (1 s) apart, and waits out that time even where
# every rank has already gone: `mpiexec -n 1 sh -c 'exit 2'` takes 2.05 s, and
# 0.04 s with the timeout 0. That is 2 s for each refused run at 1 rank, in
# tests that make hundreds of them. What a rank does on SIGTERM is tested by
# signalling the rank itself (the stop tests), never through this path.
set(KPMAP_MPI_TEST_ENVIRONMENT
    "OMPI_ALLOW_RUN_AS_ROOT=1"
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
    "OMPI_MCA_rmaps_base_oversubscribe=1"
    "OMPI_MCA_odls_base_sigkill_timeout=0"
    "OMP_NUM_THREADS=${KPMAP_TEST_THREADS}"
    "OMP_WAIT_POLICY=passive"
    "OPENBLAS_NUM_THREADS=1"
    "OMP_PROC_BIND=false")

function(kpmap_add_mpi_test)
  cmake_parse_arguments(PARSE_ARGV 0 T "" "NAME;TIMEOUT;EXPECT_OUTPUT"
                        "COMMAND;RANKS;LABELS;ENVIRONMENT;WRAPPER")
  if(NOT T_NAME OR NOT T_COMMAND)
    message(FATAL_ERROR "kpmap_add_mpi_test: NAME and COMMAND are required")
  endif()
  if(DEFINED T_EXPECT_OUTPUT)
    if(T_WRAPPER)
      message(FATAL_ERROR "kpmap_add_mpi_test(${T_NAME}): EXPECT_OUTPUT and WRAPPER together; "
                          "give the wrapper's own checks instead")
    endif()
    set(T_WRAPPER ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/scripts/expect_exit.py
                  --exit-code 0 "--regex=${T_EXPECT_OUTPUT}" --)
  endif()
  if(NOT T_RANKS)
    set(T_RANKS ${KPMAP_TEST_RANKS})
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  list(POP_FRONT T_COMMAND exe)
  if(TARGET ${exe})
    set(exe $<TARGET_FILE:${exe}>)
  endif()
  foreach(n IN LISTS T_RANKS)
    set(test_name ${T_NAME}.np${n})
    math(EXPR cores "${n} * ${KPMAP_TEST_THREADS}")
    string(REPLACE "{np}" "${n}" args "${T_COMMAND}")
    string(REPLACE "{np}" "${n}" wrapper "${T_WRAPPER}")
    add_test(NAME ${test_name}
             COMMAND ${wrapper} ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${n}
                     ${MPIEXEC_PREFLAGS} ${exe} ${MPIEXEC_POSTFLAGS} ${args})
    set_tests_properties(${test_name} PROPERTIES
      PROCESSORS ${cores}
      TIMEOUT ${T_TIMEOUT}
      LABELS "mpi;${T_LABELS}"
      ENVIRONMENT "${KPMAP_MPI_TEST_ENVIRONMENT};${T_ENVIRONMENT}")
  endforeach()
endfunction()
