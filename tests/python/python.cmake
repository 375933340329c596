# SPDX-License-Identifier: BSD-3-Clause
# The kpmap Python package: plots and the scaling harness (included by
# tests/CMakeLists.txt, whose variables it uses).

# Its own unittest modules (python/tests), one ctest each: the scaling harness's
# planning, launching, running, collecting and command line (against a stand-in
# application with known times, without MPI), and the plots.
file(GLOB kpmap_python_tests CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/python/tests/test_*.py)
foreach(test_file IN LISTS kpmap_python_tests)
  get_filename_component(module ${test_file} NAME_WE)
  string(REGEX REPLACE "^test_" "" name ${module})
  # A module with a skipped test (matplotlib missing) is reported skipped, not passed.
  add_test(NAME python.${name}
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/run_unittest.py ${module}
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/python/tests)
  set_tests_properties(python.${name} PROPERTIES LABELS "scripts;python" TIMEOUT 120
                       ENVIRONMENT PYTHONDONTWRITEBYTECODE=1 SKIP_RETURN_CODE 77)
endforeach()

# A tiny study (1 and 2 ranks, one repetition) through the MPI launcher, with
# kpmap-train and its CI deck where they exist, else with the stand-in, so the
# harness is always smoke-tested.
list(JOIN MPIEXEC_PREFLAGS " " kpmap_preflags)
set(kpmap_scale_launcher "${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} {ranks} ${kpmap_preflags}")
set(kpmap_train_ci_deck ${PROJECT_SOURCE_DIR}/inputs/train_linear_ci.toml)
if(TARGET kpmap-train AND EXISTS ${kpmap_train_ci_deck})
  set(kpmap_scale_app --app $<TARGET_FILE:kpmap-train> --deck ${kpmap_train_ci_deck})
else()
  set(kpmap_scale_app --app ${PROJECT_SOURCE_DIR}/python/tests/fake_app.py --kind train
                      --deck ${PROJECT_SOURCE_DIR}/python/tests/scale_smoke.toml)
  string(APPEND kpmap_scale_launcher " ${Python3_EXECUTABLE} {app}")
endif()
add_test(NAME scripts.kpmap-scale.smoke
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_scale_smoke.py
          ${CMAKE_CURRENT_BINARY_DIR}/scale_smoke ${kpmap_scale_app} --mode strong
          --launcher ${kpmap_scale_launcher})
set_tests_properties(scripts.kpmap-scale.smoke PROPERTIES
  LABELS "scripts;mpi" PROCESSORS 2 TIMEOUT 300
  ENVIRONMENT "${KPMAP_MPI_TEST_ENVIRONMENT}")
