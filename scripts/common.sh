# SPDX-License-Identifier: BSD-3-Clause
# Shared by kpmap's scripts: sourced, not run.

# kpmap_mpiexec N cmd...: mpiexec with the flags this machine needs. Open MPI
# refuses to run as root and to place more ranks than cores unless told.
kpmap_mpiexec() {
  local n=$1
  shift
  local flags=()
  if mpiexec --version 2>/dev/null | grep -q "Open MPI\|OpenRTE"; then
    flags+=(--oversubscribe)
    [ "$(id -u)" -eq 0 ] && flags+=(--allow-run-as-root)
  fi
  # One BLAS thread per rank: the ranks are the parallelism.
  OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1} mpiexec -n "$n" "${flags[@]}" "$@"
}

# kpmap_timed NAME cmd...: runs cmd and says how long it took; with
# KPMAP_STAGE_LOG set (.ci/run sets it), also appends "NAME SECONDS" to that
# file, for the table of stage times at the end.
kpmap_timed() {
  local name=$1 start=$SECONDS rc=0
  shift
  "$@" || rc=$?
  local took=$((SECONDS - start))
  echo "kpmap: ${name}: $((took / 60)) min $((took % 60)) s$([ $rc -ne 0 ] && echo " (failed)")"
  if [ -n "${KPMAP_STAGE_LOG:-}" ]; then
    printf '%s\t%d\t%d\n' "$name" "$took" "$rc" >>"$KPMAP_STAGE_LOG"
  fi
  return $rc
}

# kpmap_build PRESET [cmake -D options...]: configure and build with a preset.
# KPMAP_BUILD_TARGETS (space-separated) builds only those targets.
kpmap_build() {
  local preset=$1
  shift
  cmake --preset "$preset" "$@" >/dev/null
  local targets=()
  [ -n "${KPMAP_BUILD_TARGETS:-}" ] && read -r -a targets <<<"--target $KPMAP_BUILD_TARGETS"
  kpmap_timed "build ($preset${KPMAP_BUILD_TARGETS:+: $KPMAP_BUILD_TARGETS})" \
    cmake --build --preset "$preset" "${targets[@]}"
}

# The configure options the README's two commands share, so that the test
# command compiles nothing the demo compiled: warnings are errors where
# KPMAP_WERROR=ON says so (.ci/run sets it), else warnings only; the
# libraries compile in batches (KPMAP_UNITY_BUILD: less to compile from
# clean; CI's other legs build file by file, so that a file that compiles
# only in its batch is caught).
# shellcheck disable=SC2034  # read by the scripts that source this file
KPMAP_DEFAULT_OPTIONS=("-DKPMAP_WERROR=${KPMAP_WERROR:-OFF}" "-DKPMAP_UNITY_BUILD=ON")

# kpmap_test PRESET [ctest options...]: runs the preset's tests on every core,
# keeping ctest's output in build/PRESET/ctest-output.log. With
# KPMAP_REQUIRE_RELIABILITY=1 (.ci/run sets it), a reliability or cluster test
# that skipped itself (it could not set up its fault, or simulated hosts, here)
# fails the run.
kpmap_test() {
  local preset=$1
  shift
  kpmap_timed "tests ($preset)" kpmap_ctest_logged "$preset" "$@"
}
kpmap_ctest_logged() {
  local preset=$1
  shift
  local log=build/$preset/ctest-output.log rc=0
  ctest --preset "$preset" -j "$(nproc)" "$@" 2>&1 | tee "$log" || rc=$?
  [ $rc -eq 0 ] || return $rc
  if [ "${KPMAP_REQUIRE_RELIABILITY:-0}" = 1 ]; then
    local skipped reliability missed
    skipped=$(grep -oP 'Test +#[0-9]+: \K\S+(?= \.*\s*\*\*\*Skipped)' "$log" | sort || true)
    reliability=$(ctest --preset "$preset" -N -L 'reliability|cluster' |
      grep -oP 'Test +#[0-9]+: \K\S+' | sort)
    missed=$(comm -12 <(echo "$skipped") <(echo "$reliability") | grep . || true)
    if [ -n "$missed" ]; then
      echo "kpmap: reliability or cluster tests skipped (KPMAP_REQUIRE_RELIABILITY=1 needs them run):" >&2
      echo "$missed" | sed 's/^/  /' >&2
      return 1
    fi
  fi
}
