#!/usr/bin/env python3
"""Run a command under tests/support/region_tool and check its Kokkos Tools regions.

usage: check_regions.py --tool LIB --out PREFIX [--ranks N] [--require OUTER>INNER ...]
                        [--labelled REGION ...] -- COMMAND...

Runs COMMAND with the tool loaded (KOKKOS_TOOLS_LIBS and KOKKOS_PROFILE_LIBRARY), then
reads PREFIX.<rank> for each of N ranks and checks, on every rank:
- every region pushed is popped, never more pops than pushes;
- for each --require OUTER>INNER, a region INNER opens somewhere inside a region OUTER
  (a name ending in * is a prefix: "kpmap::psum*" matches "kpmap::psum[devices]");
- inside every --labelled REGION, each kernel and fence carries a label that starts
  with "kpmap::" (or "Kokkos::"/"KokkosBlas", for the kernels that Kokkos' deep_copy and
  View initialisation and Kokkos Kernels' gemm and gemv launch for kpmap).
"""
import argparse
import glob
import os
import subprocess
import sys


# kpmap's own labels, and those Kokkos and Kokkos Kernels give the kernels they
# launch for kpmap (deep_copy, View initialisation, gemm, gemv).
LIBRARY_LABELS = ("kpmap::", "Kokkos::", "KokkosBlas", "KokkosKernels")


def matches(pattern, name):
    return name.startswith(pattern[:-1]) if pattern.endswith("*") else name == pattern


def check_rank(path, requires, labelled):
    problems = []
    stack = []  # open region names
    found = set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            kind, _, rest = line.rstrip("\n").partition(" ")
            depth_text, _, name = rest.partition(" ")
            # A pop is recorded at the depth it returns to.
            if int(depth_text) != len(stack) - (1 if kind == "pop" else 0):
                problems.append(f"depth {depth_text} where {len(stack)} regions are open: {line.strip()}")
                return problems
            if kind == "push":
                for outer, inner in requires:
                    if matches(inner, name) and any(matches(outer, s) for s in stack):
                        found.add((outer, inner))
                stack.append(name)
            elif kind == "pop":
                if not stack:
                    return problems + ["a pop without a push"]
                stack.pop()
            elif kind in ("kernel", "fence"):
                if any(matches(r, s) for r in labelled for s in stack):
                    if not name.startswith(LIBRARY_LABELS):
                        problems.append(f"unlabelled {kind} '{name}' inside {' > '.join(stack)}")
    if stack:
        problems.append(f"regions never closed: {' > '.join(stack)}")
    for pair in requires:
        if pair not in found:
            problems.append(f"no region {pair[1]} inside {pair[0]}")
    return problems


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tool", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--ranks", type=int, default=1)
    p.add_argument("--require", action="append", default=[])
    p.add_argument("--labelled", action="append", default=[])
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    command = a.command[1:] if a.command and a.command[0] == "--" else a.command
    for old in glob.glob(a.out + ".*"):
        os.remove(old)
    env = dict(os.environ, KOKKOS_TOOLS_LIBS=a.tool, KOKKOS_PROFILE_LIBRARY=a.tool,
               KPMAP_REGION_TOOL_OUT=a.out)
    rc = subprocess.run(command, env=env).returncode
    if rc != 0:
        print(f"FAIL: the command exited with {rc}")
        return 1
    requires = [tuple(r.split(">", 1)) for r in a.require]
    failed = False
    for rank in range(a.ranks):
        path = f"{a.out}.{rank}"
        if not os.path.exists(path):
            print(f"FAIL: rank {rank} wrote no {path} (was the tool loaded?)")
            failed = True
            continue
        for problem in check_rank(path, requires, a.labelled):
            print(f"FAIL: rank {rank}: {problem}")
            failed = True
    if not failed:
        print(f"regions: {len(requires)} nestings found and every kernel labelled on "
              f"{a.ranks} rank(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
