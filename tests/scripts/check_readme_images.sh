#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The README's pictures come from scripts/make-readme-images, and it draws them.
#
#   check_readme_images.sh SOURCE_DIR BUILD_DIR WORK_DIR
#
# 1. The pictures README.md shows from docs/images/readme-* are exactly the ones
#    the script names (--list), and each is in docs/images as a PNG.
# 2. The script, with small runs (--quick), draws each of them anew as a PNG.
set -euo pipefail
source=$1 build=$2 work=$3
fail() { echo "FAIL: $*"; exit 1; }
script=$source/scripts/make-readme-images
png() { [[ -s $1 && $(head -c 8 "$1" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]]; }

listed=$("$script" --list | sort)
shown=$(grep -o 'docs/images/readme-[A-Za-z0-9_.-]*' "$source/README.md" | sed 's|docs/images/||' | sort -u)
[[ -n $listed ]] || fail "make-readme-images --list names no picture"
[[ $listed == "$shown" ]] || fail "README shows [${shown//$'\n'/ }], the script draws [${listed//$'\n'/ }]"
for f in $listed; do
  png "$source/docs/images/$f" || fail "docs/images/$f is not a PNG in the repository"
done
echo "ok: README shows the script's pictures: ${listed//$'\n'/ }"

rm -rf "$work" && mkdir -p "$work"
"$script" --quick --build "$build" --out "$work/out" --work "$work/runs" >"$work/log.txt" 2>&1 ||
  { tail -n 30 "$work/log.txt"; fail "make-readme-images --quick failed"; }
for f in $listed; do
  png "$work/out/$f" || { tail -n 30 "$work/log.txt"; fail "make-readme-images --quick drew no $f"; }
done
echo "ok: make-readme-images --quick draws each of them"
