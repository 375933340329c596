# SPDX-License-Identifier: BSD-3-Clause
# The reliability tests (docs/reliability.md): faults, stop signals, bad input,
# outputs that must not be lost (included by tests/CMakeLists.txt).

# ---- reliability: faults, stop signals, numerical health (docs/reliability.md) ----
if(KPMAP_ENABLE_APPS)
  set(STOP_CHECK ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_stop.py
                 --launcher ${LAUNCHER})
  set(FAULT_OUT ${CMAKE_CURRENT_BINARY_DIR}/faults)
  set(heat_args ${INPUTS}/heat2d_ci.toml --set output.checkpoint_every=2)
  set(train_args ${INPUTS}/train_sgd_ci.toml --set output.checkpoint_every=1)
  # kpmap_add_fault_test(APP NAME INJECT R:S:KIND [ARGS deck args...] [EXIT_CODE N]
  #   [EXPECT text...] [ENV VAR=value...] [LAST_GOOD file STEP n] [ABSENT file...]):
  # runs kpmap-APP on 3 ranks with the fault injected; it must end within 10 s
  # with every EXPECT text. LAST_GOOD: the message names that checkpoint of the
  # run's folder and it reads back whole (h5py) at step n. ABSENT files must not exist.
  function(kpmap_add_fault_test app name)
    cmake_parse_arguments(F "" "INJECT;EXIT_CODE;LAST_GOOD;STEP" "ARGS;EXPECT;ENV;ABSENT" ${ARGN})
    set(dir ${FAULT_OUT}/${app}_${name})
    if(NOT F_ARGS)
      set(F_ARGS ${${app}_args})
    endif()
    set(checks --within 10 --env KPMAP_FAULT_INJECT=${F_INJECT})
    if(DEFINED F_EXIT_CODE)
      list(APPEND checks --exit-code ${F_EXIT_CODE})
    endif()
    foreach(e IN LISTS F_ENV)
      list(APPEND checks --env ${e})
    endforeach()
    foreach(text IN LISTS F_EXPECT)
      list(APPEND checks --expect ${text})
    endforeach()
    if(F_LAST_GOOD)
      list(APPEND checks --expect "the last good checkpoint is ${dir}/${F_LAST_GOOD}"
                         --checkpoint ${dir}/${F_LAST_GOOD}:${F_STEP})
    endif()
    foreach(file IN LISTS F_ABSENT)
      list(APPEND checks --absent ${dir}/${file})
    endforeach()
    kpmap_add_mpi_test(NAME apps.kpmap-${app}.${name} COMMAND kpmap-${app} ${F_ARGS}
      --output ${dir} RANKS 3 TIMEOUT 60 LABELS apps reliability
      WRAPPER ${EXPECT_FAILURE} ${checks} --)
  endfunction()

  # An error on one rank, or a rank that dies without finalising MPI, ends the
  # 3-rank job within 10 s with the message; one that hangs (alive, no
  # progress) is caught by KPMAP_WATCHDOG.
  foreach(app heat train)
    kpmap_add_fault_test(${app} fault_error INJECT 1:3 EXIT_CODE 1
      EXPECT "rank 1: injected error at step 3 (KPMAP_FAULT_INJECT=1:3)")
    kpmap_add_fault_test(${app} fault_exit INJECT 2:2:exit EXPECT "rank 2: injected exit at step 2")
    # A rank killed by a signal: Open MPI's mpiexec returns 128 + 9 (what
    # docs/reliability.md tells a batch script to expect).
    if(MPIEXEC_EXECUTABLE MATCHES "mpiexec|mpirun")
      kpmap_add_fault_test(${app} fault_kill INJECT 1:2:kill EXIT_CODE 137
        EXPECT "rank 1: injected SIGKILL at step 2")
    endif()
    # The message gives the idle time it saw (2 s, or 3 on a loaded machine
    # whose watchdog thread woke late), so the test matches around it.
    kpmap_add_fault_test(${app} fault_hang INJECT 1:4:hang ENV KPMAP_WATCHDOG=2
      EXPECT "no progress for " "s in step 4 (KPMAP_WATCHDOG=2); ending the job")
  endforeach()
  # A validation pass longer than KPMAP_WATCHDOG (36000 held-out images,
  # 3 s of work per rank at 2 ranks) is progress, chunk by chunk: the healthy
  # run finishes.
  kpmap_add_mpi_test(NAME apps.kpmap-train.watchdog_long_evaluation COMMAND kpmap-train
    ${INPUTS}/cnn_images_ci.toml --set data.samples=40000 --set data.validation_fraction=0.9
    "--set=data.image=[28, 28, 1]" --set train.max_steps=2 --output ${FAULT_OUT}/watchdog_eval
    RANKS 2 TIMEOUT 300 LABELS apps reliability
    WRAPPER ${EXPECT_EXIT} --exit-code 0 --env KPMAP_WATCHDOG=1
            --expect "train.max_steps = 2 reached after step 2" --)
  # A NaN in one rank's state stops the run (exit 3) naming the step and the
  # quantity, and the last good checkpoint survives.
  kpmap_add_fault_test(heat fault_nan INJECT 1:5:nan EXIT_CODE 3
    EXPECT "step 5: the linear solve failed: the initial residual is nan"
    LAST_GOOD checkpoint_000004.h5 STEP 4 ABSENT checkpoint_000005.h5)
  kpmap_add_fault_test(heat fault_nan_explicit INJECT 2:3:nan EXIT_CODE 3
    ARGS ${INPUTS}/heat_explicit_ci.toml --set output.checkpoint_every=2
    EXPECT "step 3: the energy field holds NaN or Inf"
    LAST_GOOD checkpoint_000002.h5 STEP 2 ABSENT checkpoint_000004.h5)
  kpmap_add_fault_test(train fault_nan INJECT 0:25:nan EXIT_CODE 3
    EXPECT "training diverged: the loss is nan at epoch 3, step 5 of 10"
    LAST_GOOD checkpoint_000002.h5 STEP 2 ABSENT checkpoint_000003.h5)
  # A checkpoint write that fails (as on a full disk) stops the run with the
  # reason; the previous checkpoint is intact and no temporary is left.
  kpmap_add_fault_test(heat fault_io INJECT 1:3:io EXIT_CODE 1
    EXPECT "step 4: the checkpoint failed: writing dataset"
    LAST_GOOD checkpoint_000002.h5 STEP 2
    ABSENT checkpoint_000004.h5 checkpoint_000004.h5.tmp)
  kpmap_add_fault_test(train fault_io INJECT 2:15:io EXIT_CODE 1
    EXPECT "epoch 2 (optimizer step 20): the checkpoint failed: writing dataset"
    LAST_GOOD checkpoint_000001.h5 STEP 1
    ABSENT checkpoint_000002.h5 checkpoint_000002.h5.tmp)
  # A full disk, a real one (a small tmpfs; mounting it needs root, and the
  # test is skipped, loudly, without): the job ends within seconds at any
  # rank count with the reason, the previous checkpoint intact and no
  # temporary left. Checkpoints of these runs outgrow 200k (heat) and 136k
  # (train; the run's deck.toml is in the folder too) at their third.
  set(ON_FULL_DISK ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/on_full_disk.py)
  set(full_heat_args ${INPUTS}/heat2d_ci.toml --set mesh.cells=[64,48]
                     --set output.checkpoint_every=1 --output {disk}/out)
  set(full_train_args ${INPUTS}/cnn_images_ci.toml --set data.samples=400
                      --set output.checkpoint_every=1 --output {disk}/out)
  foreach(app heat train)
    if(app STREQUAL heat)
      set(size 200k)
      set(when "step 3")
    else()
      set(size 136k)
      set(when "epoch 3 (optimizer step 30)")
    endif()
    kpmap_add_mpi_test(NAME apps.kpmap-${app}.full_disk COMMAND kpmap-${app} ${full_${app}_args}
      RANKS 1 2 3 TIMEOUT 60 LABELS apps reliability
      WRAPPER ${ON_FULL_DISK} --size ${size} --
              ${EXPECT_FAILURE} --within 10 --exit-code 1
              --expect "${when}: the checkpoint failed: writing checkpoint {disk}/out/checkpoint_000003.h5.tmp: no space left on the device"
              --expect "the last good checkpoint is {disk}/out/checkpoint_000002.h5"
              --checkpoint {disk}/out/checkpoint_000002.h5:2
              --absent {disk}/out/checkpoint_000003.h5.tmp --absent {disk}/out/checkpoint_000003.h5
              --)
    foreach(n 1 2 3)
      set_tests_properties(apps.kpmap-${app}.full_disk.np${n} PROPERTIES SKIP_RETURN_CODE 77)
    endforeach()
  endforeach()
  # An output that is a link (here to /dev/full) is refused before the run,
  # naming it: a rename over it would replace the link, and a write through
  # it would write where the link points.
  kpmap_add_mpi_test(NAME apps.kpmap-heat.table_is_a_link COMMAND kpmap-heat
    ${INPUTS}/heat2d_ci.toml --output ${FAULT_OUT}/heat_devfull RANKS 1 3 TIMEOUT 60
    LABELS apps reliability
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
            --symlink ${FAULT_OUT}/heat_devfull/history.csv:/dev/full
            --expect "output ${FAULT_OUT}/heat_devfull/history.csv: it is a symbolic link" --)
  kpmap_add_mpi_test(NAME apps.kpmap-train.table_is_a_link COMMAND kpmap-train
    ${INPUTS}/train_linear_ci.toml --output ${FAULT_OUT}/train_devfull RANKS 1 3 TIMEOUT 60
    LABELS apps reliability
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
            --symlink ${FAULT_OUT}/train_devfull/history.csv:/dev/full
            --expect "output ${FAULT_OUT}/train_devfull/history.csv: it is a symbolic link" --)
  # What a run writes, tried as a hostile user would (check_output_safety.py):
  # outputs that are devices, FIFOs, links, folders or the input are refused
  # and left as they were; one run per output folder; a restart into the
  # folder keeps each step of the table once; output folders in any
  # language; hard links and FIFOs among its files and a linked fields/
  # folder are never written through; long output paths that checkpoint,
  # too long ones refused.
  set(SAFETY ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_output_safety.py)
  foreach(app heat train)
    if(app STREQUAL heat)
      set(safety_args --deck ${INPUTS}/heat2d_ci.toml
                      --other-app $<TARGET_FILE:kpmap-train> --other-deck ${INPUTS}/train_linear_ci.toml
                      --long time.end_step=1000000 time.end_time=1e9 output.checkpoint_every=0)
    else()
      set(safety_args --deck ${INPUTS}/train_mlp_ci.toml
                      --other-app $<TARGET_FILE:kpmap-heat> --other-deck ${INPUTS}/heat2d_ci.toml
                      --long train.epochs=1000000 output.checkpoint_every=0)
    endif()
    foreach(case targets lock restart-table non-ascii links other-app trace-target long-path)
      foreach(n 1 3)
        add_test(NAME apps.kpmap-${app}.outputs_safe.${case}.np${n}
          COMMAND ${SAFETY} ${case} --launcher ${LAUNCHER} --app $<TARGET_FILE:kpmap-${app}>
                  --ranks ${n} --workdir ${FAULT_OUT}/safety_${app}_${case}_np${n} ${safety_args})
        set_tests_properties(apps.kpmap-${app}.outputs_safe.${case}.np${n} PROPERTIES
          LABELS "apps;reliability" PROCESSORS 2 TIMEOUT 300
          ENVIRONMENT "${KPMAP_MPI_TEST_ENVIRONMENT}")
      endforeach()
    endforeach()
  endforeach()
  # A trace asked for that cannot be written at the end (a full disk) is an
  # error, exit 1, not a run that says it succeeded.
  kpmap_add_mpi_test(NAME apps.kpmap-heat.trace_full_disk COMMAND kpmap-heat
    ${INPUTS}/tea_bm_1.in --output ${FAULT_OUT}/trace_full_disk_np{np} --trace {disk}/trace.json
    RANKS 1 3 TIMEOUT 60 LABELS apps reliability
    WRAPPER ${ON_FULL_DISK} --size 16k -- ${EXPECT_FAILURE} --within 10 --exit-code 1
            --expect "the trace was not written: cannot write '{disk}/trace.json.tmp': no space left on the device" --)
  foreach(n 1 3)
    set_tests_properties(apps.kpmap-heat.trace_full_disk.np${n} PROPERTIES SKIP_RETURN_CODE 77)
  endforeach()
  # Inputs that are not regular files are refused before anything reads them
  # (a FIFO would block for ever, /dev/zero fill the memory).
  set(NOT_FILES ${FAULT_OUT}/not_files)
  kpmap_add_mpi_test(NAME apps.kpmap-heat.deck_is_a_device COMMAND kpmap-heat /dev/zero
    --output ${NOT_FILES}/out RANKS 1 3 TIMEOUT 60 LABELS apps reliability
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
            --expect "/dev/zero: the deck file is a character device, not a regular file" --)
  kpmap_add_mpi_test(NAME apps.kpmap-heat.deck_is_a_fifo COMMAND kpmap-heat
    ${NOT_FILES}/deck_fifo.in --output ${NOT_FILES}/out RANKS 1 3 TIMEOUT 60
    LABELS apps reliability
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2 --fifo ${NOT_FILES}/deck_fifo.in
            --expect "deck_fifo.in: the deck file is a FIFO (named pipe), not a regular file" --)
  kpmap_add_mpi_test(NAME apps.kpmap-train.deck_is_a_directory COMMAND kpmap-train ${INPUTS}
    --output ${NOT_FILES}/out_train RANKS 1 3 TIMEOUT 60 LABELS apps reliability
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
            --expect "the deck file is a directory, not a regular file" --)
  kpmap_add_mpi_test(NAME apps.kpmap-train.data_is_a_device COMMAND kpmap-train
    ${INPUTS}/train_linear_hdf5_ci.toml --set data.path=/dev/urandom --output ${NOT_FILES}/out_train
    RANKS 1 3 TIMEOUT 60 LABELS apps reliability
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
            --expect "data file /dev/urandom is a character device, not a regular file" --)
  kpmap_add_mpi_test(NAME apps.kpmap-train.images_are_a_fifo COMMAND kpmap-train
    ${CMAKE_CURRENT_SOURCE_DIR}/decks/cnn_file_images.toml --set data.kind=idx
    --set data.path=${NOT_FILES}/images_fifo --set data.labels=${NOT_FILES}/images_fifo
    --output ${NOT_FILES}/out_train RANKS 1 3 TIMEOUT 60 LABELS apps reliability
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2 --fifo ${NOT_FILES}/images_fifo
            --expect "is a FIFO (named pipe), not a regular file" --)
  kpmap_add_mpi_test(NAME apps.kpmap-heat.restart_is_a_directory COMMAND kpmap-heat
    ${INPUTS}/heat2d_ci.toml --restart ${INPUTS} --output ${NOT_FILES}/out RANKS 1 3 TIMEOUT 60
    LABELS apps reliability
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
            --expect "restart file ${INPUTS} is a directory, not a regular file" --)
  # Damaged checkpoints (a NaN, an impossible density or energy, a negative
  # step, a NaN time, a position at odds with itself, another model of the
  # same shapes; each dataset's checksum
  # recomputed, so only the value gives it away) and data holding a NaN are
  # refused at load: exit 2 within 10 s at 1 and 3 ranks, naming the file,
  # the dataset and the first bad element.
  set(DAMAGED ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_damaged.py)
  # Under the sanitizers (-O0), at 3 ranks only: the refusal paths are the
  # same code at 1 rank, which the other builds test at both counts, and a
  # refused restart at 1 rank took 5 s there (3 s at 3 ranks; kpmap-train's
  # cases 180 s in all at both counts, on 2 cores).
  if(KPMAP_ENABLE_SANITIZERS)
    list(APPEND DAMAGED --ranks 3)
  endif()
  add_test(NAME apps.kpmap-heat.damaged_inputs
    COMMAND ${DAMAGED} heat --launcher ${LAUNCHER} --app $<TARGET_FILE:kpmap-heat>
            --deck ${INPUTS}/heat2d_ci.toml --work ${FAULT_OUT}/damaged_heat)
  add_test(NAME apps.kpmap-train.damaged_inputs
    COMMAND ${DAMAGED} train --launcher ${LAUNCHER} --app $<TARGET_FILE:kpmap-train>
            --deck ${INPUTS}/train_mlp_ci.toml --cnn-deck ${INPUTS}/cnn_images_ci.toml
            --work ${FAULT_OUT}/damaged_train)
  set_tests_properties(apps.kpmap-heat.damaged_inputs apps.kpmap-train.damaged_inputs PROPERTIES
    LABELS "apps;reliability" PROCESSORS 2 TIMEOUT 600
    ENVIRONMENT "${KPMAP_MPI_TEST_ENVIRONMENT}")
  # Work that cannot finish, or would do nothing, is refused up front; long
  # vectors are summarised on the terminal (result.json has them whole);
  # empty paths are mistakes, not "none".
  kpmap_add_mpi_test(NAME apps.kpmap-train.too_many_classes COMMAND kpmap-train
    ${INPUTS}/train_mlp_ci.toml --set data.classes=1000000 --output ${FAULT_OUT}/bad_train RANKS 1 3
    TIMEOUT 60 LABELS apps reliability
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
            "--expect=--set data.classes=1000000: key 'data.classes': the labels of a synthetic set"
            --expect "classes^2 x features; minutes to hours): use at most" --)
  # Adam divides by sqrt(v) + epsilon: at 0, a gradient that stays zero (a
  # feature that is 0 in every sample) gives 0/0 and NaN weights.
  kpmap_add_mpi_test(NAME apps.kpmap-train.adam_epsilon_zero COMMAND kpmap-train
    ${INPUTS}/train_mlp_ci.toml --set optimizer.epsilon=0 --output ${FAULT_OUT}/bad_train RANKS 1 3
    TIMEOUT 60 LABELS apps reliability
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
            "--expect=--set optimizer.epsilon=0: key 'optimizer.epsilon' is out of range: must be (0.0, 1.0"
            --expect "found 0.0" --)
  kpmap_add_mpi_test(NAME apps.kpmap-heat.zero_steps COMMAND kpmap-heat
    ${INPUTS}/heat2d_ci.toml --set time.end_time=1e-12 --output ${FAULT_OUT}/bad RANKS 1 3
    TIMEOUT 60 LABELS apps reliability
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
            --expect "key 'time.end_time': the run ends at 1e-12 s, before its first step of 0.004 s: it would do nothing" --)
  kpmap_add_mpi_test(NAME apps.kpmap-train.long_vector_summary COMMAND kpmap-train
    ${INPUTS}/train_linear_ci.toml --set data.features=40 --set train.epochs=2
    --output ${FAULT_OUT}/long_vector RANKS 1 LABELS apps reliability
    EXPECT_OUTPUT "learned w = \\[[^\n]*, \\.\\.\\. 24 more \\.\\.\\., [^\n]*\\]  b")
  foreach(option output restart)
    kpmap_add_mpi_test(NAME apps.kpmap-train.empty_${option} COMMAND kpmap-train
      ${INPUTS}/train_linear_ci.toml --${option} {empty} RANKS 1 3 TIMEOUT 60
      LABELS apps reliability
      WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
              --expect "kpmap-train: --${option} is empty; give a path" --)
  endforeach()
  # A Kokkos flag whose number does not parse is named (Kokkos itself says
  # "stoi", or aborts).
  kpmap_add_mpi_test(NAME apps.kpmap-train.kokkos_bad_number COMMAND kpmap-train
    ${INPUTS}/train_linear_ci.toml --kokkos-num-threads=abc --output ${FAULT_OUT}/bad_train RANKS 1 3
    TIMEOUT 60 LABELS apps reliability
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
            --expect "command line: --kokkos-num-threads=abc: --kokkos-num-threads takes a whole number, found 'abc'" --)
  # A bad value of the variable is bad input.
  kpmap_add_mpi_test(NAME apps.kpmap-heat.fault_bad_value COMMAND kpmap-heat ${heat_args}
    --output ${FAULT_OUT}/bad RANKS 2 TIMEOUT 60 LABELS apps reliability
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2 --env KPMAP_FAULT_INJECT=1:x
            --expect "KPMAP_FAULT_INJECT='1:x': STEP 'x' is not a whole number" --)
  # Ranks that do not run alike (docs/reliability.md, "Ranks that differ"),
  # one part of an MPMD launch (mpiexec ... : ...) unlike the other: another
  # KPMAP_* setting, another build of kpmap, other arguments, or a restart
  # path that names another file where those ranks run. Every rank ends
  # within 10 s with exit 2 and one line naming what differs, both values and
  # the ranks that hold each. (Across hosts: cluster.differs_env.2x2.)
  if(MPIEXEC_EXECUTABLE MATCHES "mpiexec|mpirun")
    add_executable(kpmap_heat_another_build ${PROJECT_SOURCE_DIR}/tests/support/another_build.cpp)
    target_link_libraries(kpmap_heat_another_build PRIVATE kpmap::apps)
    # Its file is kpmap-heat too, in a folder of its own: only the build differs.
    set_target_properties(kpmap_heat_another_build PROPERTIES OUTPUT_NAME kpmap-heat
      RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/another_build)
    set(differs ${FAULT_OUT}/differs)
    set(differs_heat $<TARGET_FILE:kpmap-heat> ${heat_args} --output ${differs}/run)
    set(differs_two ${MPIEXEC_EXECUTABLE} ${MPIEXEC_PREFLAGS} -n 2)
    # kpmap_add_differs_test(NAME EXPECT text... COMMAND wrapper options... -- command...)
    function(kpmap_add_differs_test name)
      cmake_parse_arguments(D "" "" "EXPECT;COMMAND" ${ARGN})
      set(checks --within 10 --exit-code 2)
      foreach(text IN LISTS D_EXPECT)
        list(APPEND checks --expect ${text})
      endforeach()
      add_test(NAME apps.kpmap-heat.differs_${name} COMMAND ${EXPECT_FAILURE} ${checks} ${D_COMMAND})
      set_tests_properties(apps.kpmap-heat.differs_${name} PROPERTIES LABELS "mpi;apps;reliability"
        PROCESSORS 3 TIMEOUT 60 ENVIRONMENT "${KPMAP_MPI_TEST_ENVIRONMENT}")
    endfunction()
    kpmap_add_differs_test(env
      EXPECT "the ranks of this job do not run alike: KPMAP_WATCHDOG is unset on ranks 0-1 (host "
             "but '7x' on rank 2 (host " "(mpirun -x NAME, srun --export)"
      COMMAND -- ${differs_two} ${differs_heat} : -n 1 -x KPMAP_WATCHDOG=7x ${differs_heat})
    kpmap_add_differs_test(build
      EXPECT "kpmap commit is '" "but 'another-build' on rank 2 (host "
      COMMAND -- ${differs_two} ${differs_heat} : -n 1 $<TARGET_FILE:kpmap_heat_another_build> ${heat_args}
                 --output ${differs}/run)
    kpmap_add_differs_test(arguments
      EXPECT "the ranks of this job were given different arguments: the command line is '"
             "--set time.end_step=5' on rank 2 (host "
      COMMAND -- ${differs_two} ${differs_heat} : -n 1 ${differs_heat} --set time.end_step=5)
    # ck.h5 in the folder each part starts in: checkpoints of steps 4 and 2.
    add_test(NAME apps.kpmap-heat.differs_source COMMAND ${EXPECT_EXIT} --exit-code 0 --
      $<TARGET_FILE:kpmap-heat> ${heat_args} --output ${differs}/source)
    set_tests_properties(apps.kpmap-heat.differs_source PROPERTIES LABELS "apps;reliability"
      FIXTURES_SETUP heat_differs ENVIRONMENT "${KPMAP_MPI_TEST_ENVIRONMENT}")
    kpmap_add_differs_test(restart
      EXPECT "the ranks of this job see different restart files: --restart ck.h5 is "
             " on ranks 0-1 (host " " on rank 2 (host "
             "every rank must read the same checkpoint"
      COMMAND --symlink ${differs}/a/ck.h5:${differs}/source/checkpoint_000004.h5
              --symlink ${differs}/b/ck.h5:${differs}/source/checkpoint_000002.h5
              -- ${differs_two} -wdir ${differs}/a ${differs_heat} --restart ck.h5
                 : -n 1 -wdir ${differs}/b ${differs_heat} --restart ck.h5)
    set_tests_properties(apps.kpmap-heat.differs_restart PROPERTIES FIXTURES_REQUIRED heat_differs)
  endif()
  # A key that would have no effect where it is given is refused with the
  # reason: units on a relu layer, a gap in the layers' numbering, a pixel
  # scaling for generated images.
  function(kpmap_add_no_effect_test name set text)
    kpmap_add_mpi_test(NAME apps.kpmap-train.no_effect_${name} COMMAND kpmap-train
      ${INPUTS}/cnn_images_ci.toml --set ${set} --output ${FAULT_OUT}/bad_train
      RANKS 1 3 TIMEOUT 60 LABELS apps reliability
      WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2 "--expect=${text}" --)
  endfunction()
  kpmap_add_no_effect_test(units_on_relu model.layers.2.units=5
    "key 'model.layers.2.units': a relu layer has no units, it would have no effect (a relu layer reads only its type)")
  kpmap_add_no_effect_test(layer_gap "model.layers.9.type=\"relu\""
    "key 'model.layers.9.type': layers are numbered 1, 2, 3, ... without gaps (first to last), model.layers.8 is missing")
  kpmap_add_no_effect_test(mean_without_bytes "data.mean=[0.5]"
    "key 'data.mean': data.kind = \"images\" reads no data.mean, it would have no effect")
  # Every key that other keys can make useless says when it takes effect
  # (deck::Schema::when; test_deck, test_heat, test_tea_deck and
  # test_train_registry try each): given where it would do nothing, it is
  # refused before the run.
  kpmap_add_no_effect_test(path_on_images data.path=x.h5
    "key 'data.path': data.kind = \"images\" reads no data.path, it would have no effect (data.path is read only where data.kind is \"hdf5\" or \"idx\")")
  kpmap_add_mpi_test(NAME apps.kpmap-heat.no_effect_radius_on_rectangle COMMAND kpmap-heat
    ${INPUTS}/heat2d_ci.toml --set states.2.radius=1.0 --output ${FAULT_OUT}/bad
    RANKS 1 3 TIMEOUT 60 LABELS apps reliability
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
            "--expect=--set states.2.radius=1.0: key 'states.2.radius': states.2.geometry = \"rectangle\" reads no states.2.radius, it would have no effect" --)
  # The solvers' keys where they do nothing: the switch from CG of chebyshev
  # and ppcg (presteps, epslim) with pipecg or cgsr, any linear solve's key with
  # the explicit scheme.
  function(kpmap_add_heat_refusal_test name)
    cmake_parse_arguments(R "" "EXPECT" "SET" ${ARGN})
    set(sets)
    foreach(x IN LISTS R_SET)
      list(APPEND sets --set ${x})
    endforeach()
    kpmap_add_mpi_test(NAME apps.kpmap-heat.${name} COMMAND kpmap-heat ${INPUTS}/heat2d_ci.toml
      ${sets} --output ${FAULT_OUT}/bad RANKS 1 3 TIMEOUT 60 LABELS apps reliability
      WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2 "--expect=${R_EXPECT}" --)
  endfunction()
  kpmap_add_heat_refusal_test(no_effect_presteps_pipecg SET "solver.method=\"pipecg\""
    solver.presteps=5 EXPECT "key 'solver.presteps': solver.method = \"pipecg\" reads no solver.presteps, it would have no effect (solver.presteps is read only where solver.method is \"chebyshev\" or \"ppcg\")")
  kpmap_add_heat_refusal_test(no_effect_epslim_cgsr SET "solver.method=\"cgsr\""
    solver.epslim=0.5 EXPECT "key 'solver.epslim': solver.method = \"cgsr\" reads no solver.epslim")
  kpmap_add_heat_refusal_test(no_effect_method_explicit SET "time.scheme=\"explicit\""
    "solver.method=\"pipecg\"" EXPECT "key 'solver.method': time.scheme = \"explicit\" reads no solver.method, it would have no effect")
  # A tolerance below double precision is out of reach: every CG (cgsr's
  # carried residual falls to 0, where it once said "converged") fails the
  # solve, exit 3, saying so.
  foreach(method cg cgsr)
    kpmap_add_mpi_test(NAME apps.kpmap-heat.eps_out_of_reach_${method} COMMAND kpmap-heat
      ${INPUTS}/heat2d_ci.toml --set "solver.method=\"${method}\"" --set solver.eps=1e-300
      --set solver.max_iters=100000 --output ${FAULT_OUT}/bad RANKS 1 3 TIMEOUT 60
      LABELS apps reliability
      WRAPPER ${EXPECT_FAILURE} --within 20 --exit-code 3
              "--expect=${method} cannot reach solver.eps = 1.000000e-300" --)
  endforeach()
  # An injection aimed at no rank of the job is refused, not silently skipped;
  # a trace's event limit that is no whole number in range is refused, not
  # read as 0.
  kpmap_add_mpi_test(NAME apps.kpmap-train.fault_no_such_rank COMMAND kpmap-train
    ${INPUTS}/train_linear_ci.toml --output ${FAULT_OUT}/bad_train RANKS 1 2 TIMEOUT 60
    LABELS apps reliability
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2 --env KPMAP_FAULT_INJECT=5:1
            --expect "KPMAP_FAULT_INJECT='5:1': RANK 5 is not a rank of this job of " --)
  foreach(value -5 abc)
    kpmap_add_mpi_test(NAME apps.kpmap-heat.trace_max_events_${value} COMMAND kpmap-heat
      ${heat_args} --trace ${FAULT_OUT}/bad_trace.json --output ${FAULT_OUT}/bad RANKS 1 3
      TIMEOUT 60 LABELS apps reliability
      WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2 --env KPMAP_TRACE_MAX_EVENTS=${value}
              --expect "KPMAP_TRACE_MAX_EVENTS='${value}': expected a whole number of events from 0 to 5000000" --)
  endforeach()

  # An address-space limit (ulimit -v) is part of the memory budget: a mesh
  # that cannot fit under it is refused up front with the estimate; and an
  # allocation that fails anyway (the budget overridden here) is exit 2 with
  # the reason, not Kokkos' exit 1. AddressSanitizer needs terabytes of
  # address space for its shadow memory, so its build skips them.
  if(NOT KPMAP_ENABLE_SANITIZERS)
    kpmap_add_mpi_test(NAME apps.kpmap-heat.address_space_budget COMMAND kpmap-heat ${heat_args}
      "--set=mesh.cells=[10000,10000]" --output ${FAULT_OUT}/address_space RANKS 1 3 TIMEOUT 60
      LABELS apps reliability
      WRAPPER ${EXPECT_FAILURE} --within 20 --exit-code 2 --address-space 1500000
              --expect "left under this process's address-space limit (ulimit -v, RLIMIT_AS)" --)
    kpmap_add_mpi_test(NAME apps.kpmap-heat.allocation_fails COMMAND kpmap-heat ${heat_args}
      "--set=mesh.cells=[10000,10000]" --output ${FAULT_OUT}/allocation RANKS 1 3 TIMEOUT 60
      LABELS apps reliability
      WRAPPER ${EXPECT_FAILURE} --within 20 --exit-code 2 --address-space 1500000
              --env KPMAP_MEMORY_LIMIT=1T
              --expect "out of memory: " --expect "use more ranks or a smaller problem" --)
    # A checkpoint past the file size limit (ulimit -f) fails with that reason
    # (the rank is not killed by SIGXFSZ), and the run ends with exit 1.
    # (8 MiB: the launcher's own files fit; the checkpoint of a million cells,
    # 16 MB, does not. A million cells take minutes under the sanitizers.)
    kpmap_add_mpi_test(NAME apps.kpmap-heat.file_size_limit COMMAND kpmap-heat ${heat_args}
      "--set=mesh.cells=[1000,1000]" --set solver.eps=1e-3 --set output.checkpoint_every=1
      --output ${FAULT_OUT}/file_size RANKS 1 3 TIMEOUT 90 LABELS apps reliability
      WRAPPER ${EXPECT_FAILURE} --within 60 --exit-code 1 --file-size 8192
              --expect "file size limit (ulimit -f: 8388608 bytes)" --)
  endif()
  # A process grid that does not fit the job names the deck's key; a check
  # interval above the iteration limit is refused up front; a control
  # character in --output is named as --output; a dangling link as the
  # output folder is named as a link.
  kpmap_add_mpi_test(NAME apps.kpmap-heat.ranks_do_not_fit COMMAND kpmap-heat ${heat_args}
    "--set=mesh.ranks=[5, 1]" --output ${FAULT_OUT}/bad RANKS 3 TIMEOUT 60
    LABELS apps reliability WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
    "--expect=--set mesh.ranks=[5, 1]: key 'mesh.ranks': a process grid of 5 blocks does not fit 3 ranks" --)
  kpmap_add_mpi_test(NAME apps.kpmap-heat.check_every_above_max_iters COMMAND kpmap-heat
    ${heat_args} --set solver.method=chebyshev --set solver.check_every=500
    --set solver.max_iters=100
    --output ${FAULT_OUT}/bad RANKS 1 LABELS apps reliability
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
    "--expect=key 'solver.check_every': 500 is above solver.max_iters (100)" --)
  # A tolerance of 0, given or underflowed from TeaLeaf's 1d-400, is never
  # met: refused up front, naming the key, rather than iterating to the
  # limit and ending unconverged (exit 3).
  kpmap_add_mpi_test(NAME apps.kpmap-heat.halo_deeper_than_blocks COMMAND kpmap-heat ${heat_args}
    --set mesh.halo_depth=8 "--set=mesh.cells=[6, 6]" "--set=mesh.ranks=[3, 1]"
    --output ${FAULT_OUT}/bad RANKS 3 TIMEOUT 60 LABELS apps reliability
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
    "--expect=--set mesh.halo_depth=8: key 'mesh.halo_depth': 8 is deeper than the thinnest block, 2 cells along x (6 cells over 3 ranks)" --)
  # A dense layer split by column into fewer units than the axis "model" has
  # ranks: every rank refuses it together, naming the key (one rank's error
  # alone left the others waiting in the next collective for ever).
  foreach(n 2 3)
    kpmap_add_mpi_test(NAME apps.kpmap-train.column_split_leaves_a_rank_none_${n}
      COMMAND kpmap-train ${INPUTS}/train_mlp_ci.toml --set model.tensor_parallel=auto
      "--set=model.hidden=[1, 8]" --set train.mesh.model=${n} --output ${FAULT_OUT}/bad_split
      RANKS ${n} TIMEOUT 60 LABELS apps reliability
      WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2 "--expect=key 'model.hidden'"
              "--expect=1 units split by column over ${n} ranks of axis 'model' leave a rank none; give the layer at least ${n} units" --)
  endforeach()
  # Tensor-parallel layers pair (column, elementwise layers, row) on every
  # mesh, one rank too: any other layout is another model on each mesh (a
  # row layer alone grows with the axis), refused naming the layer's key.
  set(tp_deck ${CMAKE_CURRENT_SOURCE_DIR}/decks/mlp_tensor_parallel.toml)
  kpmap_add_mpi_test(NAME apps.kpmap-train.column_without_row COMMAND kpmap-train ${tp_deck}
    --set model.layers.3.parallel=\"none\" --output ${FAULT_OUT}/bad_split RANKS 1 3 TIMEOUT 60
    LABELS apps reliability WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
    "--expect=mlp_tensor_parallel.toml:9: key 'model.layers.1.parallel': layer 1 is split by column, and layer 3 (dense) is not elementwise" --)
  kpmap_add_mpi_test(NAME apps.kpmap-train.row_without_column COMMAND kpmap-train ${tp_deck}
    --set model.layers.1.parallel=\"none\" --output ${FAULT_OUT}/bad_split RANKS 1 3 TIMEOUT 60
    LABELS apps reliability WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
    "--expect=mlp_tensor_parallel.toml:11: key 'model.layers.3.parallel': layer 3 (dense) is split by row" --)
  kpmap_add_mpi_test(NAME apps.kpmap-train.two_columns COMMAND kpmap-train ${tp_deck}
    --set model.layers.3.parallel=\"column\" --output ${FAULT_OUT}/bad_split RANKS 1 3 TIMEOUT 60
    LABELS apps reliability WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
    "--expect=key 'model.layers.1.parallel': layer 1 is split by column, and layer 3 (dense) is split by column too" --)
  # An end time beyond any count of steps (1e300 s at dt 0.004) ends at the
  # deck's end_step: no step count overflows (it printed "steps to -9223...").
  kpmap_add_mpi_test(NAME apps.kpmap-heat.end_time_beyond_steps COMMAND kpmap-heat
    ${INPUTS}/heat2d_ci.toml --set time.end_time=1e300 --set output.progress_every=1
    --output ${FAULT_OUT}/end_time_beyond_steps RANKS 1 3 TIMEOUT 60 LABELS apps reliability
    WRAPPER ${EXPECT_EXIT} --exit-code 0 "--expect=steps to 6" "--expect=step 6/6"
            --reject=-92233 --)
  kpmap_add_mpi_test(NAME apps.kpmap-heat.zero_eps COMMAND kpmap-heat ${heat_args}
    --set solver.eps=0.0 --output ${FAULT_OUT}/bad RANKS 1 3 TIMEOUT 60
    LABELS apps reliability WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
    "--expect=key 'solver.eps': 0 is a tolerance no solve reaches" --)
  # Every TeaLeaf key is used or refused, naming the line: a circle's xmax,
  # ymax were dropped without a word, and a state's zmin, zmax on a 2-D mesh
  # made the run 3-D with TeaLeaf's default z extent.
  kpmap_add_mpi_test(NAME apps.kpmap-heat.tea_circle_upper COMMAND kpmap-heat
    ${CMAKE_CURRENT_SOURCE_DIR}/decks/tea_circle_upper.in --output ${FAULT_OUT}/bad RANKS 1 3
    TIMEOUT 60 LABELS apps reliability WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
    "--expect=tea_circle_upper.in:5: key 'state 3 xmax/ymax' (states.3.upper): states.3.geometry = \"circle\" reads no states.3.upper" --)
  kpmap_add_mpi_test(NAME apps.kpmap-heat.tea_state_in_z COMMAND kpmap-heat
    ${CMAKE_CURRENT_SOURCE_DIR}/decks/tea_state_in_z.in --output ${FAULT_OUT}/bad RANKS 1 3
    TIMEOUT 60 LABELS apps reliability WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
    "--expect=tea_state_in_z.in:5: key 'state 3 zmin': it bounds the state in z, and the mesh is 2-D" --)
  # Names that are no UTF-8: a deck so named runs (the name is only echoed);
  # an output folder so named is refused by every rank together, naming
  # --output or the key (one rank's MPI_Abort had ended the job).
  add_test(NAME apps.non_utf8_names
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_names.py
            --launcher ${LAUNCHER} --train $<TARGET_FILE:kpmap-train>
            --heat $<TARGET_FILE:kpmap-heat> --train-deck ${INPUTS}/train_linear_ci.toml
            --tea-deck ${INPUTS}/tea_bm_1.in --work ${FAULT_OUT}/non_utf8_names)
  set_tests_properties(apps.non_utf8_names PROPERTIES LABELS "apps;reliability" PROCESSORS 2
    TIMEOUT 300 ENVIRONMENT "${KPMAP_MPI_TEST_ENVIRONMENT}")
  kpmap_add_mpi_test(NAME apps.kpmap-heat.tea_eps_underflow COMMAND kpmap-heat
    ${CMAKE_CURRENT_SOURCE_DIR}/decks/tea_eps_underflow.in --output ${FAULT_OUT}/bad RANKS 1 3
    TIMEOUT 60 LABELS apps reliability WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
    "--expect=tea_eps_underflow.in:14: key 'tl_eps' (solver.eps): 0 is a tolerance" --)
  kpmap_add_mpi_test(NAME apps.kpmap-train.output_control_character COMMAND kpmap-train
    ${INPUTS}/train_linear_ci.toml --output "out\nput" RANKS 1 3 TIMEOUT 60
    LABELS apps reliability WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
    --expect "--output: a control character (U+000A) in the path at position 3" --)
  kpmap_add_mpi_test(NAME apps.kpmap-heat.output_dir_control_character COMMAND kpmap-heat
    ${heat_args} "--set=output.dir=\"${FAULT_OUT}/D33\\nx\"" RANKS 1 3 TIMEOUT 60
    LABELS apps reliability WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
    --expect "key 'output.dir': a control character (U+000A) in the path at position" --)
  kpmap_add_mpi_test(NAME apps.kpmap-train.output_dangling_link COMMAND kpmap-train
    ${INPUTS}/train_linear_ci.toml --output ${FAULT_OUT}/dangling/out RANKS 1 3 TIMEOUT 60
    LABELS apps reliability WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
    --symlink ${FAULT_OUT}/dangling/out:${FAULT_OUT}/dangling/nowhere
    --expect "out': it is a symbolic link to ${FAULT_OUT}/dangling/nowhere, which does not exist" --)
  # A run bigger than the memory its ranks may use is refused before it
  # allocates, with the estimate and the limit (exit code 2) ... Which rank
  # speaks depends on each rank's reading of MemAvailable, so none is expected.
  # A field of rank 0's block: rows of 66667 cells, 2 ghosts and 7 + 4 cells
  # that align them (grid/layout.hpp, Rows::aligned), 66680 doubles, x 200002
  # rows: 99.4 GiB.
  kpmap_add_mpi_test(NAME apps.kpmap-heat.too_big COMMAND kpmap-heat ${heat_args}
    --set mesh.cells=[200000,200000] --output ${FAULT_OUT}/bad RANKS 3 TIMEOUT 60
    LABELS apps reliability
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
            --expect "needs about 994 GiB on rank " --expect "(9 fields of 99.4 GiB"
            --expect "it may use" --)
  kpmap_add_mpi_test(NAME apps.kpmap-train.too_big COMMAND kpmap-train ${train_args}
    --set data.samples=100000000000 --set data.features=1000 --output ${FAULT_OUT}/bad_train RANKS 3
    TIMEOUT 60 LABELS apps reliability
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
            --expect "train_sgd_ci.toml (100000000000 samples of 1000 features) needs about 243 TiB on rank "
            --expect "it may use" --)
  # ... also against a limit set by hand: on 3 ranks the CI deck's 32 x 24
  # mesh needs, on the widest block (11 x 24 cells, 13 x 26 with ghosts),
  # 9 fields (24336 B) and the staging of one field's cells (2112 B): 25.8 KiB.
  kpmap_add_mpi_test(NAME apps.kpmap-heat.memory_limit COMMAND kpmap-heat ${heat_args}
    --output ${FAULT_OUT}/bad RANKS 3 TIMEOUT 60 LABELS apps reliability
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2 --env KPMAP_MEMORY_LIMIT=20K
            --expect "needs about 25.8 KiB on rank 0"
            --expect "more than the 20 KiB it may use (KPMAP_MEMORY_LIMIT=20K per rank)" --)

  # Stop signals: the run ends with exit code 4 after a checkpoint, and a
  # restart from it ends exactly where the uninterrupted run does.
  set(heat_keys --key step --key time --key u --key energy --key mass)
  set(train_keys --key params.w --key params.b --key train_loss)
  # A run stopped by an outside signal is given a far end, so that however
  # late the signal lands on a loaded machine, it lands before the end.
  set(heat_no_end --stop-set time.end_step=10000000 --stop-set time.end_time=1e9
    --stop-set output.progress_every=1)
  set(train_no_end --stop-set train.epochs=10000000 --stop-set output.progress_every=1)
  add_test(NAME apps.kpmap-heat.stop_injected
    COMMAND ${STOP_CHECK} --app $<TARGET_FILE:kpmap-heat> --deck ${INPUTS}/heat2d_ci.toml
            --ranks 3 --inject 1:3 ${heat_keys}
            --work ${FAULT_OUT}/heat_stop_injected)
  # SIGUSR1 to the launcher (which forwards it to every rank) ...
  add_test(NAME apps.kpmap-heat.stop_usr1
    COMMAND ${STOP_CHECK} --app $<TARGET_FILE:kpmap-heat> --deck ${INPUTS}/heat2d_ci.toml
            --set time.end_step=100 --set time.end_time=100 ${heat_no_end} --ranks 2 --signal USR1
            --to launcher --after "^step 5/" ${heat_keys}
            --work ${FAULT_OUT}/heat_stop_usr1)
  # ... or SIGTERM to one rank only, as a scheduler's signal that reaches one
  # process: every rank stops at the same step. The restart runs on 2 ranks.
  add_test(NAME apps.kpmap-heat.stop_term_one_rank
    COMMAND ${STOP_CHECK} --app $<TARGET_FILE:kpmap-heat> --deck ${INPUTS}/heat2d_ci.toml
            --set time.end_step=100 --set time.end_time=100 ${heat_no_end} --ranks 3 --restart-ranks 2
            --rtol 1e-12 --signal TERM --to rank --after "^step 5/"
            ${heat_keys} --work ${FAULT_OUT}/heat_stop_term)
  # The same for pipelined CG, whose state between steps is only x.
  add_test(NAME apps.kpmap-heat.stop_usr1_pipecg
    COMMAND ${STOP_CHECK} --app $<TARGET_FILE:kpmap-heat> --deck ${INPUTS}/heat2d_ci.toml
            --set time.end_step=100 --set time.end_time=100 --set "solver.method=\"pipecg\""
            ${heat_no_end} --ranks 2 --signal USR1 --to launcher --after "^step 5/" ${heat_keys}
            --work ${FAULT_OUT}/heat_stop_usr1_pipecg)
  add_test(NAME apps.kpmap-heat.stop_term_one_rank_pipecg
    COMMAND ${STOP_CHECK} --app $<TARGET_FILE:kpmap-heat> --deck ${INPUTS}/heat2d_ci.toml
            --set time.end_step=100 --set time.end_time=100 --set "solver.method=\"pipecg\""
            ${heat_no_end} --ranks 3 --restart-ranks 2 --rtol 1e-12 --signal TERM --to rank
            --after "^step 5/" ${heat_keys} --work ${FAULT_OUT}/heat_stop_term_pipecg)
  # kpmap-train stops mid-epoch (step 7 of 10 in epoch 1) and at an epoch's end.
  add_test(NAME apps.kpmap-train.stop_mid_epoch
    COMMAND ${STOP_CHECK} --app $<TARGET_FILE:kpmap-train> --deck ${INPUTS}/train_sgd_ci.toml
            --ranks 3 --inject 2:7 ${train_keys}
            --work ${FAULT_OUT}/train_stop_mid)
  set_tests_properties(apps.kpmap-train.stop_mid_epoch PROPERTIES FIXTURES_SETUP train_stop_mid)
  # A checkpoint written before the position had typed attributes (its
  # rng_state text "train.seed=3 epoch=0 batch=7 optimizer_steps=7", stopped at
  # step 7 of epoch 1 on 1 rank; kept in tests/data) still restarts, and ends
  # where an uninterrupted run of today's code ends, bit for bit.
  add_test(NAME apps.kpmap-train.restart_position_as_text
    COMMAND ${STOP_CHECK} --app $<TARGET_FILE:kpmap-train> --deck ${INPUTS}/train_sgd_ci.toml
            --ranks 1 --given ${CMAKE_CURRENT_SOURCE_DIR}/data/train_sgd_ci_position_as_text.h5
            ${train_keys} --work ${FAULT_OUT}/train_position_as_text)
  set_tests_properties(apps.kpmap-train.restart_position_as_text PROPERTIES
    LABELS "apps;reliability;checkpoint" TIMEOUT 120 ENVIRONMENT "${KPMAP_MPI_TEST_ENVIRONMENT}")
  # A mid-epoch checkpoint with a deck whose epoch has fewer steps is refused.
  kpmap_add_mpi_test(NAME apps.kpmap-train.restart_mid_epoch_other_batch COMMAND kpmap-train
    ${INPUTS}/train_sgd_ci.toml --set train.batch_size=64 --output ${FAULT_OUT}/bad_train
    --restart ${FAULT_OUT}/train_stop_mid/stopped/checkpoint_000000_000007.h5 RANKS 2 TIMEOUT 60
    LABELS apps reliability WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
    --expect "stopped after step 7 of epoch 1, but this deck's epoch has 5 steps" --)
  set_tests_properties(apps.kpmap-train.restart_mid_epoch_other_batch.np2 PROPERTIES
    FIXTURES_REQUIRED train_stop_mid)
  add_test(NAME apps.kpmap-train.stop_epoch_end
    COMMAND ${STOP_CHECK} --app $<TARGET_FILE:kpmap-train> --deck ${INPUTS}/train_sgd_ci.toml
            --ranks 2 --inject 0:20 ${train_keys}
            --work ${FAULT_OUT}/train_stop_end)
  add_test(NAME apps.kpmap-train.stop_int_one_rank
    COMMAND ${STOP_CHECK} --app $<TARGET_FILE:kpmap-train> --deck ${INPUTS}/train_sgd_ci.toml
            --set train.epochs=2000 ${train_no_end} --ranks 3 --signal INT --to rank --after "^epoch 3/"
            ${train_keys} --work ${FAULT_OUT}/train_stop_int)
  set_tests_properties(apps.kpmap-heat.stop_injected apps.kpmap-heat.stop_usr1
    apps.kpmap-heat.stop_term_one_rank apps.kpmap-heat.stop_usr1_pipecg
    apps.kpmap-heat.stop_term_one_rank_pipecg apps.kpmap-train.stop_mid_epoch
    apps.kpmap-train.stop_epoch_end apps.kpmap-train.stop_int_one_rank PROPERTIES
    LABELS "apps;reliability;mpi" PROCESSORS 2 TIMEOUT 180
    ENVIRONMENT "${KPMAP_MPI_TEST_ENVIRONMENT}")
endif()
