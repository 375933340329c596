# SPDX-License-Identifier: BSD-3-Clause
# Whole programs of the library's own: how a job ends on an error, a user's first mistakes,
# checkpoints read back by h5py (included by tests/CMakeLists.txt, whose variables it uses).

# The layer table, enforced by the linker: each layer group's library linked
# whole, every object of it, with only the groups below it (kpmap::train and
# kpmap::sim with kpmap::core, core alone). An object that calls a function
# of a group above or beside its own leaves an undefined reference. The
# programs are outside the default build: the test links one, and fails (with
# the linker's message) where it does not link.
foreach(group core train sim)
  add_executable(layer_link_${group} EXCLUDE_FROM_ALL programs/layer_link.cpp)
  target_link_libraries(layer_link_${group} PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,kpmap::${group}>")
  add_test(NAME lint.layers_link.${group}
           COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target layer_link_${group})
  set_tests_properties(lint.layers_link.${group} PROPERTIES LABELS "tools;quick" TIMEOUT 300
                       RESOURCE_LOCK kpmap_build)
endforeach()

add_executable(fail_on_one_rank programs/fail_on_one_rank.cpp)
target_link_libraries(fail_on_one_rank PRIVATE kpmap::kpmap)

# An exception on rank 1 alone ends a 3-rank job within seconds, with the message.
kpmap_add_mpi_test(NAME runtime.abort_on_error COMMAND fail_on_one_rank 1 RANKS 3 TIMEOUT 60
  LABELS reliability
  WRAPPER ${EXPECT_FAILURE} --within 10 --expect "rank 1: injected failure on rank 1" --)
# The same when the exception escapes main without kpmap::run.
kpmap_add_mpi_test(NAME runtime.abort_on_uncaught COMMAND fail_on_one_rank 1 uncaught RANKS 3
  TIMEOUT 60 LABELS reliability
  WRAPPER ${EXPECT_FAILURE} --within 10
          --expect "rank 1: uncaught exception: injected failure on rank 1" --)

# ... and when it happens while a checkpoint is being written collectively.
kpmap_add_mpi_test(NAME runtime.abort_in_checkpoint COMMAND fail_on_one_rank 1 checkpoint RANKS 3
  TIMEOUT 60 LABELS reliability
  WRAPPER ${EXPECT_FAILURE} --within 10 --expect "rank 1: injected failure on rank 1" --)

# A rank that returns while the others wait in a psum it never calls: the
# Runtime's end-of-program wait ends the job after KPMAP_WATCHDOG seconds,
# rank 0 naming the ranks that never arrived, or another rank naming rank 0.
kpmap_add_mpi_test(NAME runtime.rank_leaves_early COMMAND fail_on_one_rank 0 early RANKS 2 3
  TIMEOUT 60 LABELS reliability
  WRAPPER ${EXPECT_FAILURE} --within 20 --env KPMAP_WATCHDOG=3
          "--regex=rank 0: ranks? (1|1 and 2) did not reach the end of the program within 3 s of rank 0"
          --)
kpmap_add_mpi_test(NAME runtime.rank_zero_leaves_alone COMMAND fail_on_one_rank 1 early RANKS 2
  TIMEOUT 60 LABELS reliability
  WRAPPER ${EXPECT_FAILURE} --within 20 --env KPMAP_WATCHDOG=3
          "--expect=rank 1: rank 0 did not reach the end of the program within 3 s of rank 1" --)

# A user's first mistakes with shard_map and Mesh: one kpmap line, printed
# once for the job (not once per rank), exit code 2, no launcher banner.
add_executable(user_mistakes programs/user_mistakes.cpp)
target_link_libraries(user_mistakes PRIVATE kpmap::kpmap)
kpmap_add_mpi_test(NAME spmd.unknown_axis_in_spec COMMAND user_mistakes spec RANKS 1 3 TIMEOUT 60
  LABELS unit
  WRAPPER ${EXPECT_EXIT} --within 20 --exit-code 2 --reject "no error" --reject "rank 1:"
          "--once=kpmap: error: kpmap::shard_map of (anonymous namespace)::RowCount: argument 0: its spec P('batch', None) names axis 'batch', which the mesh does not have (its axes: 'data')" --)
kpmap_add_mpi_test(NAME spmd.mesh_does_not_fit COMMAND user_mistakes mesh RANKS 1 3 TIMEOUT 60
  LABELS unit
  WRAPPER ${EXPECT_EXIT} --within 20 --exit-code 2 --reject "no error" --reject "rank 1:"
          "--once=kpmap: error: kpmap::Mesh: axes {" --)
kpmap_add_mpi_test(NAME spmd.uneven_whole_argument COMMAND user_mistakes uneven RANKS 2 3
  TIMEOUT 60 LABELS unit
  WRAPPER ${EXPECT_EXIT} --within 20 --exit-code 2 --reject "no error"
          "--once=argument 0 (spec P('data', None)) is not the same whole array on every rank"
          "--expect=axis rank 0 called shard_map of double shape (9, 7), axis rank 1 called shard_map of double shape (8, 7)" --)
# A psum of different sizes on different ranks: without checked mode, MPI's
# truncation is one kpmap line naming the collective (not MPI's own abort);
# with it, kpmap names both shapes before MPI sees them, once for the job.
kpmap_add_mpi_test(NAME spmd.psum_shape_unchecked COMMAND user_mistakes psum_shape RANKS 2 3
  TIMEOUT 60 LABELS unit
  WRAPPER ${EXPECT_EXIT} --within 20 --exit-code 1 --env KPMAP_CHECK=0 --reject "no error"
          "--expect=MPI reported an error in kpmap::psum over axis 'devices': MPI_ERR_TRUNCATE"
          "--expect=run with KPMAP_CHECK=1 to have kpmap name the argument" --)
kpmap_add_mpi_test(NAME spmd.psum_shape_checked COMMAND user_mistakes psum_shape RANKS 2 3
  TIMEOUT 60 LABELS unit
  WRAPPER ${EXPECT_EXIT} --within 20 --exit-code 1 --env KPMAP_CHECK=1 --reject "no error"
          "--once=axis rank 0 called psum of double shape (5), axis rank 1 called psum of double shape (4)" --)

# Checkpoints read back with h5py, an independent reader, at several rank counts.
add_executable(write_checkpoint programs/write_checkpoint.cpp)
target_link_libraries(write_checkpoint PRIVATE kpmap::kpmap)
foreach(n 1 3 4)
  set(file ${CMAKE_CURRENT_BINARY_DIR}/h5py_check_np${n}.h5)
  kpmap_add_mpi_test(NAME checkpoint.write COMMAND write_checkpoint ${file} RANKS ${n}
                     LABELS checkpoint)
  set_tests_properties(checkpoint.write.np${n} PROPERTIES FIXTURES_SETUP h5py_np${n})
  add_test(NAME checkpoint.h5py.np${n}
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_checkpoint.py
                   ${file} ${n})
  set_tests_properties(checkpoint.h5py.np${n} PROPERTIES FIXTURES_REQUIRED h5py_np${n}
                       LABELS checkpoint)
endforeach()
