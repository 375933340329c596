# SPDX-License-Identifier: BSD-3-Clause
# Every header of the library compiles on its own (included by
# tests/CMakeLists.txt). One translation unit per header that includes it,
# twice (its include guard holds), and nothing else: no precompiled header and
# no unity batch, which would lend it what another file included first. The
# translation units are a target left out of the build; the test builds it.
# GCC and Clang only parse them (-fsyntax-only): a missing include is a
# parse error, and a header has no code of its own to instantiate.
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang" OR CMAKE_CXX_COMPILER MATCHES "nvcc_wrapper")
  return()
endif()
file(GLOB_RECURSE kpmap_headers RELATIVE ${PROJECT_SOURCE_DIR}/src
     CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/kpmap/*.hpp)
set(kpmap_header_units)
set(kpmap_header_libraries kpmap::kpmap)
if(TARGET kpmap_apps)
  list(APPEND kpmap_header_libraries kpmap_apps)
else()
  list(FILTER kpmap_headers EXCLUDE REGEX "^kpmap/apps/")
endif()
foreach(header ${kpmap_headers})
  string(REGEX REPLACE "\\.hpp$" ".cpp" unit "${CMAKE_CURRENT_BINARY_DIR}/headers/${header}")
  file(CONFIGURE OUTPUT ${unit}
       CONTENT "#include <${header}>\n#include <${header}>\n" @ONLY)
  list(APPEND kpmap_header_units ${unit})
endforeach()
add_library(kpmap_headers_alone OBJECT EXCLUDE_FROM_ALL ${kpmap_header_units})
target_link_libraries(kpmap_headers_alone PRIVATE ${kpmap_header_libraries})
target_compile_options(kpmap_headers_alone PRIVATE -fsyntax-only)
set_target_properties(kpmap_headers_alone PROPERTIES KPMAP_NO_PCH ON UNITY_BUILD OFF)
add_test(NAME build.headers_alone
         COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target kpmap_headers_alone)
set_tests_properties(build.headers_alone PROPERTIES LABELS unit PROCESSORS 2 TIMEOUT 900
                     RESOURCE_LOCK kpmap_build)
