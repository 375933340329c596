# SPDX-License-Identifier: BSD-3-Clause
# The documents hold: their programs run, their snippets are the sources', their links
# resolve, the CHANGELOG names every change (included by tests/CMakeLists.txt).

# The JAX-to-kpmap tour of docs/pmap.md compiles, runs, and matches the document.
add_executable(pmap_tour programs/pmap_tour.cpp)
target_link_libraries(pmap_tour PRIVATE kpmap::kpmap)
target_include_directories(pmap_tour PRIVATE ${PROJECT_SOURCE_DIR}/examples)  # correlate1d.hpp
kpmap_add_mpi_test(NAME docs.pmap_tour COMMAND pmap_tour LABELS docs
                   EXPECT_OUTPUT "fitted y = 3.00[0-9]* \\+ 2.000")
add_test(NAME docs.pmap_snippets
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_doc_snippets.py
          ${PROJECT_SOURCE_DIR}/docs/pmap.md ${CMAKE_CURRENT_SOURCE_DIR}/programs/pmap_tour.cpp
          ${PROJECT_SOURCE_DIR}/examples/correlate1d.hpp)
set_tests_properties(docs.pmap_snippets PROPERTIES LABELS docs)
# docs/pmap.md's JAX-to-kpmap table, line by line: each line's kpmap column is
# code in programs/pmap_table.cpp and pmap_table_arrays.cpp (one program, run at
# 1 to 4 ranks, each line's result checked against JAX's definition) or in
# the example the line links.
add_executable(pmap_table programs/pmap_table.cpp programs/pmap_table_arrays.cpp)
kpmap_batch(pmap_table 2)
target_link_libraries(pmap_table PRIVATE kpmap::kpmap)
target_include_directories(pmap_table PRIVATE ${PROJECT_SOURCE_DIR}/examples)  # correlate1d.hpp
kpmap_add_mpi_test(NAME docs.pmap_table COMMAND pmap_table LABELS docs
                   EXPECT_OUTPUT "every line's kpmap column ran")
add_test(NAME docs.pmap_table_lines
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_pmap_table.py
          ${PROJECT_SOURCE_DIR}/docs/pmap.md ${CMAKE_CURRENT_SOURCE_DIR}/programs/pmap_table.cpp
          ${CMAKE_CURRENT_SOURCE_DIR}/programs/pmap_table_arrays.cpp ${PROJECT_SOURCE_DIR}/examples)
set_tests_properties(docs.pmap_table_lines PROPERTIES LABELS "docs;quick")

# CHANGELOG.md's newest release is this version; each breaking change has its migration.
add_test(NAME docs.changelog
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_changelog.py
          ${PROJECT_SOURCE_DIR}/CHANGELOG.md ${PROJECT_VERSION})
set_tests_properties(docs.changelog PROPERTIES LABELS "docs;quick")
# Every deck key, output file, result.json key and table column that changed
# since the last release (tests/data/public_names.json) is named in the
# CHANGELOG's [Unreleased] section: a rename never breaks a script in silence.
add_test(NAME docs.changelog_names
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_public_names.py
          --manifest ${CMAKE_CURRENT_SOURCE_DIR}/data/public_names.json
          --changelog ${PROJECT_SOURCE_DIR}/CHANGELOG.md
          --work ${CMAKE_CURRENT_BINARY_DIR}/public_names
          --app kpmap-heat=$<TARGET_FILE:kpmap-heat>:${PROJECT_SOURCE_DIR}/inputs/heat2d_ci.toml
          --app kpmap-train=$<TARGET_FILE:kpmap-train>:${PROJECT_SOURCE_DIR}/inputs/train_mlp_ci.toml)
set_tests_properties(docs.changelog_names PROPERTIES LABELS "docs;quick")

# Every relative link and #anchor of the Markdown docs leads to a file and a
# heading (docs/performance.md's tables, say, after a section is renamed).
add_test(NAME docs.links
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_doc_links.py
          ${PROJECT_SOURCE_DIR})
set_tests_properties(docs.links PROPERTIES LABELS "docs;quick")

# docs/training.md quotes examples/09_cnn.cpp and 10_custom_layer.cpp, which
# install.examples builds and runs, and the per-element loss and optimizer
# that test_train_model registers and checks.
add_test(NAME docs.training_snippets
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_doc_snippets.py
          ${PROJECT_SOURCE_DIR}/docs/training.md ${PROJECT_SOURCE_DIR}/examples/09_cnn.cpp
          ${PROJECT_SOURCE_DIR}/examples/10_custom_layer.cpp
          ${CMAKE_CURRENT_SOURCE_DIR}/test_train_registry.cpp)
set_tests_properties(docs.training_snippets PROPERTIES LABELS docs)

# No MDRange in the library or the examples takes a backend's default order.
add_test(NAME lint.md_range_order
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_md_ranges.py
          ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/examples)
set_tests_properties(lint.md_range_order PROPERTIES LABELS docs)

# A check of the whole source tree: tests/scripts/<script> SOURCE_ROOT, in the
# quick label.
function(kpmap_add_tree_check name script)
  add_test(NAME ${name}
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/${script}
            ${PROJECT_SOURCE_DIR})
  set_tests_properties(${name} PROPERTIES LABELS "docs;quick")
endfunction()

# Arrows point down only: every include and import against CONTRIBUTING.md's
# layer map, and no process forked from src/ or apps/.
kpmap_add_tree_check(lint.layers check_layers.py)
# Every KPMAP_* variable the library reads is in kpmap::environment_settings,
# which the ranks agree on before the first collective, and in
# docs/reliability.md's table.
kpmap_add_tree_check(lint.environment check_environment.py)
# Every source file names its licence (LICENSE) in an SPDX line.
kpmap_add_tree_check(lint.licence check_licence.py)
# A page or comment that lists the registered solvers, layers, losses or
# optimizers lists them all (or names the registry instead).
kpmap_add_tree_check(docs.registered_lists check_registered_lists.py)

# docs/heat.md quotes examples/07_halo_heat.cpp (the halo and the library's heat loop).
add_test(NAME docs.heat_snippets
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_doc_snippets.py
          ${PROJECT_SOURCE_DIR}/docs/heat.md ${PROJECT_SOURCE_DIR}/examples/07_halo_heat.cpp)
set_tests_properties(docs.heat_snippets PROPERTIES LABELS docs)
