# SPDX-License-Identifier: BSD-3-Clause
# Precompiled headers: the standard library, MPI and Kokkos headers nearly
# every kpmap file includes, parsed once per build instead of once per file
# (docs/development.md has the figures). One precompiled header (the target
# kpmap_pch) serves every library, program and benchmark of this build, and
# one more (kpmap_pch_2) the tests, compiled at their own optimisation level,
# with kpmap's core headers and Catch2's test macros, which every test
# includes (the library's own files keep to what they include, so that an
# include that runs up the layer table still fails: CONTRIBUTING.md).
# kpmap_precompile_headers() hands them out at the end of the top-level
# CMakeLists.txt. Off for GPU builds (nvcc_wrapper and hipcc take no GCC
# precompiled headers) and with KPMAP_PCH=OFF.

set(KPMAP_PCH_HEADERS
  <mpi.h> <Kokkos_Core.hpp>
  <algorithm> <array> <cmath> <cstddef> <cstdint> <cstdio> <cstring> <exception>
  <filesystem> <functional> <limits> <map> <memory> <mutex> <optional> <set> <sstream>
  <stdexcept> <string> <string_view> <tuple> <type_traits> <unordered_map> <utility>
  <variant> <vector>)
set(KPMAP_PCH_TEST_HEADERS <kpmap/kpmap.hpp> <catch2/catch_test_macros.hpp>)

# The compiled targets of `dir` and the folders below it.
function(kpmap_targets_below dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub ${subdirs})
    kpmap_targets_below(${sub} below)
    list(APPEND targets ${below})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# The precompiled header for targets compiled with `options` (`tests`: ON
# for the tests' targets): one per set of options (GCC refuses a header
# precompiled with other flags) and for the tests, built by a target of its
# own, kpmap_pch for the first set and kpmap_pch_2, ... after.
function(kpmap_pch_for options tests out)
  set(key "${options}")
  if(tests)
    set(key "tests:${options}")
  endif()
  get_property(sets GLOBAL PROPERTY KPMAP_PCH_OPTION_SETS)
  list(FIND sets "${key}" index)
  if(index EQUAL -1)
    list(LENGTH sets index)
    set_property(GLOBAL APPEND PROPERTY KPMAP_PCH_OPTION_SETS "${key}")
  endif()
  set(name kpmap_pch)
  if(index GREATER 0)
    math(EXPR number "${index} + 1")
    set(name kpmap_pch_${number})
  endif()
  if(NOT TARGET ${name})
    add_library(${name} OBJECT ${PROJECT_SOURCE_DIR}/cmake/kpmap_pch.cpp)
    target_link_libraries(${name} PRIVATE Kokkos::kokkos MPI::MPI_CXX)
    string(REPLACE "|" ";" option_list "${options}")
    set_target_properties(${name} PROPERTIES COMPILE_OPTIONS "${option_list}")
    target_precompile_headers(${name} PRIVATE ${KPMAP_PCH_HEADERS})
    if(tests)
      target_link_libraries(${name} PRIVATE kpmap_core Catch2::Catch2)
      target_precompile_headers(${name} PRIVATE ${KPMAP_PCH_TEST_HEADERS})
    endif()
  endif()
  set(${out} ${name} PARENT_SCOPE)
endfunction()

function(kpmap_precompile_headers)
  if(NOT KPMAP_PCH OR Kokkos_ENABLE_CUDA OR Kokkos_ENABLE_HIP OR Kokkos_ENABLE_SYCL)
    set(KPMAP_PCH_STATE "off" PARENT_SCOPE)
    return()
  endif()
  kpmap_targets_below(${PROJECT_SOURCE_DIR} targets)
  set(count 0)
  foreach(target ${targets})
    get_target_property(type ${target} TYPE)
    if(NOT type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|OBJECT_LIBRARY)$")
      continue()
    endif()
    # A target that opts out (its own flags differ: a compile-failure probe).
    get_target_property(opt_out ${target} KPMAP_NO_PCH)
    if(opt_out)
      continue()
    endif()
    # The tests' own optimisation level (tests/CMakeLists.txt) is such an option.
    get_target_property(options ${target} COMPILE_OPTIONS)
    if(NOT options)
      set(options "")
    endif()
    string(REPLACE ";" "|" options "${options}")
    get_target_property(dir ${target} SOURCE_DIR)
    string(FIND "${dir}/" "${PROJECT_SOURCE_DIR}/tests/" at)
    if(at EQUAL 0)
      kpmap_pch_for("${options}" ON pch)
    else()
      kpmap_pch_for("${options}" OFF pch)
    endif()
    target_precompile_headers(${target} REUSE_FROM ${pch})
    math(EXPR count "${count} + 1")
  endforeach()
  get_property(sets GLOBAL PROPERTY KPMAP_PCH_OPTION_SETS)
  list(LENGTH sets headers)
  set(KPMAP_PCH_STATE "on (${count} targets share ${headers}; KPMAP_PCH=OFF to turn it off)"
      PARENT_SCOPE)
endfunction()
