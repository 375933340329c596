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

# kpmap_build PRESET [cmake -D options...]: configure and build with a preset.
kpmap_build() {
  local preset=$1
  shift
  cmake --preset "$preset" "$@" >/dev/null
  cmake --build --preset "$preset"
}
