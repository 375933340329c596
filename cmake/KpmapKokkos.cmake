# SPDX-License-Identifier: BSD-3-Clause
# Finds Kokkos and Kokkos Kernels and repairs the packages where they are broken.
#
# This is the one place that knows about packaging defects; everything else links
# to the targets `Kokkos::kokkos` and `Kokkos::kokkoskernels` as a correct
# Kokkos 4.x install exports them. On a correct install this module only calls
# find_package (or find_dependency when included from kpmapConfig.cmake).
#
# Debian bookworm ships Kokkos 3.4 and Kokkos Kernels 3.4 inside Trilinos 13.2,
# whose CMake package has two defects:
#   1. `Kokkos::kokkos` carries INTERFACE_INCLUDE_DIRECTORIES `/usr/lib/include`,
#      which does not exist (the headers are in `/usr/include/trilinos`), so every
#      consumer fails to configure or to find <Kokkos_Core.hpp>.
#   2. Kokkos Kernels exports only the raw `trilinos_kokkoskernels` library, with
#      no include directory and no `Kokkos::kokkoskernels` target.

include_guard(GLOBAL)

if(CMAKE_FIND_PACKAGE_NAME) # included from a package config file
  include(CMakeFindDependencyMacro)
  macro(_kpmap_find_package)
    find_dependency(${ARGV})
  endmacro()
else()
  macro(_kpmap_find_package)
    find_package(${ARGV} REQUIRED)
  endmacro()
endif()

# Trilinos' Kokkos refuses CXX extensions and forces them off with a warning.
if(NOT DEFINED CMAKE_CXX_EXTENSIONS)
  set(CMAKE_CXX_EXTENSIONS OFF)
endif()

_kpmap_find_package(Kokkos)
# Kokkos Kernels is normally installed beside Kokkos: look there first, so a
# Kokkos_ROOT of your own never pairs with the system's Kokkos Kernels.
get_filename_component(_kpmap_kokkos_prefix "${Kokkos_DIR}/../../.." ABSOLUTE)
_kpmap_find_package(KokkosKernels HINTS "${_kpmap_kokkos_prefix}" ${KokkosKernels_ROOT})

# Defect 1: drop include directories that do not exist, and make sure the
# package's real include directory is there.
if(TARGET Kokkos::kokkos)
  get_target_property(_kpmap_aliased Kokkos::kokkos ALIASED_TARGET)
  if(_kpmap_aliased)
    set(_kpmap_kokkos_target ${_kpmap_aliased})
  else()
    set(_kpmap_kokkos_target Kokkos::kokkos)
  endif()
  get_target_property(_kpmap_incs ${_kpmap_kokkos_target} INTERFACE_INCLUDE_DIRECTORIES)
  if(_kpmap_incs)
    set(_kpmap_good_incs "")
    set(_kpmap_repaired FALSE)
    foreach(_dir IN LISTS _kpmap_incs)
      # Generator expressions ($<BUILD_INTERFACE:...>) are left alone.
      if(_dir MATCHES "^\\$<" OR EXISTS "${_dir}")
        list(APPEND _kpmap_good_incs "${_dir}")
      else()
        set(_kpmap_repaired TRUE)
      endif()
    endforeach()
    if(_kpmap_repaired)
      foreach(_dir IN LISTS Kokkos_INCLUDE_DIRS)
        get_filename_component(_dir "${_dir}" REALPATH)
        if(EXISTS "${_dir}")
          list(APPEND _kpmap_good_incs "${_dir}")
        endif()
      endforeach()
      list(REMOVE_DUPLICATES _kpmap_good_incs)
      set_target_properties(${_kpmap_kokkos_target} PROPERTIES
        INTERFACE_INCLUDE_DIRECTORIES "${_kpmap_good_incs}")
      message(STATUS "kpmap: repaired Kokkos::kokkos include directories: ${_kpmap_good_incs}")
    endif()
  endif()
else()
  message(FATAL_ERROR "kpmap: the Kokkos package defines no Kokkos::kokkos target")
endif()

# Defect 2: provide Kokkos::kokkoskernels.
if(NOT TARGET Kokkos::kokkoskernels)
  if(TARGET trilinos_kokkoskernels AND Kokkos_VERSION VERSION_GREATER_EQUAL 4)
    message(FATAL_ERROR "kpmap: Kokkos ${Kokkos_VERSION} (${Kokkos_DIR}) was paired with "
      "Trilinos' Kokkos Kernels (${KokkosKernels_DIR}). Install Kokkos Kernels for your "
      "Kokkos and point KokkosKernels_ROOT (or CMAKE_PREFIX_PATH) at it.")
  elseif(TARGET trilinos_kokkoskernels)
    add_library(Kokkos::kokkoskernels INTERFACE IMPORTED)
    set(_kpmap_kk_incs "")
    foreach(_dir IN LISTS KokkosKernels_INCLUDE_DIRS)
      get_filename_component(_dir "${_dir}" REALPATH)
      list(APPEND _kpmap_kk_incs "${_dir}")
    endforeach()
    set_target_properties(Kokkos::kokkoskernels PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${_kpmap_kk_incs}"
      INTERFACE_LINK_LIBRARIES "trilinos_kokkoskernels;Kokkos::kokkos")
    message(STATUS "kpmap: created Kokkos::kokkoskernels from Trilinos' trilinos_kokkoskernels")
  else()
    message(FATAL_ERROR "kpmap: Kokkos Kernels was found but defines neither "
                        "Kokkos::kokkoskernels nor trilinos_kokkoskernels")
  endif()
endif()

# Which backends this Kokkos has, for the summary and the package config.
set(KPMAP_KOKKOS_DEVICES "")
foreach(_dev SERIAL OPENMP THREADS CUDA HIP SYCL OPENMPTARGET)
  if(Kokkos_ENABLE_${_dev})
    list(APPEND KPMAP_KOKKOS_DEVICES ${_dev})
  endif()
endforeach()
