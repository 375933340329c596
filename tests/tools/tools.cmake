# SPDX-License-Identifier: BSD-3-Clause
# Kokkos Tools: the regions and labels a tool sees, the counted kernels, the
# trace and the phase table (included by tests/CMakeLists.txt).

# ---- Kokkos Tools: the regions and labels a tool sees --------------------------
# A tool of the tests' own (tests/support/region_tool.cpp) records every region,
# kernel and fence; a heat step and a training step must open the documented,
# properly nested regions, and every kernel inside them carries a kpmap:: label.
if(TARGET kpmap-heat AND TARGET kpmap-train)
kpmap_add_mpi_test(NAME tools.regions_heat COMMAND kpmap-heat ${HEAT_INPUTS}/tea_bm_1.in
  --output ${CMAKE_CURRENT_BINARY_DIR}/tools/heat RANKS 2 TIMEOUT 120
  LABELS tools
  WRAPPER ${CHECK_REGIONS} --out ${CMAKE_CURRENT_BINARY_DIR}/tools/heat_regions --ranks 2
    "--require=kpmap::sim::step>kpmap::sim::solve"
    "--require=kpmap::sim::solve>kpmap::sim::cg::iteration"
    "--require=kpmap::sim::cg::iteration>kpmap::psum*"
    "--require=kpmap::sim::cg::iteration>kpmap::HaloExchange::start"
    "--require=kpmap::checkpoint>kpmap::checkpoint::write"
    --labelled kpmap::sim::step --)
