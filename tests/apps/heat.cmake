# SPDX-License-Identifier: BSD-3-Clause
# kpmap-heat's whole-program tests: TeaLeaf's decks and answers, its own decks,
# outputs and command line (included by tests/CMakeLists.txt).

if(KPMAP_ENABLE_APPS)
  # ---- kpmap-heat --------------------------------------------------------------
  set(HEAT_CHECK ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_heat.py)
  set(HEAT_OUT ${CMAKE_CURRENT_BINARY_DIR}/heat)
  set(HEAT_INPUTS ${PROJECT_SOURCE_DIR}/inputs)
  list(JOIN MPIEXEC_PREFLAGS " " heat_preflags)
  set(HEAT_LAUNCHER "${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} {n} ${heat_preflags}")
  # TeaLeaf's own benchmark deck reproduces TeaLeaf's published U (its 0.001 %).
  kpmap_add_mpi_test(NAME apps.kpmap-heat.tea_bm_1 COMMAND kpmap-heat ${HEAT_INPUTS}/tea_bm_1.in
    --output ${HEAT_OUT}/tea_bm_1_np{np} LABELS apps EXPECT_OUTPUT
    "This test is considered PASSED")
  # TeaLeaf3D's benchmark 1 (10 x 10 x 10); the deck has its test_problem commented out.
  kpmap_add_mpi_test(NAME apps.kpmap-heat.tea3d_bm_1 COMMAND kpmap-heat
    ${HEAT_INPUTS}/tea3d_bm_1.in --set test_problem=1 --output ${HEAT_OUT}/tea3d_bm_1_np{np} RANKS 1 3
    LABELS apps EXPECT_OUTPUT "This test is considered PASSED")
  # Pipelined CG, single-reduction CG and CG in one pass give TeaLeaf's
  # published U at eps 1e-15 on a 2-D deck of 2237 CG iterations (bm_2,
  # 250 x 250: where pipecg's residual replacement is needed) and on 3-D
  # bm_4, with each preconditioner, at every rank count, within 5 % of CG's
  # iterations (CG at 2 ranks the reference).
  foreach(case tea_bm_2:2:none tea_bm_2:2:jac_diag tea_bm_2:2:jac_block tea3d_bm_4:4:none
               tea3d_bm_4:4:jac_diag tea3d_bm_4:4:jac_block)
    string(REPLACE ":" ";" parts ${case})
    list(GET parts 0 deck)
    list(GET parts 1 problem)
    list(GET parts 2 pc)
    set(tag ${deck}_${pc})
    set(common ${HEAT_INPUTS}/${deck}.in --set test_problem=${problem}
        --set solver.preconditioner=${pc})
    kpmap_add_mpi_test(NAME apps.kpmap-heat.${tag}_cg COMMAND kpmap-heat ${common}
      --output ${HEAT_OUT}/${tag}_cg RANKS 2 LABELS apps
      EXPECT_OUTPUT "This test is considered PASSED")
    set_tests_properties(apps.kpmap-heat.${tag}_cg.np2 PROPERTIES FIXTURES_SETUP heat_${tag})
    foreach(method pipecg cgsr fusedcg)
      set(results ${HEAT_OUT}/${tag}_cg/result.json)
      foreach(n IN LISTS KPMAP_TEST_RANKS)
        kpmap_add_mpi_test(NAME apps.kpmap-heat.${tag}_${method} COMMAND kpmap-heat ${common}
          --set solver.method=${method} --output ${HEAT_OUT}/${tag}_${method}_np${n} RANKS ${n}
          LABELS apps EXPECT_OUTPUT "This test is considered PASSED")
        set_tests_properties(apps.kpmap-heat.${tag}_${method}.np${n} PROPERTIES
          FIXTURES_SETUP heat_${tag})
        list(APPEND results ${HEAT_OUT}/${tag}_${method}_np${n}/result.json)
      endforeach()
      add_test(NAME apps.kpmap-heat.${tag}.${method}_as_cg
               COMMAND ${HEAT_CHECK} compare ${results} --rtol 1e-9 --iterations-within 0.05)
      set_tests_properties(apps.kpmap-heat.${tag}.${method}_as_cg PROPERTIES
        LABELS apps FIXTURES_REQUIRED heat_${tag})
    endforeach()
  endforeach()
  # The same summary at every rank count (2-D and 3-D), and checkpoints read
  # back with h5py give the same summary.
  foreach(deck heat2d_ci heat3d_ci heat_explicit_ci)
    set(results "")
    foreach(n IN LISTS KPMAP_TEST_RANKS)
      kpmap_add_mpi_test(NAME apps.kpmap-heat.${deck} COMMAND kpmap-heat
        ${HEAT_INPUTS}/${deck}.toml --output ${HEAT_OUT}/${deck}_np${n} RANKS ${n} LABELS apps)
      set_tests_properties(apps.kpmap-heat.${deck}.np${n} PROPERTIES FIXTURES_SETUP heat_${deck})
      list(APPEND results ${HEAT_OUT}/${deck}_np${n}/result.json)
    endforeach()
    add_test(NAME apps.kpmap-heat.${deck}.same_at_any_rank_count
             COMMAND ${HEAT_CHECK} compare ${results} --rtol 1e-12)
    set_tests_properties(apps.kpmap-heat.${deck}.same_at_any_rank_count PROPERTIES
      LABELS apps FIXTURES_REQUIRED heat_${deck})
  endforeach()
  list(GET KPMAP_TEST_RANKS -1 heat_last)
  add_test(NAME apps.kpmap-heat.checkpoint_h5py
    COMMAND ${HEAT_CHECK} checkpoint ${HEAT_OUT}/heat2d_ci_np${heat_last}/checkpoint_000006.h5
            ${HEAT_OUT}/heat2d_ci_np${heat_last}/result.json)
  add_test(NAME apps.kpmap-heat.checkpoint_h5py_3d
    COMMAND ${HEAT_CHECK} checkpoint ${HEAT_OUT}/heat3d_ci_np${heat_last}/checkpoint_000004.h5
            ${HEAT_OUT}/heat3d_ci_np${heat_last}/result.json)
  set_tests_properties(apps.kpmap-heat.checkpoint_h5py PROPERTIES LABELS apps
    FIXTURES_REQUIRED heat_heat2d_ci)
  set_tests_properties(apps.kpmap-heat.checkpoint_h5py_3d PROPERTIES LABELS apps
    FIXTURES_REQUIRED heat_heat3d_ci)
  # The start lines name the BLAS's kernels and, where they are narrower
  # than the CPU's, say what to set.
  kpmap_add_mpi_test(NAME apps.kpmap-heat.blas_line COMMAND kpmap-heat
    ${HEAT_INPUTS}/heat2d_ci.toml --output ${HEAT_OUT}/blas_line RANKS 1 LABELS apps
    ENVIRONMENT OPENBLAS_CORETYPE=Prescott
    EXPECT_OUTPUT "kpmap-heat: BLAS: OpenBLAS [0-9.]+, kernels Prescott .*kpmap-heat: CPU: .*kpmap-heat: note: OPENBLAS_CORETYPE=Prescott runs narrower")
  # Field dumps for ParaView: every 2 steps, each conserving the energy.
  kpmap_add_mpi_test(NAME apps.kpmap-heat.fields COMMAND kpmap-heat ${HEAT_INPUTS}/heat2d_ci.toml
    --set output.fields_every=2 --output ${HEAT_OUT}/fields RANKS 3 LABELS apps)
  set_tests_properties(apps.kpmap-heat.fields.np3 PROPERTIES FIXTURES_SETUP heat_fields)
  add_test(NAME apps.kpmap-heat.fields_h5py COMMAND ${HEAT_CHECK} fields ${HEAT_OUT}/fields)
  set_tests_properties(apps.kpmap-heat.fields_h5py PROPERTIES LABELS apps
    FIXTURES_REQUIRED heat_fields)
  # Restarts: 10 steps + restart + 10 = 20 steps, bit for bit at the same rank
  # count (CG, and PPCG whose eigenvalue estimates the checkpoint carries) ...
  add_test(NAME apps.kpmap-heat.restart_same_ranks
    COMMAND ${HEAT_CHECK} restart --launcher ${HEAT_LAUNCHER} --app $<TARGET_FILE:kpmap-heat>
            --deck ${HEAT_INPUTS}/heat2d_ci.toml --ranks 2 --restart-ranks 2 --steps 20 --split 10
            --work ${HEAT_OUT}/restart_cg)
  add_test(NAME apps.kpmap-heat.restart_same_ranks_ppcg
    COMMAND ${HEAT_CHECK} restart --launcher ${HEAT_LAUNCHER} --app $<TARGET_FILE:kpmap-heat>
            --deck ${HEAT_INPUTS}/heat3d_ci.toml --ranks 3 --restart-ranks 3 --steps 8 --split 4
            --set solver.method=ppcg --set solver.eps=1e-12 --work ${HEAT_OUT}/restart_ppcg)
  # ... and to 1e-12 on another rank count.
  add_test(NAME apps.kpmap-heat.restart_other_ranks
    COMMAND ${HEAT_CHECK} restart --launcher ${HEAT_LAUNCHER} --app $<TARGET_FILE:kpmap-heat>
            --deck ${HEAT_INPUTS}/heat2d_ci.toml --ranks 2 --restart-ranks 3 --steps 20 --split 10
            --rtol 1e-12 --work ${HEAT_OUT}/restart_other)
  set_tests_properties(apps.kpmap-heat.restart_same_ranks apps.kpmap-heat.restart_same_ranks_ppcg
    apps.kpmap-heat.restart_other_ranks PROPERTIES
    LABELS apps PROCESSORS 2 TIMEOUT 300 ENVIRONMENT "${KPMAP_MPI_TEST_ENVIRONMENT}")
  # What both apps leave behind, pinned: the result file's keys and value
  # types, the CSV columns and rows, the folder's files, the exit codes.
  add_test(NAME apps.outputs.heat
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_outputs.py heat
            --launcher ${HEAT_LAUNCHER} --app $<TARGET_FILE:kpmap-heat> --inputs ${HEAT_INPUTS}
            --workdir ${HEAT_OUT}/outputs)
  add_test(NAME apps.outputs.train
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_outputs.py train
            --launcher ${HEAT_LAUNCHER} --app $<TARGET_FILE:kpmap-train> --inputs ${HEAT_INPUTS}
            --workdir ${CMAKE_CURRENT_BINARY_DIR}/train/outputs)
  set_tests_properties(apps.outputs.heat apps.outputs.train PROPERTIES
    LABELS apps PROCESSORS 2 TIMEOUT 300 ENVIRONMENT "${KPMAP_MPI_TEST_ENVIRONMENT}")
  # Bad input: exit code 2, with the file, line and key named; one rank's
  # view of the error ends the whole job.
  kpmap_add_mpi_test(NAME apps.kpmap-heat.bad_tea_key COMMAND kpmap-heat
    ${CMAKE_CURRENT_SOURCE_DIR}/decks/bad_key.in --output ${HEAT_OUT}/bad RANKS 3 TIMEOUT 60
    LABELS apps WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
    --expect "bad_key.in:9: unknown TeaLeaf key 'tl_use_gc'; did you mean 'tl_use_cg'?" --)
  kpmap_add_mpi_test(NAME apps.kpmap-heat.bad_toml_value COMMAND kpmap-heat
    ${CMAKE_CURRENT_SOURCE_DIR}/decks/bad_value.toml --output ${HEAT_OUT}/bad RANKS 3 TIMEOUT 60
    LABELS apps WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
    --expect "bad_value.toml:9:11: key 'states.2.density' is out of range" --)
  kpmap_add_mpi_test(NAME apps.kpmap-heat.bad_set COMMAND kpmap-heat
    ${HEAT_INPUTS}/tea_bm_1.in --set solver.method=gmres --output ${HEAT_OUT}/bad RANKS 2
    TIMEOUT 60 LABELS apps WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
    "--expect=--set solver.method=gmres: key 'solver.method': must be one of" --)
  kpmap_add_mpi_test(NAME apps.kpmap-heat.unstable_explicit COMMAND kpmap-heat
    ${HEAT_INPUTS}/heat_explicit_ci.toml --set time.dt=0.001 --output ${HEAT_OUT}/bad RANKS 3
    TIMEOUT 60 LABELS apps WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
    --expect "exceeds the stability limit 2.441406e-04 s of the explicit (FTCS) scheme" --)
  kpmap_add_mpi_test(NAME apps.kpmap-heat.too_many_ranks COMMAND kpmap-heat
    ${HEAT_INPUTS}/tea_bm_1.in --set mesh.ranks=[3,1] --output ${HEAT_OUT}/bad RANKS 2
    TIMEOUT 60 LABELS apps WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
    --expect "does not fit 2 ranks" --)
  # A checkpoint of another mesh is refused by name.
  kpmap_add_mpi_test(NAME apps.kpmap-heat.restart_wrong_mesh COMMAND kpmap-heat
    ${HEAT_INPUTS}/heat2d_ci.toml --set mesh.cells=[16,16] --output ${HEAT_OUT}/bad
    --restart ${HEAT_OUT}/heat2d_ci_np${heat_last}/checkpoint_000006.h5 RANKS 2 TIMEOUT 60 LABELS apps
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
    --expect "--set mesh.cells=[16,16]: key 'mesh.cells' is [16, 16] here and [32, 24] in the checkpoint" --)
  set_tests_properties(apps.kpmap-heat.restart_wrong_mesh.np2 PROPERTIES
    FIXTURES_REQUIRED heat_heat2d_ci)
  # A check across keys of a TeaLeaf deck names the TeaLeaf key and its line.
  kpmap_add_mpi_test(NAME apps.kpmap-heat.tea_cross_check COMMAND kpmap-heat
    ${HEAT_INPUTS}/tea_bm_1.in --set ymin=20 --output ${HEAT_OUT}/bad RANKS 1 3
    TIMEOUT 60 LABELS apps reliability WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
    --expect "tea_bm_1.in:13: key 'ymax' (mesh.upper[1]): must exceed the lower corner (mesh.lower) in every dimension; dimension 1 has lower 20 and upper 10" --)
  # A TeaLeaf test problem whose answer fails its check (here: stopped at step
  # 5 of 10) finishes with exit code 5, not 0.
  kpmap_add_mpi_test(NAME apps.kpmap-heat.tea_check_fails COMMAND kpmap-heat
    ${HEAT_INPUTS}/tea_bm_1.in --set end_step=5 --output ${HEAT_OUT}/tea_check RANKS 1 3
    TIMEOUT 60 LABELS apps reliability WRAPPER ${EXPECT_FAILURE} --within 20 --exit-code 5
    --expect "This test is considered FAILED" --)
  # A solve that cannot converge in max_iters: exit code 3, naming the step.
  kpmap_add_mpi_test(NAME apps.kpmap-heat.no_convergence COMMAND kpmap-heat
    ${HEAT_INPUTS}/tea_bm_1.in --set tl_max_iters=5 --output ${HEAT_OUT}/bad RANKS 3 TIMEOUT 60
    LABELS apps WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 3
    --expect "step 1: the linear solve failed: cg did not converge in 5 iterations" --)
  kpmap_add_output_test(NAME apps.kpmap-heat.help COMMAND kpmap-heat --help LABELS apps
    EXPECT "mpiexec -n 4 kpmap-heat inputs/heat2d.toml")
  kpmap_add_output_test(NAME apps.kpmap-heat.help_exit_codes COMMAND kpmap-heat --help
    LABELS apps EXPECT "SIGUSR1 after writing a checkpoint, 5 a TeaLeaf test problem's answer")
  kpmap_add_output_test(NAME apps.kpmap-heat.help_deck COMMAND kpmap-heat --help-deck
    LABELS apps EXPECT "states.#.density")
  add_test(NAME docs.decks.kpmap-heat
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_deck_docs.py
            $<TARGET_FILE:kpmap-heat> ${PROJECT_SOURCE_DIR}/docs/decks.md)
  set_tests_properties(docs.decks.kpmap-heat PROPERTIES LABELS docs
    ENVIRONMENT "${KPMAP_MPI_TEST_ENVIRONMENT}")
  # Pipelined CG with jac_block on the grids where it once broke down (1 rank,
  # 128 x 64: p.Ap = -8.4e-28) or stalled (2 and 4 ranks, 128 x 128: error 4e-2
  # after 10000 iterations): it converges, and ends where CG with jac_block
  # does on the same ranks (the summaries within 1e-9).
  foreach(point "1;128,64" "2;128,128" "4;128,128")
    list(GET point 0 n)
    list(GET point 1 cells)
    string(REPLACE "," "x" shape ${cells})
    set(shape ${shape}_on${n})
    set(pj_results)
    foreach(method cg pipecg)
      set(name apps.kpmap-heat.jac_block_${shape}_${method})
      kpmap_add_mpi_test(NAME ${name} COMMAND kpmap-heat ${HEAT_INPUTS}/heat2d_ci.toml
        --set "solver.method=\"${method}\"" --set "solver.preconditioner=\"jac_block\""
        --set "mesh.cells=[${cells}]" --set solver.max_iters=10000
        --output ${HEAT_OUT}/jac_block_${shape}_${method} RANKS ${n} LABELS apps
        EXPECT_OUTPUT "iterations in 6 steps")
      set_tests_properties(${name}.np${n} PROPERTIES FIXTURES_SETUP heat_jac_block_${shape})
      list(APPEND pj_results ${HEAT_OUT}/jac_block_${shape}_${method}/result.json)
    endforeach()
    add_test(NAME apps.kpmap-heat.jac_block_${shape}.pipecg_as_cg
             COMMAND ${HEAT_CHECK} compare ${pj_results} --rtol 1e-9)
    set_tests_properties(apps.kpmap-heat.jac_block_${shape}.pipecg_as_cg PROPERTIES
      LABELS apps FIXTURES_REQUIRED heat_jac_block_${shape})
  endforeach()
endif()
