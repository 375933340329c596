#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Run a command under tests/support/region_tool and check its Kokkos Tools regions.

usage: check_regions.py --tool LIB --out PREFIX [--ranks N] [--require OUTER>INNER ...]
                        [--forbid OUTER>INNER ...] [--order A<B<... ...]
                        [--labelled REGION ...] -- COMMAND...

Runs COMMAND with the tool loaded (KOKKOS_TOOLS_LIBS and KOKKOS_PROFILE_LIBRARY), then
reads PREFIX.<rank> for each of N ranks and checks, on every rank:
- every region pushed is popped, never more pops than pushes;
- for each --require OUTER>INNER, a region or kernel INNER opens somewhere inside a
  region OUTER (a name ending in * is a prefix: "kpmap::psum*" matches
  "kpmap::psum[devices]"); for each --forbid OUTER>INNER, none does;
- for each --order A<B<..., the first A (a region from its push to its pop, or a
  kernel) has ended before the first B that follows it begins, and so on: e.g. a
  kernel that runs between two regions, outside both;
- inside every --labelled REGION, each kernel and fence carries a label that starts
  with "kpmap::" or "kpmap: " (a fence's reason), or "Kokkos::"/"KokkosBlas" (for the
  kernels that Kokkos' deep_copy and View initialisation and Kokkos Kernels' gemm and
  gemv launch for kpmap).
"""
import argparse
import glob
import os
import subprocess
import sys


# kpmap's own labels, and those Kokkos and Kokkos Kernels give the kernels they
# launch for kpmap (deep_copy, View initialisation, gemm, gemv).
LIBRARY_LABELS = ("kpmap::", "kpmap: ", "Kokkos::", "KokkosBlas", "KokkosKernels")


def matches(pattern, name):
    return name.startswith(pattern[:-1]) if pattern.endswith("*") else name == pattern


def check_order(events, order):
    """Problems with one --order chain over a rank's (kind, depth, name) events."""
    at = 0
    for name in order:
        while at < len(events) and not (events[at][0] in ("push", "kernel")
                                        and matches(name, events[at][2])):
            at += 1
        if at == len(events):
            return [f"--order {'<'.join(order)}: no {name} where the chain needs it"]
        kind, depth, _ = events[at]
        at += 1
        if kind == "push":  # the region ends at the pop back to its depth
            while at < len(events) and not (events[at][0] == "pop" and events[at][1] == depth):
                at += 1
            at += 1
    return []


def check_rank(path, requires, labelled, forbids=(), orders=()):
    problems = []
    stack = []  # open region names
    found = set()
    events = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            kind, _, rest = line.rstrip("\n").partition(" ")
            depth_text, _, name = rest.partition(" ")
            if kind == "reduce":  # a kernel as far as regions go
                kind = "kernel"
            events.append((kind, int(depth_text), name))
            # A pop is recorded at the depth it returns to.
            if int(depth_text) != len(stack) - (1 if kind == "pop" else 0):
                problems.append(f"depth {depth_text} where {len(stack)} regions are open: {line.strip()}")
                return problems
            if kind in ("push", "kernel"):
                for outer, inner in list(requires) + list(forbids):
                    if matches(inner, name) and any(matches(outer, s) for s in stack):
                        found.add((outer, inner))
            if kind == "push":
                stack.append(name)
            elif kind == "pop":
                if not stack:
                    return problems + ["a pop without a push"]
                stack.pop()
            elif kind in ("kernel", "fence", "gfence"):
                if any(matches(r, s) for r in labelled for s in stack):
                    if not name.startswith(LIBRARY_LABELS):
                        problems.append(f"unlabelled {kind} '{name}' inside {' > '.join(stack)}")
    if stack:
        problems.append(f"regions never closed: {' > '.join(stack)}")
    for pair in requires:
        if pair not in found:
            problems.append(f"no region or kernel {pair[1]} inside {pair[0]}")
    for pair in forbids:
        if pair in found:
            problems.append(f"{pair[1]} inside {pair[0]}, which must not hold it")
    for order in orders:
        problems += check_order(events, order)
    return problems


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tool", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--ranks", type=int, default=1)
    p.add_argument("--require", action="append", default=[])
    p.add_argument("--forbid", action="append", default=[])
    p.add_argument("--order", action="append", default=[])
    p.add_argument("--labelled", action="append", default=[])
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    command = a.command[1:] if a.command and a.command[0] == "--" else a.command
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    for old in glob.glob(a.out + ".*"):
        os.remove(old)
    env = dict(os.environ, KOKKOS_TOOLS_LIBS=a.tool, KOKKOS_PROFILE_LIBRARY=a.tool,
               KPMAP_REGION_TOOL_OUT=a.out)
    rc = subprocess.run(command, env=env).returncode
    if rc != 0:
        print(f"FAIL: the command exited with {rc}")
        return 1
    requires = [tuple(r.split(">", 1)) for r in a.require]
    forbids = [tuple(r.split(">", 1)) for r in a.forbid]
    orders = [o.split("<") for o in a.order]
    failed = False
    for rank in range(a.ranks):
        path = f"{a.out}.{rank}"
        if not os.path.exists(path):
            print(f"FAIL: rank {rank} wrote no {path} (was the tool loaded?)")
            failed = True
            continue
        for problem in check_rank(path, requires, a.labelled, forbids, orders):
            print(f"FAIL: rank {rank}: {problem}")
            failed = True
    if not failed:
        print(f"regions: {len(requires)} nestings found, {len(forbids)} absent, "
              f"{len(orders)} orders kept and every kernel labelled on {a.ranks} rank(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
