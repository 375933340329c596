# Precompiled headers: the standard library, MPI and Kokkos headers nearly
# every kpmap file includes, parsed once per build instead of once per file
# (docs/development.md has the figures). One precompiled header (the target
# kpmap_pch) serves every library, program, test and benchmark of this
# build; kpmap_precompile_headers() hands it to each at the end of the
# top-level CMakeLists.txt. Off for GPU builds (nvcc_wrapper and hipcc take
# no GCC precompiled headers) and with KPMAP_PCH=OFF.

set(KPMAP_PCH_HEADERS
  <mpi.h> <Kokkos_Core.hpp>
  <algorithm> <array> <cmath> <cstddef> <cstdint> <cstdio> <cstring> <exception>
  <filesystem> <functional> <limits> <map> <memory> <mutex> <optional> <set> <sstream>
  <stdexcept> <string> <string_view> <tuple> <type_traits> <unordered_map> <utility>
  <variant> <vector>)

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

function(kpmap_precompile_headers)
  if(NOT KPMAP_PCH OR Kokkos_ENABLE_CUDA OR Kokkos_ENABLE_HIP OR Kokkos_ENABLE_SYCL)
    set(KPMAP_PCH_STATE "off" PARENT_SCOPE)
    return()
  endif()
  add_library(kpmap_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/kpmap_pch.cpp)
  target_link_libraries(kpmap_pch PRIVATE Kokkos::kokkos MPI::MPI_CXX)
  target_precompile_headers(kpmap_pch PRIVATE ${KPMAP_PCH_HEADERS})
  kpmap_targets_below(${PROJECT_SOURCE_DIR} targets)
  set(count 0)
  foreach(target ${targets})
    get_target_property(type ${target} TYPE)
    if(NOT type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|OBJECT_LIBRARY)$"
       OR target STREQUAL "kpmap_pch")
      continue()
    endif()
    # A target that opts out (its own flags differ: a compile-failure probe).
    get_target_property(opt_out ${target} KPMAP_NO_PCH)
    if(opt_out)
      continue()
    endif()
    target_precompile_headers(${target} REUSE_FROM kpmap_pch)
    math(EXPR count "${count} + 1")
  endforeach()
  set(KPMAP_PCH_STATE "on (${count} targets share one; KPMAP_PCH=OFF to turn it off)" PARENT_SCOPE)
endfunction()
