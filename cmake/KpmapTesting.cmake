# kpmap_add_mpi_test: register one test per rank count.
#
#   kpmap_add_mpi_test(NAME <name> COMMAND <target-or-exe> [args...]
#                      [RANKS 1 2 3 4] [LABELS ...] [ENVIRONMENT VAR=value ...]
#                      [TIMEOUT seconds] [PASS_REGULAR_EXPRESSION regex]
#                      [WRAPPER cmd...])
#
# Adds tests `<name>.np<N>` that run
#   ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} N ${MPIEXEC_PREFLAGS} exe ${MPIEXEC_POSTFLAGS} args
# with PROCESSORS N x KPMAP_TEST_THREADS, OMP_NUM_THREADS=KPMAP_TEST_THREADS
# and the variables Open MPI needs to run as root and with more ranks than cores. WRAPPER puts a command (for example a
# checker script) in front of the whole mpiexec line; the checker then gets the
# mpiexec line as its arguments.
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
# told; these variables are ignored by other MPI libraries.
set(KPMAP_MPI_TEST_ENVIRONMENT
    "OMPI_ALLOW_RUN_AS_ROOT=1"
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
    "OMPI_MCA_rmaps_base_oversubscribe=1"
    # Plots cost a Python start each; the plot tests turn them back on.
    "KPMAP_PLOTS=0"
    "OMP_NUM_THREADS=${KPMAP_TEST_THREADS}"
    "OMP_WAIT_POLICY=passive"
    "OPENBLAS_NUM_THREADS=1"
    "OMP_PROC_BIND=false")

function(kpmap_add_mpi_test)
  cmake_parse_arguments(PARSE_ARGV 0 T "" "NAME;TIMEOUT;PASS_REGULAR_EXPRESSION"
                        "COMMAND;RANKS;LABELS;ENVIRONMENT;WRAPPER")
  if(NOT T_NAME OR NOT T_COMMAND)
    message(FATAL_ERROR "kpmap_add_mpi_test: NAME and COMMAND are required")
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
    add_test(NAME ${test_name}
             COMMAND ${T_WRAPPER} ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${n}
                     ${MPIEXEC_PREFLAGS} ${exe} ${MPIEXEC_POSTFLAGS} ${T_COMMAND})
    set_tests_properties(${test_name} PROPERTIES
      PROCESSORS ${cores}
      TIMEOUT ${T_TIMEOUT}
      LABELS "mpi;${T_LABELS}"
      ENVIRONMENT "${KPMAP_MPI_TEST_ENVIRONMENT};${T_ENVIRONMENT}")
    if(T_PASS_REGULAR_EXPRESSION)
      set_tests_properties(${test_name} PROPERTIES
        PASS_REGULAR_EXPRESSION "${T_PASS_REGULAR_EXPRESSION}")
    endif()
  endforeach()
endfunction()
