# SPDX-License-Identifier: BSD-3-Clause
# Installs kpmap from BUILD_DIR into WORK_DIR/prefix, then configures and builds
# a project outside kpmap's tree against that install with find_package(kpmap),
# as a user would, and checks it.
# Variables: BUILD_DIR, SOURCE_DIR, WORK_DIR, GENERATOR, CXX_COMPILER, MPIEXEC, RANKS,
#            Kokkos_DIR, KokkosKernels_DIR (the packages kpmap was built with);
#            PROJECT: the project's folder in SOURCE_DIR (default tests/consumer);
#            CHECK: "run" (default: run PROJECT's program `consumer` at RANKS
#            ranks) or "ctest" (run the project's own tests).
if(NOT PROJECT)
  set(PROJECT tests/consumer)
endif()
file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer test: ${what} failed (exit ${rc})")
  endif()
endfunction()

run_step("install" ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")
foreach(f lib/cmake/kpmap/kpmapConfig.cmake lib/cmake/kpmap/kpmapConfigVersion.cmake
          include/kpmap/kpmap.hpp include/kpmap/base/version.hpp include/kpmap/version.hpp
          bin/kpmap-info)
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "consumer test: the install lacks ${f}")
  endif()
endforeach()
# The kpmap Python package and its commands, run from the install tree.
if(EXISTS "${prefix}/bin/kpmap-scale")
  foreach(f share/kpmap/python/kpmap/plot.py share/kpmap/python/kpmap/scale/cli.py)
    if(NOT EXISTS "${prefix}/${f}")
      message(FATAL_ERROR "consumer test: the install lacks ${f}")
    endif()
  endforeach()
  run_step("kpmap-scale --help" "${prefix}/bin/kpmap-scale" --help)
  run_step("kpmap-plot --help" "${prefix}/bin/kpmap-plot" --help)
endif()
run_step("configure" ${CMAKE_COMMAND} -S "${SOURCE_DIR}/${PROJECT}" -B "${WORK_DIR}/build"
         -G "${GENERATOR}" -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
         -DCMAKE_PREFIX_PATH=${prefix} -DKokkos_DIR=${Kokkos_DIR}
         -DKokkosKernels_DIR=${KokkosKernels_DIR})
run_step("build" ${CMAKE_COMMAND} --build "${WORK_DIR}/build" --parallel 2)
if(CHECK STREQUAL "ctest")
  get_filename_component(cmake_bin "${CMAKE_COMMAND}" DIRECTORY)
  run_step("test" "${cmake_bin}/ctest" --test-dir "${WORK_DIR}/build" --output-on-failure
           --parallel 2)
else()
  run_step("run" ${MPIEXEC} -n ${RANKS} "${WORK_DIR}/build/consumer")
  if(EXISTS "${WORK_DIR}/build/consumer_core")
    run_step("run (kpmap::core)" ${MPIEXEC} -n ${RANKS} "${WORK_DIR}/build/consumer_core")
  endif()
endif()
