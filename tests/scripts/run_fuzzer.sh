#!/usr/bin/env bash
# Builds the deck-parser fuzz target with clang's libFuzzer, ASan and UBSan,
# and runs it for a bounded time from the seed decks.
#
# usage: run_fuzzer.sh SOURCE_DIR WORK_DIR RUNS [CLANGXX]
# RUNS inputs from a fixed seed: the same exploration on every machine.
set -euo pipefail
src=$1
work=$2
runs=$3
cxx=${4:-clang++}
rm -rf "$work/corpus"
mkdir -p "$work/corpus"
# toml++ is compiled into the target (header-only mode) so the fuzzer sees its code,
# with NDEBUG as kpmap ships it: toml++ 3.3's debug assert()s fire on some
# malformed input (its own consistency checks, compiled out in release builds);
# ASan and UBSan still catch any memory error or undefined behaviour.
# shellcheck disable=SC2046
"$cxx" -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -DNDEBUG -DTOML_HEADER_ONLY=1 -I"$src/src" $(mpicxx --showme:compile) \
  "$src/src/kpmap/deck.cpp" "$src/tests/fuzz/fuzz_deck.cpp" \
  $(mpicxx --showme:link) -o "$work/fuzz_deck"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# A fixed seed makes the run repeatable: CI explores the same inputs every time.
"$work/fuzz_deck" -seed=20261121 -runs="$runs" -max_total_time=600 -timeout=5 \
  -rss_limit_mb=2048 -artifact_prefix="$work/" \
  -print_final_stats=1 "$work/corpus" "$src/tests/fuzz/seeds"
echo "fuzz_deck: no crash, hang or sanitizer report in ${runs} inputs"
