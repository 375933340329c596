#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts.gpu-bundle: the bundle that a GPU machine runs, proven on this one.
#
#   check_gpu_bundle.sh SOURCE_DIR BUILD_DIR WORK_DIR
#
# 1. scripts/gpu-bundle packs BUILD_DIR (the host build, xz level 1: level 0
#    left the host build 0.2 MiB over the 56 MiB a device call carries) and the
#    archive unpacks in an empty folder.
# 2. Every library that each bundled program, Open MPI launcher and plugin,
#    PMIx plugin and bundled library needs resolves inside the bundle or is
#    what the target machine brings itself (glibc, libstdc++, libgcc, the
#    NVIDIA driver, CUDA's libraries): ldd with the bundle's library path and
#    nothing else in the environment.
# 3. The bundle's gpu-check --quick runs from an empty folder with a cleared
#    environment (env -i), on a view of this machine (a private mount
#    namespace) whose /usr/lib/x86_64-linux-gnu holds only glibc, libstdc++,
#    libgcc and the libraries of the shell tools gpu-check calls, and where
#    /etc/openmpi and /usr/share/openmpi are empty: the system's Open MPI,
#    PMIx, HDF5, Kokkos and BLAS are out of reach, as on a GPU machine. Its
#    own check that every object loaded lies in the bundle or the system's
#    set (LD_DEBUG=files) must pass too.
set -euo pipefail
src=$1
build=$2
work=$3
rm -rf "$work"
mkdir -p "$work/machine" "$work/empty"

"$src/scripts/gpu-bundle" "$build" --out "$work/kpmap.tar.xz" --compression 1
tar -xJf "$work/kpmap.tar.xz" -C "$work/machine"
B=$work/machine/kpmap-bundle
[ -x "$B/gpu-check" ] || { echo "FAIL: no gpu-check in the bundle"; exit 1; }

# ---- 2. libraries ---------------------------------------------------------------
system='/(ld-linux[^/]*|lib(c|m|mvec|pthread|dl|rt|util|resolv|nsl|anl|stdc\+\+|gcc_s|cuda|nvidia-[a-z-]*|cublas|cublasLt|cudart|nvJitLink))\.so[^/]*$'
checked=0
bad=0
for f in "$B"/bin/* "$B"/mpi/bin/orterun "$B"/mpi/bin/orted "$B"/mpi/lib/*/openmpi/lib/openmpi3/*.so \
  "$B"/pmix/lib/pmix/*.so "$B"/lib/*; do
  checked=$((checked + 1))
  while read -r name arrow where _; do
    [ "$arrow" = "=>" ] || continue
    if [ "$where" = not ]; then
      echo "FAIL: ${f#"$B"/} needs $name, found nowhere"
      bad=1
    elif [[ $where != "$B"/* ]] && ! [[ $where =~ $system ]]; then
      echo "FAIL: ${f#"$B"/} loads $where from outside the bundle"
      bad=1
    fi
  done < <(env -i LD_LIBRARY_PATH="$B/lib" ldd "$f")
done
[ "$bad" = 0 ] || exit 1
echo "ok: $checked ELF files in the bundle resolve every library inside it or in the system's set"

# ---- 3. gpu-check on a bare view of this machine ---------------------------------
# the libraries a bare machine has: glibc, libstdc++, libgcc and the shell tools'
bare_libs() {
  bare=$work/bare-libs
  mkdir -p "$bare"
  tools="bash sh sed awk grep date timeout mkdir cat sort uniq wc tr head tail cut uname find dirname ls rm env"
  for t in $tools; do
    for lib in $(ldd "$(command -v "$t")" | awk '/=>/ { print $3 } /ld-linux/ { print $1 }'); do
      cp -L "$lib" "$bare/" 2>/dev/null || true
    done
  done
  # glibc whole (its package's libraries), libstdc++ and libgcc
  for lib in $(dpkg -L libc6 | grep -E '^/(usr/)?lib/x86_64-linux-gnu/[^/]*\.so[.0-9]*$') \
    /usr/lib/x86_64-linux-gnu/libstdc++.so.6 /usr/lib/x86_64-linux-gnu/libgcc_s.so.1; do
    cp -L "$lib" "$bare/"
  done
}

if unshare -m true 2>/dev/null && command -v dpkg >/dev/null; then
  bare_libs
  # shellcheck disable=SC2016 # the inner shell expands its own arguments
  unshare -m bash -c '
    set -e
    mount --bind "$1" /usr/lib/x86_64-linux-gnu
    mount --bind "$2" /etc/openmpi 2>/dev/null || true
    mount --bind "$2" /usr/share/openmpi 2>/dev/null || true
    [ ! -e /usr/lib/x86_64-linux-gnu/libmpi.so.40 ] && [ ! -e /usr/lib/x86_64-linux-gnu/libhdf5_openmpi.so.103 ]
    cd "$2"
    exec env -i PATH=/usr/bin:/bin "$3/gpu-check" "$4" --quick
  ' bare "$bare" "$work/empty" "$B" "$work/out"
  echo "ok: gpu-check --quick passed with the system's MPI, HDF5, Kokkos and BLAS out of reach"
else
  echo "note: no private mount namespace here (unshare -m refused, or no dpkg): gpu-check runs on the whole machine"
  (cd "$work/empty" && env -i PATH=/usr/bin:/bin "$B/gpu-check" "$work/out" --quick)
fi
grep -q '"passed": true' "$work/out/gpu-check.json"
for step in info libraries test_collectives "heat tea_bm_1" "train linear"; do
  grep -q "\"step\": \"$step\".*\"status\": \"ok\"" "$work/out/gpu-check.json" ||
    { echo "FAIL: gpu-check.json has no passed step '$step'"; exit 1; }
done
echo "ok: gpu-check.json records each quick step as passed"