kpmap_add_mpi_test(NAME tools.regions_train COMMAND kpmap-train ${INPUTS}/cnn_images_ci.toml
  --set train.epochs=1 --output ${CMAKE_CURRENT_BINARY_DIR}/tools/train RANKS 2 TIMEOUT 120
  LABELS tools
  WRAPPER ${CHECK_REGIONS} --out ${CMAKE_CURRENT_BINARY_DIR}/tools/train_regions --ranks 2
    "--require=kpmap::train::step>kpmap::train::forward"
    "--require=kpmap::train::step>kpmap::train::backward"
    "--require=kpmap::train::backward>kpmap::ipsum*"
    "--require=kpmap::train::step>kpmap::train::gradient_psum_wait"
    "--require=kpmap::train::step>kpmap::train::update"
    "--require=kpmap::checkpoint>kpmap::checkpoint::write"
    --labelled kpmap::train::step --)
  # The timeline: --trace on kpmap-heat, KPMAP_TRACE on kpmap-train (any kpmap
  # program), one Chrome trace with a process per rank.
  set(CHECK_TRACE ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_trace.py)
  foreach(n 1 3)  # each rank count its own files: ctest runs them side by side
    kpmap_add_mpi_test(NAME tools.trace_heat COMMAND kpmap-heat ${HEAT_INPUTS}/tea_bm_1.in
      --output ${CMAKE_CURRENT_BINARY_DIR}/tools/heat_trace_np${n}
      --trace ${CMAKE_CURRENT_BINARY_DIR}/tools/heat_trace_np${n}.json RANKS ${n} TIMEOUT 120
      LABELS tools
      WRAPPER ${CHECK_TRACE} --trace ${CMAKE_CURRENT_BINARY_DIR}/tools/heat_trace_np${n}.json
        --ranks ${n} --require kpmap::sim::step --require kpmap::sim::cg::iteration
        "--require=kpmap::psum*" --require kpmap::HaloExchange::start --)
  endforeach()
  # Pipelined CG's global sum moves on while the operator runs: the trace
  # marks the test between the operator's slabs that found it complete
  # (kpmap::sim::pipecg::sums_arrived, before the wait
  # kpmap::sim::pipecg::sum_wait of the same iteration), on the rank that was
  # late to start it (115 and 100 of 120 iterations over both ranks in two runs).
  # Only where launches complete before they return (host backends): with
  # device paths the operator's inner box is one kernel, with no test between
  # slabs, and the trace is checked for its regions alone.
  if(KPMAP_DEVICE_PATHS)
    set(pipecg_arrival)
  else()
    set(pipecg_arrival --arrived-before-wait kpmap::sim::pipecg)
  endif()
  kpmap_add_mpi_test(NAME tools.trace_heat_pipecg COMMAND kpmap-heat ${HEAT_INPUTS}/tea_bm_1.in
    "--set=solver.method=\"pipecg\"" --output ${CMAKE_CURRENT_BINARY_DIR}/tools/heat_trace_pipecg
    --trace ${CMAKE_CURRENT_BINARY_DIR}/tools/heat_trace_pipecg.json RANKS 2 TIMEOUT 120
    LABELS tools
    WRAPPER ${CHECK_TRACE} --trace ${CMAKE_CURRENT_BINARY_DIR}/tools/heat_trace_pipecg.json
      --ranks 2 --require kpmap::sim::pipecg::iteration "--require=kpmap::ipsum*"
      --require kpmap::sim::pipecg::sum_wait ${pipecg_arrival} --)
  kpmap_add_mpi_test(NAME tools.trace_train COMMAND kpmap-train ${INPUTS}/cnn_images_ci.toml
    --set train.epochs=1 --output ${CMAKE_CURRENT_BINARY_DIR}/tools/train_trace RANKS 2
    TIMEOUT 120 LABELS tools
    WRAPPER ${CHECK_TRACE} --env --trace ${CMAKE_CURRENT_BINARY_DIR}/tools/train_trace.json
      --ranks 2 --require kpmap::train::step --require kpmap::train::backward
      "--require=kpmap::ipsum*" --require kpmap::checkpoint --)
  # What one solver iteration costs in the steady state at 2 ranks, on a 2-D
  # TeaLeaf deck split in two (one neighbour each), counted by the same tool from
  # two run lengths (tests/scripts/check_counts.py): kernels, host
  # synchronisations (fences and reductions into host values), deep copies,
  # allocations and fences of every instance (global: none in a step). Each
  # name carries its bounds. A CG iteration's 3 syncs are the fence before MPI
  # sends p's faces and one read of each global sum (p.w, r.z); the local sums
  # land where the host reads them (pinned host memory on a GPU), so a build
  # with device paths copies only the faces it stages for MPI (out and back).
  if(KPMAP_DEVICE_PATHS)
    set(cg_copies 2)
    set(step_copies 2)
  else()
    set(cg_copies 0)
    set(step_copies 0)
  endif()
  set(CHECK_COUNTS ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_counts.py
      --tool $<TARGET_FILE:kpmap_region_tool> --ranks 2
      "--short=--set solver.eps=1e-8" "--long=--set solver.eps=1e-15")
  set(COUNT_DECK ${HEAT_INPUTS}/tea_bm_1.in --set output.progress_every=0
      --set output.test_problem=0 "--set=mesh.cells=[64,64]" --set time.end_step=2)
  kpmap_add_mpi_test(
    NAME tools.counts.cg_iteration.waits2_kernels6_syncs3_copies${cg_copies}_allocs0_global0
    COMMAND kpmap-heat ${COUNT_DECK} --output ${CMAKE_CURRENT_BINARY_DIR}/tools/counts_cg_{run}
    RANKS 2 TIMEOUT 120 LABELS tools
    WRAPPER ${CHECK_COUNTS} --out ${CMAKE_CURRENT_BINARY_DIR}/tools/counts_cg
      --region kpmap::sim::cg::iteration --expect kernels=6 --expect reductions=3
      --expect syncs=3 --expect copies=${cg_copies} --expect allocations=0
      --expect reduction_waits=2 --expect global_fences=0 --)
  # Single-reduction CG (with the diagonal preconditioner): one wait for a
  # global reduction, of r.u and w.u together, after the operator. 5 kernels:
  # the fused update with r.u, the operator with w.u inside and on the face,
  # the exchange's pack and unpack; 3 of them reductions. 3 syncs: the fence
  # before MPI sends u's faces, the read of the local sums (the second read
  # finds its kernel done), as CG's; device paths copy the faces (2).
  kpmap_add_mpi_test(
    NAME tools.counts.cgsr_iteration.waits1_kernels5_syncs3_copies${cg_copies}_allocs0_global0
    COMMAND kpmap-heat ${COUNT_DECK} "--set=solver.method=\"cgsr\""
      "--set=solver.preconditioner=\"jac_diag\""
      --output ${CMAKE_CURRENT_BINARY_DIR}/tools/counts_cgsr_{run}
    RANKS 2 TIMEOUT 120 LABELS tools
    WRAPPER ${CHECK_COUNTS} --out ${CMAKE_CURRENT_BINARY_DIR}/tools/counts_cgsr
      --region kpmap::sim::cgsr::iteration --expect reduction_waits=1 --expect kernels=5
      --expect reductions=3 --expect syncs=3 --expect copies=${cg_copies}
      --expect allocations=0 --expect global_fences=0 --)
  # CG in one pass (with the diagonal preconditioner): one wait for a global
  # reduction, of its four sums, and one host synchronisation: the pass writes
  # the new r, w and p, their faces are packed behind it, and the fence before
  # the host reads the local sums lets MPI read the faces too; the next pass
  # only finishes their exchange (unpack). On the Serial backend the pass is
  # one sweep in place (one reduction: 3 kernels with pack and unpack); with
  # device paths, as on a GPU, a reduction over the inner box and one over the
  # face (4 kernels).
  if(NOT KPMAP_DEVICE_PATHS AND Kokkos_ENABLE_SERIAL AND NOT (Kokkos_ENABLE_OPENMP OR
     Kokkos_ENABLE_THREADS OR Kokkos_ENABLE_HPX OR Kokkos_ENABLE_CUDA OR Kokkos_ENABLE_HIP OR
     Kokkos_ENABLE_SYCL))
    set(fused_kernels 3)
    set(fused_reductions 1)
  else()
    set(fused_kernels 4)
    set(fused_reductions 2)
  endif()
  kpmap_add_mpi_test(
    NAME tools.counts.fusedcg_iteration.waits1_kernels${fused_kernels}_syncs1_copies${cg_copies}_allocs0_global0
    COMMAND kpmap-heat ${COUNT_DECK} "--set=solver.method=\"fusedcg\""
      "--set=solver.preconditioner=\"jac_diag\""
      --output ${CMAKE_CURRENT_BINARY_DIR}/tools/counts_fusedcg_{run}
    RANKS 2 TIMEOUT 120 LABELS tools
    WRAPPER ${CHECK_COUNTS} --out ${CMAKE_CURRENT_BINARY_DIR}/tools/counts_fusedcg
      --region kpmap::sim::fusedcg::iteration --expect reduction_waits=1
      --expect kernels=${fused_kernels} --expect reductions=${fused_reductions} --expect syncs=1
      --expect copies=${cg_copies} --expect allocations=0 --expect global_fences=0 --)
  # Pipelined CG (with the diagonal preconditioner): one wait for a global
  # reduction per iteration instead of CG's two, started before the operator
  # and waited for after it, and one host synchronisation: the update kernel
  # makes m and the 5 local sums, m's faces are packed behind it, and one
  # fence lets MPI read both (the sums land where the host reads them); the
  # operator only finishes m's exchange. 8 kernels on host backends: the
  # operator's inner box (in slabs between which MPI_Test moves the
  # reduction on: 4) and its face, the exchange's pack and unpack, and the
  # fused update with its local sums (1 reduction); 5 with device paths, whose
  # launches do not wait for their kernels and so run the inner box as one
  # kernel. A build with device paths stages the faces (2 copies).
  if(KPMAP_DEVICE_PATHS)
    set(pipecg_copies 2)
    set(pipecg_kernels 5)
  else()
    set(pipecg_copies 0)
    set(pipecg_kernels 8)
  endif()
  kpmap_add_mpi_test(
    NAME tools.counts.pipecg_iteration.waits1_kernels${pipecg_kernels}_syncs1_copies${pipecg_copies}_allocs0_global0
    COMMAND kpmap-heat ${COUNT_DECK} "--set=solver.method=\"pipecg\""
      "--set=solver.preconditioner=\"jac_diag\"" --set solver.pipecg_replace_every=0
      --output ${CMAKE_CURRENT_BINARY_DIR}/tools/counts_pipecg_{run}
    RANKS 2 TIMEOUT 120 LABELS tools
    WRAPPER ${CHECK_COUNTS} --out ${CMAKE_CURRENT_BINARY_DIR}/tools/counts_pipecg
      --region kpmap::sim::pipecg::iteration --expect reduction_waits=1
      --expect kernels=${pipecg_kernels} --expect reductions=1 --expect syncs=1
      --expect copies=${pipecg_copies} --expect allocations=0 --expect global_fences=0 --)
  # Chebyshev reads its residual's norm only every check_every (10) iterations.
  kpmap_add_mpi_test(
    NAME tools.counts.chebyshev_iteration.kernels5_syncs_le1.1_allocs0_global0
    COMMAND kpmap-heat ${COUNT_DECK} "--set=solver.method=\"chebyshev\""
      --set solver.check_every=10
      --output ${CMAKE_CURRENT_BINARY_DIR}/tools/counts_chebyshev_{run}
    RANKS 2 TIMEOUT 120 LABELS tools
    WRAPPER ${CHECK_COUNTS} --out ${CMAKE_CURRENT_BINARY_DIR}/tools/counts_chebyshev
      --region kpmap::sim::chebyshev::iteration --expect kernels=5 --expect syncs<=1.1
      --expect allocations=0 --expect global_fences=0 --)
  kpmap_add_mpi_test(
    NAME tools.counts.ppcg_inner_step.kernels5_syncs1_copies${step_copies}_allocs0_global0
    COMMAND kpmap-heat ${COUNT_DECK} "--set=solver.method=\"ppcg\""
      --output ${CMAKE_CURRENT_BINARY_DIR}/tools/counts_ppcg_{run}
    RANKS 2 TIMEOUT 120 LABELS tools
    WRAPPER ${CHECK_COUNTS} --out ${CMAKE_CURRENT_BINARY_DIR}/tools/counts_ppcg --inside
      --region kpmap::sim::ppcg::inner_step --expect kernels=5 --expect reductions=0
      --expect syncs=1 --expect copies=${step_copies} --expect allocations=0
      --expect global_fences=0 --)
  # A halo exchange packs every neighbour in one kernel and unpacks them in
  # one: PPCG's deep-halo inner steps on a 3-D deck at 4 ranks (2 x 2 x 1
  # blocks: two faces and an edge each, ghost width 2, corners included).
  kpmap_add_mpi_test(
    NAME tools.counts.deep_halo_exchange_3d.kernels2_syncs1_copies${step_copies}_allocs0
    COMMAND kpmap-heat ${HEAT_INPUTS}/tea3d_bm_1.in --set output.progress_every=0
      --set output.test_problem=0 "--set=mesh.cells=[24,24,24]" "--set=mesh.ranks=[2,2,1]"
      --set mesh.halo_depth=2 "--set=solver.method=\"ppcg\"" --set time.end_step=1
      --output ${CMAKE_CURRENT_BINARY_DIR}/tools/counts_halo_{run}
    RANKS 4 TIMEOUT 180 LABELS tools
    WRAPPER ${CHECK_COUNTS} --ranks 4 --out ${CMAKE_CURRENT_BINARY_DIR}/tools/counts_halo --inside
      --region kpmap::HaloExchange::exchange --expect kernels=2 --expect syncs=1
      --expect copies=${step_copies} --expect allocations=0 --)
  # What one training step costs, at 2 ranks, from two run lengths within the
  # first epoch (max_steps), with train.log_every = 0: no figures asked for, so
  # the loss stays on the device. Every step: 0 allocations, 0 global fences,
  # and no copy but the staging of the gradient's psum where device paths stage
  # it (the reduced array out and back: 2 copies per message).
  # The linear model: 5 kernels (the gradient's partials and finish, the
  # epoch's loss sum, the update of w and of b) and 1 sync (before MPI reads
  # the gradient). A batch of more than 512 rows a rank adds the gemv over the
  # chunks, and Kokkos Kernels 3.4's gemv a fence on each side.
  # The CNN (cnn_images_ci.toml): 15 kernels, 2 of them reductions (the loss,
  # and the weight gradient of the first convolution, which computes its max
  # pooling itself); 4 syncs before MPI reads the loss sums and the gradients
  # of the 3 layers with parameters, and under Kokkos Kernels 3.4 (no instance
  # argument) a fence on each side of its 6 gemms and 1 gemv: 18.
  # Device paths stage each message: 2 copies, and 1 more sync (the copy back
  # is waited for before its buffer goes back to the staging pool).
  if(KPMAP_DEVICE_PATHS)
    set(linear_copies 2)
    set(linear_syncs 2)
    set(gemv_syncs 4)
    set(cnn_copies 8)
    set(cnn_syncs 22)
  else()
    set(linear_copies 0)
    set(linear_syncs 1)
    set(gemv_syncs 3)
    set(cnn_copies 0)
    set(cnn_syncs 18)
  endif()
  set(CHECK_TRAIN_COUNTS ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_counts.py
      --tool $<TARGET_FILE:kpmap_region_tool> --ranks 2 --region kpmap::train::step)
  kpmap_add_mpi_test(
    NAME tools.counts.train_step_linear.kernels5_syncs${linear_syncs}_copies${linear_copies}_allocs0_global0
    COMMAND kpmap-train ${INPUTS}/train_linear_ci.toml --set train.batch_size=16
      --set train.log_every=0 "--set=optimizer.kind=\"sgd\""
      --output ${CMAKE_CURRENT_BINARY_DIR}/tools/counts_train_{run}
    RANKS 2 TIMEOUT 120 LABELS tools
    WRAPPER ${CHECK_TRAIN_COUNTS} --out ${CMAKE_CURRENT_BINARY_DIR}/tools/counts_train
      "--short=--set train.max_steps=3" "--long=--set train.max_steps=9" --expect kernels=5
      --expect syncs=${linear_syncs} --expect copies=${linear_copies} --expect allocations=0
      --expect global_fences=0 --)
  kpmap_add_mpi_test(
    NAME tools.counts.train_step_linear_gemv.kernels6_syncs${gemv_syncs}_copies${linear_copies}_allocs0_global0
    COMMAND kpmap-train ${INPUTS}/train_linear_ci.toml --set data.samples=20000
      --set train.batch_size=4096 --set train.log_every=0 "--set=optimizer.kind=\"sgd\""
      --output ${CMAKE_CURRENT_BINARY_DIR}/tools/counts_train_gemv_{run}
    RANKS 2 TIMEOUT 120 LABELS tools
    WRAPPER ${CHECK_TRAIN_COUNTS} --out ${CMAKE_CURRENT_BINARY_DIR}/tools/counts_train_gemv
      "--short=--set train.max_steps=1" "--long=--set train.max_steps=4" --expect kernels=6
      --expect syncs=${gemv_syncs} --expect copies=${linear_copies} --expect allocations=0
      --expect global_fences=0 --)
  kpmap_add_mpi_test(
    NAME tools.counts.train_step_cnn.kernels15_syncs${cnn_syncs}_copies${cnn_copies}_allocs0_global0
    COMMAND kpmap-train ${INPUTS}/cnn_images_ci.toml --set train.log_every=0
      --output ${CMAKE_CURRENT_BINARY_DIR}/tools/counts_cnn_{run}
    RANKS 2 TIMEOUT 120 LABELS tools
    WRAPPER ${CHECK_TRAIN_COUNTS} --out ${CMAKE_CURRENT_BINARY_DIR}/tools/counts_cnn
      "--short=--set train.max_steps=3" "--long=--set train.max_steps=9" --expect kernels=15
      --expect syncs=${cnn_syncs} --expect copies=${cnn_copies} --expect allocations=0
      --expect global_fences=0 --)
  # The same step with the optimizer's state sharded (train.sharding =
  # "optimizer"): each rank updates its part, and one all-gather in place
  # completes the parameters, 2 more syncs (the fence before MPI reads the
  # part, the one after the gathered values are in place), and under device
  # paths 2 more copies (the part out to the staging buffer, the whole back).
  # Still no allocation: the optimizer's state is allocated once, at its
  # part's size, and the gather has no buffer of its own.
  if(KPMAP_DEVICE_PATHS)
    set(cnn_sharded_copies 10)
  else()
    set(cnn_sharded_copies 0)
  endif()
  math(EXPR cnn_sharded_syncs "${cnn_syncs} + 2")
  # The parameters sharded too (train.sharding = "parameters"): no gather
  # after the update, but 4 of a layer's parameters per step (the forward
  # pass gathers each of the 3 layers; the backward pass finds the last two
  # in their buffers and gathers the first again), each a copy of this
  # rank's block into the buffer and a sync before MPI reads it, and under
  # device paths 2 copies and 1 sync more (staged).
  if(KPMAP_DEVICE_PATHS)
    math(EXPR cnn_fsdp_copies "${cnn_copies} + 4 * 3")
    math(EXPR cnn_fsdp_syncs "${cnn_syncs} + 4 * 2")
  else()
    math(EXPR cnn_fsdp_copies "${cnn_copies} + 4")
    math(EXPR cnn_fsdp_syncs "${cnn_syncs} + 4")
  endif()
  # The gradient sharded too (train.sharding = "gradients"): each layer's
  # gradient is reduce-scattered from a work buffer instead of psum'd in
  # place, the same messages and the same counts.
  foreach(mode sharded:optimizer:${cnn_sharded_syncs}:${cnn_sharded_copies}
               gradients:gradients:${cnn_sharded_syncs}:${cnn_sharded_copies}
               fsdp:parameters:${cnn_fsdp_syncs}:${cnn_fsdp_copies})
    string(REPLACE ":" ";" parts ${mode})
    list(GET parts 0 tag)
    list(GET parts 1 sharding)
    list(GET parts 2 syncs)
    list(GET parts 3 copies)
    kpmap_add_mpi_test(
      NAME tools.counts.train_step_cnn_${tag}.kernels15_syncs${syncs}_copies${copies}_allocs0_global0
      COMMAND kpmap-train ${INPUTS}/cnn_images_ci.toml --set train.log_every=0
        "--set=train.sharding=\"${sharding}\""
        --output ${CMAKE_CURRENT_BINARY_DIR}/tools/counts_cnn_${tag}_{run}
      RANKS 2 TIMEOUT 120 LABELS tools
      WRAPPER ${CHECK_TRAIN_COUNTS} --out ${CMAKE_CURRENT_BINARY_DIR}/tools/counts_cnn_${tag}
        "--short=--set train.max_steps=3" "--long=--set train.max_steps=9" --expect kernels=15
        --expect syncs=${syncs} --expect copies=${copies}
        --expect allocations=0 --expect global_fences=0 --)
  endforeach()
  # Tensor parallelism (tests/decks/mlp_tensor_parallel.toml: a whole layer
  # after a column-parallel and a row-parallel dense layer) on 2 ranks, as 2 x
  # 1 (data x model) and 1 x 2: the same 11 kernels (3 forward, 3 weight
  # gradients, 3 bias gradients, 2 input gradients), 1 reduction, and under
  # Kokkos Kernels 3.4 a fence on each side of its 8 gemms and 3 gemvs. 2 x 1
  # psums the loss sums and 3 layers' gradients over "data" (4 syncs: 26); 1 x
  # 2 psums the row layer's output over "model" (1 sync: 23) and nothing over
  # a "data" axis of one rank; the column layer is the first, so no input
  # gradient of its is summed. Device paths stage each message: 2 copies
  # and 1 sync more. No allocation either way.
  if(KPMAP_DEVICE_PATHS)
    set(tp_counts 2:1:kernels11_syncs30_copies8 1:2:kernels11_syncs24_copies2)
  else()
    set(tp_counts 2:1:kernels11_syncs26_copies0 1:2:kernels11_syncs23_copies0)
  endif()
  foreach(entry ${tp_counts})
    string(REPLACE ":" ";" parts ${entry})
    list(GET parts 0 data)
    list(GET parts 1 model)
    list(GET parts 2 figures)
    string(REGEX MATCH "syncs([0-9]+)" _ ${figures})
    set(syncs ${CMAKE_MATCH_1})
    string(REGEX MATCH "copies([0-9]+)" _ ${figures})
    set(copies ${CMAKE_MATCH_1})
    kpmap_add_mpi_test(
      NAME tools.counts.train_step_mlp_mesh${data}x${model}.${figures}_allocs0_global0
      COMMAND kpmap-train ${PROJECT_SOURCE_DIR}/tests/decks/mlp_tensor_parallel.toml
        --set train.log_every=0 --set train.mesh.data=${data} --set train.mesh.model=${model}
        --output ${CMAKE_CURRENT_BINARY_DIR}/tools/counts_mlp_mesh${data}x${model}_{run}
      RANKS 2 TIMEOUT 120 LABELS tools
      WRAPPER ${CHECK_TRAIN_COUNTS} --out ${CMAKE_CURRENT_BINARY_DIR}/tools/counts_mlp_mesh${data}x${model}
        "--short=--set train.max_steps=3" "--long=--set train.max_steps=9" --expect kernels=11
        --expect syncs=${syncs} --expect copies=${copies} --expect allocations=0
        --expect global_fences=0 --)
  endforeach()
  # Every run names the command that draws its pictures, field.png (heat) and
  # loss.png (train), and kpmap-plot, run after mpiexec has returned, draws
  # them: a PNG (an old one is removed first). No rank forks a process.
  foreach(app heat train)
    if(app STREQUAL heat)
      set(plot_args ${HEAT_INPUTS}/tea_bm_1.in)
      set(picture field.png)
    else()
      set(plot_args ${INPUTS}/cnn_images_ci.toml --set train.epochs=2)
      set(picture loss.png)
    endif()
    set(plot_dir ${CMAKE_CURRENT_BINARY_DIR}/tools/${app}_plots)
    kpmap_add_mpi_test(NAME apps.kpmap-${app}.plots COMMAND kpmap-${app} ${plot_args}
      --output ${plot_dir} RANKS 2 TIMEOUT 120 LABELS apps
      WRAPPER ${EXPECT_EXIT} --exit-code 0
              "--regex=kpmap-${app}: plots \\(${picture}\\): kpmap-plot '[^\n]*${app}_plots'" --)
    set_tests_properties(apps.kpmap-${app}.plots.np2 PROPERTIES FIXTURES_SETUP ${app}_plots)
    add_test(NAME scripts.kpmap-plot.${app}
      COMMAND ${EXPECT_EXIT} --exit-code 0 "--regex=kpmap: plot written to [^\n]*${picture}"
              --png ${plot_dir}/${picture} --
              ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/kpmap-plot ${plot_dir})
    set_tests_properties(scripts.kpmap-plot.${app} PROPERTIES LABELS apps
                         FIXTURES_REQUIRED ${app}_plots TIMEOUT 120)
  endforeach()
  # The installed kpmap-plot draws where the python3 first on the PATH lacks
  # matplotlib (a pyenv, conda or module Python), and says how to install it
  # where no Python has it.
  add_test(NAME scripts.kpmap-plot.any_python
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/scripts/check_plot_python.sh ${PROJECT_BINARY_DIR}
            ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/tools/train_plots
            ${CMAKE_CURRENT_BINARY_DIR}/tools/plot_python)
  set_tests_properties(scripts.kpmap-plot.any_python PROPERTIES LABELS apps
                       FIXTURES_REQUIRED train_plots TIMEOUT 180)
  # The README's pictures are the ones scripts/make-readme-images draws, and
  # it draws them (small runs).
  add_test(NAME docs.readme_images
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/scripts/check_readme_images.sh ${PROJECT_SOURCE_DIR}
            ${PROJECT_BINARY_DIR} ${CMAKE_CURRENT_BINARY_DIR}/tools/readme_images)
  set_tests_properties(docs.readme_images PROPERTIES LABELS "docs;apps;mpi" PROCESSORS 2
                       TIMEOUT 300 ENVIRONMENT "${KPMAP_MPI_TEST_ENVIRONMENT}")
  # A folder that is no run's is refused, exit 2, naming it.
  add_test(NAME scripts.kpmap-plot.not_a_run
    COMMAND ${EXPECT_FAILURE} --exit-code 2
            --expect "kpmap-plot: error: ${CMAKE_CURRENT_SOURCE_DIR}: not a kpmap-train or kpmap-heat run folder"
            -- ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/kpmap-plot
               ${CMAKE_CURRENT_SOURCE_DIR})
  set_tests_properties(scripts.kpmap-plot.not_a_run PROPERTIES LABELS apps TIMEOUT 60)
  # kpmap-plot is as careful as the apps: links and FIFOs among a folder's
  # files and damaged results and traces get one line and exit 2, no
  # traceback, no hang, and nothing outside the folder changes.
  add_test(NAME scripts.kpmap-plot.safe
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/scripts/check_plot_safety.py
            --plot ${PROJECT_SOURCE_DIR}/scripts/kpmap-plot
            --workdir ${CMAKE_CURRENT_BINARY_DIR}/tools/plot_safety)
  set_tests_properties(scripts.kpmap-plot.safe PROPERTIES LABELS "apps;reliability" TIMEOUT 300)
  # Progress lines and pictures at any run length (1 step, 1 epoch, 50 epochs;
  # 1 and 90 heat steps): the default cadence's lines, steps.csv and history.csv
  # as printed, and figures that plot exactly those rows on readable axes.
  list(JOIN MPIEXEC_PREFLAGS " " short_preflags)
  add_test(NAME apps.short_runs
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/scripts/check_short_runs.py
            --train $<TARGET_FILE:kpmap-train> --heat $<TARGET_FILE:kpmap-heat>
            --inputs ${PROJECT_SOURCE_DIR}/inputs
            --launcher "${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} {n} ${short_preflags}"
            --workdir ${CMAKE_CURRENT_BINARY_DIR}/tools/short_runs)
  set_tests_properties(apps.short_runs PROPERTIES LABELS "apps;mpi" PROCESSORS 2 TIMEOUT 300
                       ENVIRONMENT "${KPMAP_MPI_TEST_ENVIRONMENT}")
  # A trace that cannot be written is refused before the run, not lost after it.
  kpmap_add_mpi_test(NAME apps.kpmap-heat.trace_unwritable COMMAND kpmap-heat
    ${HEAT_INPUTS}/tea_bm_1.in --output ${CMAKE_CURRENT_BINARY_DIR}/tools/bad
    --trace /proc/kpmap-cannot-write/trace.json RANKS 1 3 TIMEOUT 60 LABELS apps reliability
    WRAPPER ${EXPECT_FAILURE} --within 10 --exit-code 2
    --expect "trace file /proc/kpmap-cannot-write/trace.json: its folder /proc/kpmap-cannot-write does not exist" --)
