# SPDX-License-Identifier: BSD-3-Clause
# Compile-time refusals (included by tests/CMakeLists.txt, whose variables it uses).

# Programs that must not build: each is a target left out of the build, and
# its test builds it and expects the compiler to fail with kpmap's message.
function(kpmap_add_compile_fail_test name source expect)
  add_library(${name} OBJECT EXCLUDE_FROM_ALL ${source})
  target_link_libraries(${name} PRIVATE kpmap::kpmap)
  # The build must fail (cmake --build exits 1) with kpmap's message.
  add_test(NAME compile_fail.${name}
           COMMAND ${EXPECT_EXIT} --exit-code 1 "--regex=${expect}" --
                   ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target ${name})
  set_tests_properties(compile_fail.${name} PROPERTIES LABELS unit RESOURCE_LOCK kpmap_build)
endfunction()
kpmap_add_compile_fail_test(std_complex_psum compile_fail/std_complex_psum.cpp
                            "std::complex cannot be used in Kokkos kernels.*Kokkos::complex")
kpmap_add_compile_fail_test(pmean_integer_leaf compile_fail/pmean_integer_leaf.cpp
  "mean_leaf_check.*Where = (kpmap::detail::)?tuple_element_number<1>.*Leaf = Kokkos::View<int\\*.*integer element type")
kpmap_add_compile_fail_test(pmean_integer_struct_leaf compile_fail/pmean_integer_struct_leaf.cpp
  "mean_leaf_check.*Where = (kpmap::detail::)?for_each_view_leaf.*Leaf = Kokkos::View<long int\\*.*integer element type")
kpmap_add_compile_fail_test(not_a_tree compile_fail/not_a_tree.cpp
  "this type is not a tree of Views. A tree is a Kokkos::View, a std::tuple, std::vector or std::array of trees, or a type with a member")
kpmap_add_compile_fail_test(vmap_axis_out_of_range compile_fail/vmap_axis_out_of_range.cpp
                            "I = 1.*Axis = 2.*Rank = 2.*a batch axis is beyond its argument.s rank")
kpmap_add_compile_fail_test(pmax_complex_leaf compile_fail/pmax_complex_leaf.cpp
  "order_leaf_check.*Where = (kpmap::detail::)?tuple_element_number<1>.*complex.*pmax and pmin need ordered elements")
kpmap_add_compile_fail_test(psum_bool_view compile_fail/psum_bool_view.cpp
  "sum_leaf_check.*Leaf = .*bool.*holds bool, which cannot hold a count")
kpmap_add_compile_fail_test(mean_integer_view compile_fail/mean_integer_view.cpp
  "kpmap::mean needs floating-point elements")
