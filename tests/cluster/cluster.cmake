# SPDX-License-Identifier: BSD-3-Clause
# kpmap across simulated hosts (scripts/sim-cluster, docs/cluster.md), label
# "cluster" (included by tests/CMakeLists.txt). Each test makes its own hosts,
# network namespaces with host names of their own and Open MPI over TCP
# between them, and removes them when it ends, also when it fails. Where hosts
# cannot be made (not root, no namespaces) a test is skipped with the reason,
# and CI (KPMAP_REQUIRE_RELIABILITY=1) fails on such a skip.
if(KPMAP_ENABLE_APPS)
  set(SIM_CLUSTER ${PROJECT_SOURCE_DIR}/scripts/sim-cluster)
  set(CLUSTER_OUT ${CMAKE_CURRENT_BINARY_DIR}/cluster)
  # kpmap_add_cluster_test(NAME HOSTS CASE [check_cluster.py options...]):
  # cluster.NAME runs check_cluster.py CASE on the hosts HOSTS ("nodeA:2,nodeB:2"
  # or "3"), its run folders under build/.../cluster/NAME.
  function(kpmap_add_cluster_test name hosts case)
    add_test(NAME cluster.${name}
      COMMAND ${SIM_CLUSTER} --hosts ${hosts} --
              ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_cluster.py ${case}
              --bin $<TARGET_FILE_DIR:kpmap-heat> --work ${CLUSTER_OUT}/${name} ${ARGN})
    set_tests_properties(cluster.${name} PROPERTIES LABELS cluster SKIP_RETURN_CODE 77
      TIMEOUT 300 PROCESSORS 2
      ENVIRONMENT "OMP_NUM_THREADS=1;OMP_PROC_BIND=false;OMP_WAIT_POLICY=passive;OPENBLAS_NUM_THREADS=1")
  endfunction()

  foreach(shape 2x2 3x1)
    if(shape STREQUAL 2x2)
      set(hosts nodeA:2,nodeB:2)
    else()
      set(hosts 3)
    endif()
    # Each rank's host, node and local rank, as the hosts place them.
    kpmap_add_cluster_test(info.${shape} ${hosts} info)
    # The same answers across hosts as on one host at the same rank count,
    # bit for bit: the reductions run in the same order over TCP as over
    # shared memory (Open MPI picks its algorithms by rank count and size).
    kpmap_add_cluster_test(heat_tea_bm_1.${shape} ${hosts} same-heat --deck ${INPUTS}/tea_bm_1.in)
    kpmap_add_cluster_test(heat3d.${shape} ${hosts} same-heat --deck ${INPUTS}/heat3d_ci.toml)
    # Pipelined CG's non-blocking sums and single-reduction CG's over TCP:
    # TeaLeaf's published U on bm_2 (eps 1e-15; the run exits 5 where the
    # answer fails), bit for bit.
    foreach(method pipecg cgsr)
      kpmap_add_cluster_test(heat_tea_bm_2_${method}.${shape} ${hosts} same-heat
        --deck ${INPUTS}/tea_bm_2.in --set solver.method=${method})
    endforeach()
    kpmap_add_cluster_test(train_cnn.${shape} ${hosts} same-train
      --deck ${INPUTS}/cnn_images_ci.toml --set train.epochs=2)
    kpmap_add_cluster_test(train_cnn_sharded.${shape} ${hosts} same-train
      --deck ${INPUTS}/cnn_images_ci.toml --set train.epochs=2 --set train.sharding=parameters)
    # The library's own tests, every collective and the halo exchange among them.
    foreach(program test_collectives test_halo test_checkpoint test_runtime)
      kpmap_add_cluster_test(${program}.${shape} ${hosts} program
        --program $<TARGET_FILE:${program}>)
    endforeach()
  endforeach()
  kpmap_add_cluster_test(train_tensor_parallel.2x2 nodeA:2,nodeB:2 same-train
    --deck ${CMAKE_CURRENT_SOURCE_DIR}/decks/mlp_tensor_parallel.toml
    --set train.mesh.data=2 --set train.mesh.model=2)
  # Checkpoints cross between hosts and one host, at another rank count.
  kpmap_add_cluster_test(restart.2x2 nodeA:2,nodeB:2 restart
    --deck ${INPUTS}/heat2d_ci.toml --set time.end_step=6 --split 3)
  # kpmap-scale from the cluster's hostfile at 1, 2 and 3 hosts: its node
  # column is what the runs report.
  kpmap_add_cluster_test(scale.3x1 3 scale --deck ${INPUTS}/heat2d_ci.toml
    --set mesh.cells=[96,96] --set time.end_step=10)
  # A lost host ends the job within 120 s, naming it, and the run continues
  # from the checkpoint it names on the hosts that remain. Alone on the
  # machine: the time it takes is what is tested.
  set(lost_deck --deck ${INPUTS}/heat2d_ci.toml --set mesh.cells=[128,128]
                --set time.end_step=300 --set output.checkpoint_every=5)
  kpmap_add_cluster_test(lost_link.2x2 nodeA:2,nodeB:2 lost --how link-down ${lost_deck})
  kpmap_add_cluster_test(lost_kill.3x1 3 lost --how kill ${lost_deck})
  # The same for training: the Trainer's loop runs on the same RunControl.
  kpmap_add_cluster_test(lost_kill_train.3x1 3 lost --how kill --app kpmap-train
    --deck ${INPUTS}/cnn_images_ci.toml --set train.epochs=12 --set output.checkpoint_every=1)
  # kpmap-run --relaunch 1: a host lost mid-run (its link down at 2 x 2, its
  # processes killed at 3 x 1) and the job relaunched on the hosts left from
  # the checkpoint it named, its first step within 60 s of the fault; its end
  # the uninterrupted run's continued from that checkpoint at the same ranks,
  # bit for bit (heat: and within 1e-12 of the uninterrupted end).
  kpmap_add_cluster_test(relaunch_link.2x2 nodeA:2,nodeB:2 relaunch --how link-down ${lost_deck})
  kpmap_add_cluster_test(relaunch_kill.3x1 3 relaunch --how kill ${lost_deck})
  kpmap_add_cluster_test(relaunch_kill_train.3x1 3 relaunch --how kill --app kpmap-train
    --deck ${INPUTS}/cnn_images_ci.toml --set train.epochs=12 --set output.checkpoint_every=1)
  set_tests_properties(cluster.relaunch_link.2x2 cluster.relaunch_kill.3x1
    cluster.relaunch_kill_train.3x1 PROPERTIES RUN_SERIAL TRUE)
  # A rank that fails while its host stays up is named as it is, never as a
  # lost host: its own error line (rank 3, not a host's first rank, also with
  # ranks placed round-robin), the launcher's for one killed, and the monitor's
  # "rank 2 on host nodeB ... ended without a word" for a host's first rank.
  set(fails_deck --deck ${INPUTS}/heat2d_ci.toml --set mesh.cells=[128,128]
                 --set time.end_step=300 --within 60)
  kpmap_add_cluster_test(fails_error.2x2 nodeA:2,nodeB:2 fails --inject 3:5
    --expect "kpmap: rank 3: injected error at step 5" ${fails_deck})
  kpmap_add_cluster_test(fails_error_by_node.2x2 nodeA:2,nodeB:2 fails --inject 3:5 --map node
    --expect "kpmap: rank 3: injected error at step 5" ${fails_deck})
  kpmap_add_cluster_test(fails_kill.2x2 nodeA:2,nodeB:2 fails --inject 3:5:kill
    --expect "kpmap: rank 3: injected SIGKILL at step 5" ${fails_deck})
  kpmap_add_cluster_test(fails_kill_first.2x2 nodeA:2,nodeB:2 fails --inject 2:5:kill
    --expect "rank 2 on host nodeB (ranks 2-3) ended without a word in step 5: its connection closed while its host still answers (the rank was killed or crashed)"
    --expect "the last good checkpoint is" ${fails_deck})
  # Ranks placed round robin (0 and 2 on nodeA, 1 and 3 on nodeB): the host's
  # ranks are the Runtime's nodes', not a count that takes them as contiguous.
  kpmap_add_cluster_test(fails_kill_first_by_node.2x2 nodeA:2,nodeB:2 fails --inject 1:5:kill
    --map node
    --expect "rank 1 on host nodeB (ranks 1, 3) ended without a word in step 5" ${fails_deck})
  # A stop signal and a host lost while the stop is honoured (SIGUSR1 to
  # mpirun, the last host's link down 50 ms later: mid-step or mid-checkpoint)
  # ends within the host timeout, naming the last good checkpoint, which reads
  # back; SIGUSR1 during an 8-second flap (shorter than the timeout) stops the
  # run as asked, exit 4 and its checkpoint, no host reported lost.
  set(stop_deck --deck ${INPUTS}/heat2d_ci.toml --set mesh.cells=[512,512]
                --set time.end_step=300 --set output.checkpoint_every=2)
  kpmap_add_cluster_test(stop_cut.2x2 nodeA:2,nodeB:2 stop-cut --within 60 ${stop_deck})
  kpmap_add_cluster_test(stop_flap.2x2 nodeA:2,nodeB:2 stop-flap --flap 8 ${lost_deck})
  set_tests_properties(cluster.lost_link.2x2 cluster.lost_kill.3x1 cluster.lost_kill_train.3x1
    cluster.stop_cut.2x2 cluster.stop_flap.2x2 PROPERTIES RUN_SERIAL TRUE)
  # One host whose ranks see another KPMAP_* setting (-x for that host's ranks
  # only) ends the job within 10 s with exit 2, naming the setting, both values
  # and both hosts; the same for another build (apps.kpmap-heat.differs_*).
  add_test(NAME cluster.differs_env.2x2
    COMMAND ${SIM_CLUSTER} --hosts nodeA:2,nodeB:2 --
            ${EXPECT_FAILURE} --within 10 --exit-code 2 --expect
            "KPMAP_HOST_TIMEOUT is unset on ranks 0-1 (host nodeA) but 'abc' on ranks 2-3 (host nodeB)"
            -- mpirun -n 2 --host nodeA:2 $<TARGET_FILE:kpmap-heat> ${INPUTS}/heat2d_ci.toml
               --output ${CLUSTER_OUT}/differs_env
             : -n 2 --host nodeB:2 -x KPMAP_HOST_TIMEOUT=abc $<TARGET_FILE:kpmap-heat>
               ${INPUTS}/heat2d_ci.toml --output ${CLUSTER_OUT}/differs_env)
  set_tests_properties(cluster.differs_env.2x2 PROPERTIES LABELS cluster SKIP_RETURN_CODE 77
    TIMEOUT 120 PROCESSORS 2)
  # A host that only slows down (its link limited to 1 Mbit/s mid-run: a step
  # takes 1.3 s instead of 10 ms) is not lost: the run ends as on one host.
  kpmap_add_cluster_test(slow_link.2x2 nodeA:2,nodeB:2 slow --rate 1mbit
    --deck ${INPUTS}/heat2d_ci.toml --set mesh.cells=[128,128] --set time.end_step=20
    --set output.checkpoint_every=5)
endif()
