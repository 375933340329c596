# SPDX-License-Identifier: BSD-3-Clause
# kpmap-train's whole-program tests: its decks at every rank count, its outputs,
# its command line (included by tests/CMakeLists.txt, whose variables it uses).

if(KPMAP_ENABLE_APPS)
  # ---- kpmap-train ------------------------------------------------------------
  set(TRAIN_CHECK ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_train.py)
  set(INPUTS ${PROJECT_SOURCE_DIR}/inputs)
  set(TRAIN_OUT ${CMAKE_CURRENT_BINARY_DIR}/train)
  list(JOIN MPIEXEC_PREFLAGS " " preflags)
  set(LAUNCHER "${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} {n} ${preflags}")
  # The same deck at 1, 2, 3 and 4 ranks gives the same parameters (1e-12).
  set(results "")
  foreach(n IN LISTS KPMAP_TEST_RANKS)
    kpmap_add_mpi_test(NAME apps.kpmap-train.linear COMMAND kpmap-train
      ${INPUTS}/train_linear_ci.toml --output ${TRAIN_OUT}/linear_np${n} RANKS ${n} LABELS apps
      EXPECT_OUTPUT "learned w = .*true w = ")
    set_tests_properties(apps.kpmap-train.linear.np${n} PROPERTIES FIXTURES_SETUP train_linear)
    list(APPEND results ${TRAIN_OUT}/linear_np${n}/result.json)
  endforeach()
  # The last lines name the plot command once, whatever the rank count.
  kpmap_add_mpi_test(NAME apps.kpmap-train.plot_line_once COMMAND kpmap-train
    ${INPUTS}/train_mlp_ci.toml --output ${TRAIN_OUT}/plot_line_np{np} RANKS 1 3 LABELS apps
    WRAPPER ${EXPECT_EXIT} --exit-code 0 "--once=kpmap-train: plots (loss.png): kpmap-plot" --)
  add_test(NAME apps.kpmap-train.same_at_any_rank_count
           COMMAND ${TRAIN_CHECK} compare ${results} --rtol 1e-12)
  set_tests_properties(apps.kpmap-train.same_at_any_rank_count PROPERTIES
    LABELS apps FIXTURES_REQUIRED train_linear)
  # ... and they are the deck's true ones, within the noise (data.noise is 0.1).
  add_test(NAME apps.kpmap-train.linear_recovers_truth
           COMMAND ${TRAIN_CHECK} recovers ${results} --noise 0.1)
  set_tests_properties(apps.kpmap-train.linear_recovers_truth PROPERTIES
    LABELS apps FIXTURES_REQUIRED train_linear)
  # Full-batch GD on data read from HDF5 by hyperslab reaches numpy's least squares.
  add_test(NAME apps.kpmap-train.hdf5_least_squares
    COMMAND ${TRAIN_CHECK} lstsq --launcher ${LAUNCHER} --app $<TARGET_FILE:kpmap-train>
            --deck ${INPUTS}/train_linear_hdf5_ci.toml --ranks 3 --work ${TRAIN_OUT}/hdf5)
  # output.checkpoints = false: no HDF5 file, the same parameters.
  add_test(NAME apps.kpmap-train.no_checkpoints
    COMMAND ${TRAIN_CHECK} no_checkpoints --launcher ${LAUNCHER} --app $<TARGET_FILE:kpmap-train>
            --deck ${INPUTS}/train_linear_ci.toml --ranks 3 --work ${TRAIN_OUT}/no_checkpoints)
  # Restarts: bit for bit at the same rank count (MLP, Adam, shuffled batches)...
  add_test(NAME apps.kpmap-train.restart_same_ranks
    COMMAND ${TRAIN_CHECK} restart --launcher ${LAUNCHER} --app $<TARGET_FILE:kpmap-train>
            --deck ${INPUTS}/train_mlp_ci.toml --ranks 2 --restart-ranks 2 --epochs 4 --split 2
            --require-state --work ${TRAIN_OUT}/restart_mlp)
  # ... and to 1e-12 on another rank count (SGD with momentum, shuffled batches).
  add_test(NAME apps.kpmap-train.restart_other_ranks
    COMMAND ${TRAIN_CHECK} restart --launcher ${LAUNCHER} --app $<TARGET_FILE:kpmap-train>
            --deck ${INPUTS}/train_sgd_ci.toml --ranks 2 --restart-ranks 3 --epochs 6 --split 3
            --rtol 1e-12 --require-state --work ${TRAIN_OUT}/restart_sgd)
  # The classification deck reaches the accuracy docs/training.md states.
  # (Two --set options: each is applied, in order.)
  kpmap_add_mpi_test(NAME apps.kpmap-train.classification COMMAND kpmap-train
    ${INPUTS}/train_mlp_ci.toml --output ${TRAIN_OUT}/mlp --set train.epochs=3
    --set train.epochs=8 RANKS 2 LABELS apps EXPECT_OUTPUT "epoch 8/8")
  set_tests_properties(apps.kpmap-train.classification.np2 PROPERTIES FIXTURES_SETUP train_mlp)
  add_test(NAME apps.kpmap-train.accuracy
           COMMAND ${TRAIN_CHECK} accuracy ${TRAIN_OUT}/mlp/result.json --min 0.88)
  set_tests_properties(apps.kpmap-train.accuracy PROPERTIES LABELS apps
                       FIXTURES_REQUIRED train_mlp)
  # A convolutional network on synthetic images reaches the accuracy
  # docs/training.md states, and restarts bit for bit / to 1e-12 at another
  # rank count.
  kpmap_add_mpi_test(NAME apps.kpmap-train.cnn COMMAND kpmap-train
    ${INPUTS}/cnn_images_ci.toml --output ${TRAIN_OUT}/cnn RANKS 3 LABELS apps
    EXPECT_OUTPUT "epoch 8/8")
  set_tests_properties(apps.kpmap-train.cnn.np3 PROPERTIES FIXTURES_SETUP train_cnn)
  add_test(NAME apps.kpmap-train.cnn_accuracy
           COMMAND ${TRAIN_CHECK} accuracy ${TRAIN_OUT}/cnn/result.json --min 0.9)
  set_tests_properties(apps.kpmap-train.cnn_accuracy PROPERTIES LABELS apps
                       FIXTURES_REQUIRED train_cnn)
  add_test(NAME apps.kpmap-train.cnn_restart_same_ranks
    COMMAND ${TRAIN_CHECK} restart --launcher ${LAUNCHER} --app $<TARGET_FILE:kpmap-train>
            --deck ${INPUTS}/cnn_images_ci.toml --ranks 2 --restart-ranks 2 --epochs 3 --split 1
            --work ${TRAIN_OUT}/cnn_restart_same --rtol 0 --require-state)
  add_test(NAME apps.kpmap-train.cnn_restart_other_ranks
    COMMAND ${TRAIN_CHECK} restart --launcher ${LAUNCHER} --app $<TARGET_FILE:kpmap-train>
            --deck ${INPUTS}/cnn_images_ci.toml --ranks 2 --restart-ranks 3 --epochs 3 --split 1
            --work ${TRAIN_OUT}/cnn_restart_other --rtol 1e-12 --require-state)
  set_tests_properties(apps.kpmap-train.cnn_restart_same_ranks
    apps.kpmap-train.cnn_restart_other_ranks PROPERTIES
    LABELS apps PROCESSORS 2 TIMEOUT 300 ENVIRONMENT "${KPMAP_MPI_TEST_ENVIRONMENT}")
  add_test(NAME apps.kpmap-train.images_hdf5_and_idx
    COMMAND ${TRAIN_CHECK} images --launcher ${LAUNCHER} --app $<TARGET_FILE:kpmap-train>
            --deck ${CMAKE_CURRENT_SOURCE_DIR}/decks/cnn_file_images.toml --ranks 3
            --work ${TRAIN_OUT}/images)
  # The bytes of training state each rank holds, by kind (result.json), for
  # an optimizer with two state arrays (the CNN's Adam), one (momentum) and
  # none (gd), at 1 and 3 ranks.
  foreach(case cnn_adam:${INPUTS}/cnn_images_ci.toml linear_momentum:${INPUTS}/train_sgd_ci.toml
          linear_gd:${INPUTS}/train_linear_ci.toml)
    string(REPLACE ":" ";" parts ${case})
    list(GET parts 0 name)
    list(GET parts 1 deck)
    add_test(NAME apps.kpmap-train.state_bytes.${name}
      COMMAND ${TRAIN_CHECK} state_bytes --launcher ${LAUNCHER} --app $<TARGET_FILE:kpmap-train>
              --deck ${deck} --work ${TRAIN_OUT}/state_bytes_${name})
    set_tests_properties(apps.kpmap-train.state_bytes.${name} PROPERTIES
      LABELS apps PROCESSORS 2 TIMEOUT 120 ENVIRONMENT "${KPMAP_MPI_TEST_ENVIRONMENT}")
  endforeach()
  # train.sharding = "optimizer" (ZeRO stage 1), "gradients" (stage 2) and
  # "parameters" (stage 3) against replicated: the same checkpoints (stage 1
  # bit for bit, stages 2 and 3 to 1e-6) and the state per rank its even
  # part, for the CNN (Adam) at 1 to 4 ranks, the MLP (Adam) and the linear
  # model (momentum, stage 1 only; its bias is one value, fewer than the
  # ranks); checkpoints that cross modes and rank counts (the CNN's:
  # parameters at 3 -> replicated at 2, and back; the linear model's:
  # optimizer).
  function(kpmap_train_sharding_test name deck)  # then the rank counts, and --cross or not
    add_test(NAME apps.kpmap-train.sharding.${name}
      COMMAND ${TRAIN_CHECK} sharding --launcher ${LAUNCHER} --app $<TARGET_FILE:kpmap-train>
              --deck ${deck} --work ${TRAIN_OUT}/sharding_${name} --rank-counts ${ARGN})
    set_tests_properties(apps.kpmap-train.sharding.${name} PROPERTIES
      LABELS apps PROCESSORS 2 TIMEOUT 300 ENVIRONMENT "${KPMAP_MPI_TEST_ENVIRONMENT}")
  endfunction()
  kpmap_train_sharding_test(cnn_adam ${INPUTS}/cnn_images_ci.toml 1 2 3 4 --cross
                            --modes optimizer gradients parameters --cross-mode parameters)
  kpmap_train_sharding_test(mlp_adam ${INPUTS}/train_mlp_ci.toml 2 3
                            --modes optimizer gradients parameters)
  kpmap_train_sharding_test(linear_momentum ${INPUTS}/train_sgd_ci.toml 2 3 4 --cross)
  # Every registered layer (tests/decks/cnn_every_layer.toml, momentum), and the
  # mean squared error with plain SGD (no optimizer state at all).
  kpmap_train_sharding_test(every_layer_momentum ${CMAKE_CURRENT_SOURCE_DIR}/decks/cnn_every_layer.toml
                            2 3 4 --modes optimizer gradients parameters)
  kpmap_train_sharding_test(mlp_mse_sgd ${INPUTS}/train_mlp_regression.toml 3
                            --modes optimizer gradients parameters --set data.samples=3000
                            --set optimizer.kind=sgd)
  # ... and with the gradient and parameters sharded, each micro-batch's
  # gradient part reduce-scattered and added, the layers' parameters
  # gathered for every micro-batch.
  add_test(NAME apps.kpmap-train.accumulate_sharded
    COMMAND ${TRAIN_CHECK} same --launcher ${LAUNCHER} --app $<TARGET_FILE:kpmap-train>
            --deck ${INPUTS}/cnn_images_ci.toml --ranks 3 --rtol 1e-12 --set train.epochs=2
            --set train.sharding=parameters --other train.accumulate_steps=4
            --work ${TRAIN_OUT}/accumulate_sharded)
  # Sharded parameters with a batch of 2 at 3 ranks: a rank without samples
  # still takes part in every layer's gathers.
  add_test(NAME apps.kpmap-train.sharded_empty_ranks
    COMMAND ${TRAIN_CHECK} same --launcher ${LAUNCHER} --app $<TARGET_FILE:kpmap-train>
            --deck ${INPUTS}/cnn_images_ci.toml --ranks 3 --rtol 1e-6 --set train.epochs=1
            --set train.batch_size=2 --set train.max_steps=20
            --other train.sharding=parameters --work ${TRAIN_OUT}/sharded_empty_ranks)
  set_tests_properties(apps.kpmap-train.accumulate_sharded apps.kpmap-train.sharded_empty_ranks
    PROPERTIES LABELS apps PROCESSORS 2 TIMEOUT 300 ENVIRONMENT "${KPMAP_MPI_TEST_ENVIRONMENT}")
  # Tensor parallelism: the same training on meshes of 1 x 1, 2 x 1, 1 x 2,
  # 2 x 2 and 1 x 3 (data x model), and a 2 x 2 checkpoint continued on 4 x 1,
  # 1 x 1 and 1 x 3.
  add_test(NAME apps.kpmap-train.tensor_parallel
    COMMAND ${TRAIN_CHECK} mesh --launcher ${LAUNCHER} --app $<TARGET_FILE:kpmap-train>
            --deck ${CMAKE_CURRENT_SOURCE_DIR}/decks/mlp_tensor_parallel.toml
            --meshes 1x1 2x1 1x2 2x2 1x3 --restart-from 2x2 --restart-on 4x1 1x1 1x3
            --work ${TRAIN_OUT}/tensor_parallel)
  # A layer's parallel key is layout, not model: a 1 x 2 checkpoint continues
  # on 1 x 1 with the same layers written without it.
  add_test(NAME apps.kpmap-train.tensor_parallel_layout_only
    COMMAND ${TRAIN_CHECK} mesh --launcher ${LAUNCHER} --app $<TARGET_FILE:kpmap-train>
            --deck ${CMAKE_CURRENT_SOURCE_DIR}/decks/mlp_tensor_parallel.toml
            --meshes 1x2 --restart-from 1x2 --restart-on 1x1
            --restart-set model.layers.1.parallel=\"none\"
            --restart-set model.layers.3.parallel=\"none\"
            --work ${TRAIN_OUT}/tensor_parallel_layout_only)
  # A new run that logs no steps removes the step log an earlier run left in
  # its folder (kpmap-plot drew the old steps as the new run's).
  foreach(n 1 3)
    add_test(NAME apps.kpmap-train.stale_steps_removed.np${n}
      COMMAND ${TRAIN_CHECK} stale_steps --launcher ${LAUNCHER} --app $<TARGET_FILE:kpmap-train>
              --deck ${INPUTS}/train_linear_ci.toml --ranks ${n} --work ${TRAIN_OUT}/stale_steps)
    set_tests_properties(apps.kpmap-train.stale_steps_removed.np${n} PROPERTIES LABELS apps
      PROCESSORS 2 TIMEOUT 120 ENVIRONMENT "${KPMAP_MPI_TEST_ENVIRONMENT}")
  endforeach()
  # ... and an mlp whose hidden layers model.tensor_parallel = "auto" pairs.
  add_test(NAME apps.kpmap-train.tensor_parallel_mlp_auto
    COMMAND ${TRAIN_CHECK} mesh --launcher ${LAUNCHER} --app $<TARGET_FILE:kpmap-train>
            --deck ${INPUTS}/train_mlp_ci.toml --set model.tensor_parallel=auto
            --meshes 1x1 1x2 2x2 1x3 --work ${TRAIN_OUT}/tensor_parallel_mlp)
  # ... composed with train.sharding over "data": each mode on 2 x 2 as on 1 x 1
  # (and its bytes per rank, about 1/(D M) of a split layer's sharded state),
  # and a 2 x 2 checkpoint of "parameters" continued on 1 x 1, on 4 x 1 with
  # "gradients", on 1 x 3 with "optimizer" and on 2 x 2 replicated.
  add_test(NAME apps.kpmap-train.tensor_parallel_sharded
    COMMAND ${TRAIN_CHECK} mesh --launcher ${LAUNCHER} --app $<TARGET_FILE:kpmap-train>
            --deck ${CMAKE_CURRENT_SOURCE_DIR}/decks/mlp_tensor_parallel.toml
            --meshes 1x1 2x2:optimizer 2x2:gradients 2x2:parameters 1x3:parameters
            --restart-from 2x2:parameters --restart-on 1x1 4x1:gradients 1x3:optimizer 2x2
            --work ${TRAIN_OUT}/tensor_parallel_sharded)
  set_tests_properties(apps.kpmap-train.tensor_parallel apps.kpmap-train.tensor_parallel_mlp_auto
    apps.kpmap-train.tensor_parallel_layout_only
    apps.kpmap-train.tensor_parallel_sharded PROPERTIES LABELS apps PROCESSORS 2 TIMEOUT 300 ENVIRONMENT "${KPMAP_MPI_TEST_ENVIRONMENT}")
  # A mesh that does not fit the ranks: exit 2, naming the key.
  kpmap_add_mpi_test(NAME apps.kpmap-train.mesh_does_not_fit COMMAND kpmap-train
    ${CMAKE_CURRENT_SOURCE_DIR}/decks/mlp_tensor_parallel.toml --set train.mesh.model=2
    --output ${TRAIN_OUT}/bad
    RANKS 3 TIMEOUT 60 LABELS apps
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
            "--expect=--set train.mesh.model=2: key 'train.mesh.model': 2 ranks along \"model\" do not divide the 3 ranks of this run" --)
  # Gradient accumulation: 4 micro-batches of 8 make the same steps as batches of 32.
  add_test(NAME apps.kpmap-train.accumulate
    COMMAND ${TRAIN_CHECK} same --launcher ${LAUNCHER} --app $<TARGET_FILE:kpmap-train>
            --deck ${INPUTS}/cnn_images_ci.toml --ranks 3 --rtol 1e-12
            --set train.epochs=2 --other train.accumulate_steps=4 --work ${TRAIN_OUT}/accumulate)
  set_tests_properties(apps.kpmap-train.images_hdf5_and_idx apps.kpmap-train.accumulate
    PROPERTIES LABELS apps PROCESSORS 2 TIMEOUT 300 ENVIRONMENT "${KPMAP_MPI_TEST_ENVIRONMENT}")
  # Mixed precision needs a 16-bit type: Kokkos has one for GPU backends only.
  if(KPMAP_KOKKOS_DEVICES MATCHES "CUDA|HIP|SYCL")
    kpmap_add_mpi_test(NAME apps.kpmap-train.cnn_mixed COMMAND kpmap-train
      ${INPUTS}/cnn_images_ci.toml --set model.precision=mixed --output ${TRAIN_OUT}/cnn_mixed
      RANKS 3 LABELS apps EXPECT_OUTPUT "epoch 8/8")
    set_tests_properties(apps.kpmap-train.cnn_mixed.np3 PROPERTIES FIXTURES_SETUP train_mixed)
    add_test(NAME apps.kpmap-train.cnn_mixed_accuracy
             COMMAND ${TRAIN_CHECK} accuracy ${TRAIN_OUT}/cnn_mixed/result.json --min 0.9)
    set_tests_properties(apps.kpmap-train.cnn_mixed_accuracy PROPERTIES LABELS apps
                         FIXTURES_REQUIRED train_mixed)
  else()
    kpmap_add_mpi_test(NAME apps.kpmap-train.mixed_needs_half COMMAND kpmap-train
      ${INPUTS}/cnn_images_ci.toml --set model.precision=mixed --output ${TRAIN_OUT}/bad
      RANKS 2 TIMEOUT 60 LABELS apps
      WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
              "--expect=--set model.precision=mixed: key 'model.precision': \"mixed\" needs a 16-bit floating-point type, and this Kokkos build" --)
  endif()
  kpmap_add_mpi_test(NAME apps.kpmap-train.mixed_linear COMMAND kpmap-train
    ${INPUTS}/train_linear_ci.toml --set model.precision=mixed --output ${TRAIN_OUT}/bad
    RANKS 1 TIMEOUT 60 LABELS apps
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
            --expect "key 'model.precision': \"mixed\" is for mlp and sequential models" --)
  # The linear model's gradient and parameters are not sharded (features + 1
  # values): refused, naming the key.
  foreach(mode gradients parameters)
    kpmap_add_mpi_test(NAME apps.kpmap-train.linear_${mode}_sharding COMMAND kpmap-train
      ${INPUTS}/train_linear_ci.toml --set train.sharding=${mode} --output ${TRAIN_OUT}/bad
      RANKS 2 TIMEOUT 60 LABELS apps
      WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
              --expect "--set train.sharding=${mode}: key 'train.sharding': the linear model keeps its gradient and parameters whole" --)
  endforeach()
  # Layers that do not chain: exit 2 naming the deck line, the layer and both shapes.
  kpmap_add_mpi_test(NAME apps.kpmap-train.cnn_kernel_too_big COMMAND kpmap-train
    ${CMAKE_CURRENT_SOURCE_DIR}/decks/cnn_bad_shapes.toml --output ${TRAIN_OUT}/bad RANKS 3
    TIMEOUT 60 LABELS apps
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
            --expect "cnn_bad_shapes.toml:9: key 'model.layers': layer 3 (conv2d: a 5x5 kernel with padding \"valid\" does not fit its 4x4x4 image input)" --)
  kpmap_add_mpi_test(NAME apps.kpmap-train.cnn_dense_after_image COMMAND kpmap-train
    ${CMAKE_CURRENT_SOURCE_DIR}/decks/cnn_bad_shapes.toml --set model.layers.3.kernel=3
    --set model.layers.4.type=relu --output ${TRAIN_OUT}/bad RANKS 2 TIMEOUT 60 LABELS apps
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
            --expect "cnn_bad_shapes.toml:11: key 'model.layers': layer 5 (dense: its input is a 2x2x4 image; put a { type = \"flatten\" } layer before it)" --)
  set_tests_properties(apps.kpmap-train.hdf5_least_squares apps.kpmap-train.restart_same_ranks
    apps.kpmap-train.no_checkpoints
    apps.kpmap-train.restart_other_ranks PROPERTIES
    LABELS apps PROCESSORS 2 TIMEOUT 300 ENVIRONMENT "${KPMAP_MPI_TEST_ENVIRONMENT}")
  # Bad input: exit code 2 with the key named; divergence: exit code 3 with the step.
  kpmap_add_mpi_test(NAME apps.kpmap-train.bad_key COMMAND kpmap-train
    ${INPUTS}/train_linear_ci.toml --set model.kind=cnn --output ${TRAIN_OUT}/bad RANKS 3
    TIMEOUT 60 LABELS apps
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
            --expect "key 'model.kind': must be one of \"linear\", \"mlp\", \"sequential\", found \"cnn\"" --)
  # output.expect_val_loss: a run whose final validation loss is outside the
  # range finishes with exit code 5 (the noise's variance is 0.01 here, so no
  # model gets below 0.001); a range that is no [low, high], or a run with
  # nothing held out, is refused up front.
  kpmap_add_mpi_test(NAME apps.kpmap-train.expect_val_loss_fails COMMAND kpmap-train
    ${INPUTS}/train_linear_ci.toml --set "output.expect_val_loss=[0.0, 0.001]"
    --output ${TRAIN_OUT}/expect RANKS 1 3 TIMEOUT 60 LABELS apps reliability
    WRAPPER ${EXPECT_FAILURE} --within 20 --exit-code 5
    --regex "validation loss 0\\.01[0-9]+, expected in \\[0, 0\\.001\\]: FAILED" --)
  kpmap_add_mpi_test(NAME apps.kpmap-train.expect_val_loss_passes COMMAND kpmap-train
    ${INPUTS}/train_linear_ci.toml --set "output.expect_val_loss=[0.005, 0.02]"
    --output ${TRAIN_OUT}/expect_passes RANKS 3 TIMEOUT 60 LABELS apps
    WRAPPER ${EXPECT_FAILURE} --within 20 --exit-code 0
    --regex "expected in \\[0\\.005, 0\\.02\\]: PASSED" --)
  kpmap_add_mpi_test(NAME apps.kpmap-train.expect_val_loss_bad COMMAND kpmap-train
    ${INPUTS}/train_linear_ci.toml --set "output.expect_val_loss=[0.02, 0.01]"
    --output ${TRAIN_OUT}/bad RANKS 3 TIMEOUT 60 LABELS apps
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
    --expect "key 'output.expect_val_loss': expected [low, high] with low <= high" --)
  kpmap_add_mpi_test(NAME apps.kpmap-train.expect_val_loss_nothing_held_out COMMAND kpmap-train
    ${INPUTS}/train_linear_ci.toml --set "output.expect_val_loss=[0.0, 1.0]"
    --set data.validation_fraction=0 --output ${TRAIN_OUT}/bad RANKS 1 TIMEOUT 60 LABELS apps
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
    --expect "this run holds out no samples" --)
  kpmap_add_mpi_test(NAME apps.kpmap-train.gd_with_batches COMMAND kpmap-train
    ${INPUTS}/train_linear_ci.toml --set train.batch_size=10 --output ${TRAIN_OUT}/bad RANKS 2
    TIMEOUT 60 LABELS apps
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
            "--expect=--set train.batch_size=10: key 'train.batch_size': optimizer.kind = \"gd\"" --)
  kpmap_add_mpi_test(NAME apps.kpmap-train.unwritable_output COMMAND kpmap-train
    ${INPUTS}/train_linear_ci.toml --output /proc/kpmap-cannot-write RANKS 2 TIMEOUT 60 LABELS apps
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
            --expect "output folder '/proc/kpmap-cannot-write': cannot create it" --)
  kpmap_add_mpi_test(NAME apps.kpmap-train.diverges COMMAND kpmap-train
    ${INPUTS}/train_linear_ci.toml --set optimizer.learning_rate=50 --output ${TRAIN_OUT}/nan
    RANKS 3 TIMEOUT 60 LABELS apps
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 3
            --expect "training diverged: the loss is" --expect ", step 1 of 1" --)
  # A key's old name (output.keep, before the apps shared one [output]
  # schema) still works until kpmap 0.3, with a warning naming the new one:
  # 3 checkpoints written, 1 kept (the default keeps 3).
  kpmap_add_mpi_test(NAME apps.kpmap-train.old_key_name COMMAND kpmap-train
    ${INPUTS}/train_linear_ci.toml --set output.keep=1 --set output.checkpoint_every=1
    --set train.epochs=3 --output ${TRAIN_OUT}/old_key_name RANKS 2 TIMEOUT 60 LABELS apps
    WRAPPER ${EXPECT_EXIT} --exit-code 0 "--regex=kpmap-train: warning: --set output.keep=1: key 'output.keep' is now called 'output.keep_last'; the old name is read until kpmap 0.3" --)
  set_tests_properties(apps.kpmap-train.old_key_name.np2 PROPERTIES FIXTURES_SETUP train_old_key)
  add_test(NAME apps.kpmap-train.old_key_name.kept
    COMMAND ${Python3_EXECUTABLE} -c "import glob, sys; k = sorted(glob.glob(sys.argv[1] + '/checkpoint_*.h5')); print(k); sys.exit(0 if [p[-9:] for p in k] == ['000003.h5'] else 1)"
            ${TRAIN_OUT}/old_key_name)
  set_tests_properties(apps.kpmap-train.old_key_name.kept PROPERTIES LABELS apps
    FIXTURES_REQUIRED train_old_key)
  # --help-deck lists the keys; docs/decks.md's tables are the schema's.
  kpmap_add_output_test(NAME apps.kpmap-train.help_deck COMMAND kpmap-train --help-deck
    LABELS apps EXPECT "optimizer.learning_rate")
  # Both apps' --help list the exit codes from one table (kpmap::exit_code::help).
  kpmap_add_output_test(NAME apps.kpmap-train.help COMMAND kpmap-train --help LABELS apps
    EXPECT "Exit codes: 0 success, 1 an unexpected error, 2 bad input, 3 training diverged")
  add_test(NAME docs.decks.kpmap-train
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_deck_docs.py
            $<TARGET_FILE:kpmap-train> ${PROJECT_SOURCE_DIR}/docs/decks.md)
  set_tests_properties(docs.decks.kpmap-train PROPERTIES LABELS docs
    ENVIRONMENT "${KPMAP_MPI_TEST_ENVIRONMENT}")
endif()
