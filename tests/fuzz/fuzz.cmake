# SPDX-License-Identifier: BSD-3-Clause
# The deck readers fuzzed (included by tests/CMakeLists.txt, whose variables it uses).

# The deck readers under libFuzzer (clang), for a fixed number of inputs each:
# the TOML parser, and the TeaLeaf reader with what kpmap-heat does after it.
find_program(KPMAP_CLANGXX NAMES clang++ clang++-14)
set(KPMAP_FUZZ_RUNS 100000 CACHE STRING "How many inputs ctest fuzzes the TOML deck parser with")
set(KPMAP_FUZZ_TEA_RUNS 20000 CACHE STRING "How many inputs ctest fuzzes the TeaLeaf deck reader with")
if(KPMAP_CLANGXX)
  add_test(NAME fuzz.deck
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/scripts/run_fuzzer.sh ${PROJECT_SOURCE_DIR}
            ${CMAKE_CURRENT_BINARY_DIR}/fuzz ${KPMAP_FUZZ_RUNS} ${KPMAP_FUZZ_TEA_RUNS}
            ${KPMAP_CLANGXX})
  # The script stops (set -e) at the first fuzzer that finds anything.
  set_tests_properties(fuzz.deck PROPERTIES LABELS fuzz TIMEOUT 600)
else()
  # Skipped loudly: ctest reports it, not only the configure log.
  message(STATUS "kpmap: clang++ not found; the deck fuzz test is skipped")
  add_test(NAME fuzz.deck COMMAND sh -c "echo 'SKIPPED: clang++ (libFuzzer) not found'; exit 77")
  set_tests_properties(fuzz.deck PROPERTIES LABELS fuzz SKIP_RETURN_CODE 77)
endif()
