# Installs kpmap from BUILD_DIR into WORK_DIR/prefix, then configures, builds and
# runs tests/consumer against that install with find_package(kpmap).
# Variables: BUILD_DIR, SOURCE_DIR, WORK_DIR, GENERATOR, CXX_COMPILER, MPIEXEC, RANKS,
#            Kokkos_DIR, KokkosKernels_DIR (the packages kpmap was built with).
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
          include/kpmap/kpmap.hpp include/kpmap/version.hpp bin/kpmap-info)
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "consumer test: the install lacks ${f}")
  endif()
endforeach()
run_step("configure" ${CMAKE_COMMAND} -S "${SOURCE_DIR}/tests/consumer" -B "${WORK_DIR}/build"
         -G "${GENERATOR}" -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
         -DCMAKE_PREFIX_PATH=${prefix} -DKokkos_DIR=${Kokkos_DIR}
         -DKokkosKernels_DIR=${KokkosKernels_DIR})
run_step("build" ${CMAKE_COMMAND} --build "${WORK_DIR}/build")
run_step("run" ${MPIEXEC} -n ${RANKS} "${WORK_DIR}/build/consumer")
