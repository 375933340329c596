#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds the deck fuzz targets with clang's libFuzzer, ASan and UBSan, and runs
# each for a bounded number of inputs from its seed decks:
#   fuzz_deck      the TOML deck parser (kpmap/deck/*.cpp)
#   fuzz_tea_deck  the TeaLeaf deck reader (kpmap/sim/tea_deck/*.cpp) and the path
#                  kpmap-heat takes after it (the heat schema, sim::from_deck)
#
# usage: run_fuzzer.sh SOURCE_DIR WORK_DIR DECK_RUNS TEA_RUNS [CLANGXX]
# The runs are inputs from a fixed seed: the same exploration on every machine.
set -euo pipefail
src=$1
work=$2
deck_runs=$3
tea_runs=$4
cxx=${5:-clang++}
rm -rf "$work/corpus" "$work/corpus_tea" "$work/obj"
mkdir -p "$work/corpus" "$work/corpus_tea" "$work/obj"
# toml++ is compiled into the targets (header-only mode) so the fuzzer sees its
# code, with NDEBUG as kpmap ships it: toml++ 3.3's debug assert()s fire on some
# malformed input (its own consistency checks, compiled out in release builds);
# ASan and UBSan still catch any memory error or undefined behaviour.
# shellcheck disable=SC2054  # the commas belong to -fsanitize's list
flags=(-std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
  -DNDEBUG -DTOML_HEADER_ONLY=1 -I"$src/src")
# shellcheck disable=SC2207
mpi_compile=($(mpicxx --showme:compile))
# shellcheck disable=SC2207
mpi_link=($(mpicxx --showme:link))
# Each source once, all at a time (the deck sources, with toml++, are the slow ones).
deck_objects=()
for f in text schema suggest parse load deck; do deck_objects+=("$work/obj/$f.o"); done
pids=()
for f in kpmap/deck/text kpmap/deck/schema kpmap/deck/suggest kpmap/deck/parse kpmap/deck/load \
  kpmap/deck/deck kpmap/base/files kpmap/sim/tea_deck/words kpmap/sim/tea_deck/read \
  kpmap/sim/tea_deck/translate kpmap/sim/config kpmap/run/output_keys kpmap/sim/solvers/registry \
  kpmap/transport/mpi_ops kpmap/base/detail/mpi_util; do
  "$cxx" "${flags[@]}" "${mpi_compile[@]}" -c "$src/src/$f.cpp" -o "$work/obj/${f##*/}.o" &
  pids+=($!)
done
for f in fuzz_deck fuzz_tea_deck; do
  "$cxx" "${flags[@]}" "${mpi_compile[@]}" -c "$src/tests/fuzz/$f.cpp" -o "$work/obj/$f.o" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
"$cxx" "${flags[@]}" "${deck_objects[@]}" "$work/obj/files.o" "$work/obj/mpi_ops.o" "$work/obj/mpi_util.o" \
  "$work/obj/fuzz_deck.o" "${mpi_link[@]}" -o "$work/fuzz_deck"
"$cxx" "${flags[@]}" "${deck_objects[@]}" "$work/obj/files.o" "$work/obj/mpi_ops.o" "$work/obj/mpi_util.o" \
  "$work/obj/words.o" "$work/obj/read.o" "$work/obj/translate.o" "$work/obj/config.o" "$work/obj/output_keys.o" \
  "$work/obj/registry.o" "$work/obj/fuzz_tea_deck.o" "${mpi_link[@]}" \
  -o "$work/fuzz_tea_deck"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# A fixed seed makes the run repeatable: CI explores the same inputs every time.
fuzz() {
  local target=$1 runs=$2 corpus=$3 seeds=$4
  "$work/$target" -seed=20261121 -runs="$runs" -max_total_time=600 -timeout=5 \
    -rss_limit_mb=2048 -artifact_prefix="$work/$target-" \
    -print_final_stats=1 "$corpus" "$seeds"
}
fuzz fuzz_deck "$deck_runs" "$work/corpus" "$src/tests/fuzz/seeds"
fuzz fuzz_tea_deck "$tea_runs" "$work/corpus_tea" "$src/tests/fuzz/seeds_tea"
echo "fuzz_deck, fuzz_tea_deck: no crash, hang or sanitizer report in ${deck_runs} and" \
  "${tea_runs} inputs"