endif()

# The end-of-run phase table: min / mean / max over the ranks, checkpoints apart.
if(TARGET kpmap-heat AND TARGET kpmap-train)
  set(PHASE_TABLE "time per phase over [0-9]+ ranks? [^\n]*\n  compute +[0-9.]+ / +[0-9.]+ / +[0-9.]+ +[0-9.]+ %\n(  [a-z]+ +[0-9.]+ / +[0-9.]+ / +[0-9.]+ +[0-9.]+ %\n)*  checkpoint +[0-9.]+ / +[0-9.]+ / +[0-9.]+ +[0-9.]+ %\n  wall +[0-9.]+")
  foreach(n 1 3)
    kpmap_add_mpi_test(NAME apps.kpmap-heat.phase_table COMMAND kpmap-heat
      ${HEAT_INPUTS}/tea_bm_1.in --output ${CMAKE_CURRENT_BINARY_DIR}/tools/heat_phases_np${n}
      RANKS ${n} TIMEOUT 120 LABELS apps EXPECT_OUTPUT "${PHASE_TABLE}")
  endforeach()
  kpmap_add_mpi_test(NAME apps.kpmap-train.phase_table COMMAND kpmap-train
    ${INPUTS}/train_mlp_ci.toml --set train.epochs=1
    --output ${CMAKE_CURRENT_BINARY_DIR}/tools/train_phases RANKS 2 TIMEOUT 120 LABELS apps
    EXPECT_OUTPUT "${PHASE_TABLE}")
endif()
