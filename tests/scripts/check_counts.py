#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What one solver iteration costs, counted by a Kokkos Tools library, against bounds.

usage: check_counts.py --tool LIB --out PREFIX --ranks N --region NAME [--inside]
                       --short=ARGS --long=ARGS --expect WHAT(=|<=)NUMBER ... -- COMMAND...

Runs COMMAND twice under tests/support/region_tool (loaded as Kokkos 3.4 and 4.x load
tools): once with the words of --short appended, once with those of --long, which must
make it run the region NAME more times and change nothing else (a tighter tolerance, say:
the same steps and solves, more iterations). "{run}" in COMMAND becomes "short" or "long"
(an output folder of each run's own). Each rank's events over the whole run, less those of
the short run, divided by the extra times NAME ran, are what one NAME costs in the steady
state: whatever the run does once, per step or per solve cancels, and whatever an
iteration does outside its region is still counted. With --inside only the events inside
NAME count: an inner step, whose outer iteration does more around it.

WHAT is one of
  kernels      kernel launches (parallel_for, parallel_reduce and parallel_scan)
  reductions   parallel_reduce launches
  syncs        host synchronisations: fences, with reductions into host values (which
               Kokkos 4 reports as fences, and kpmap reports so under Kokkos 3.4)
  global_fences  fences of every execution space instance (Kokkos::fence), of them
  copies       deep copies, either direction
  allocations  allocations in any memory space
  reduction_waits  times the host waits for a global reduction: a blocking reduction
               (the regions kpmap::psum[...], pmax, pmin, pmean) or the wait for a
               non-blocking one (a solver's region kpmap::sim::<solver>::sum_wait)
and each --expect must hold on every rank (= within 1e-9, or <=). Each rank's line is
followed by the labels of its fences per NAME, most first (the Kokkos Tools callback
gets the label: "kpmap::sim: local sums to the host", or Kokkos' own "HostSpace::
impl_deallocate before free" where freed host memory fences every instance), global
ones marked so: where a fence count comes from.
"""
import argparse
import collections
import glob
import os
import shlex
import subprocess
import sys

KINDS = {
    "kernels": ("kernel", "reduce"),
    "reductions": ("reduce",),
    "syncs": ("fence", "gfence"),
    "global_fences": ("gfence",),
    "copies": ("copy",),
    "allocations": ("alloc",),
    "reduction_waits": (),  # regions, by name (is_reduction_wait)
}
BLOCKING_REDUCTIONS = ("kpmap::psum[", "kpmap::pmax[", "kpmap::pmin[", "kpmap::pmean[")


def is_reduction_wait(name):
    return name.startswith(BLOCKING_REDUCTIONS) or name.endswith("::sum_wait")


def count(path, region, inside):
    """Events of each kind (only those inside `region` when `inside`), and the times
    `region` was entered, in one rank's record."""
    counts = dict.fromkeys(KINDS, 0)
    fences = collections.Counter()  # (global?, label) -> count
    entered = 0
    open_at = None  # the depth `region` was pushed at, while it is open
    with open(path, encoding="utf-8") as f:
        for line in f:
            kind, _, rest = line.rstrip("\n").partition(" ")
            depth, _, name = rest.partition(" ")
            if kind == "push" and name == region and open_at is None:
                entered += 1
                open_at = int(depth)
            elif kind == "pop" and open_at is not None and int(depth) == open_at:
                open_at = None
            if inside and open_at is None:
                continue
            for what, kinds in KINDS.items():
                if kind in kinds:
                    counts[what] += 1
            if kind == "push" and is_reduction_wait(name):
                counts["reduction_waits"] += 1
            if kind in ("fence", "gfence"):
                fences[(kind == "gfence", name)] += 1
    return counts, fences, entered


def run(command, words, tool, out, name):
    prefix = f"{out}.{name}"
    for old in glob.glob(prefix + ".*"):
        os.remove(old)
    env = dict(os.environ, KOKKOS_TOOLS_LIBS=tool, KOKKOS_PROFILE_LIBRARY=tool,
               KPMAP_REGION_TOOL_OUT=prefix)
    argv = [c.replace("{run}", name) for c in command] + words
    print("$", " ".join(shlex.quote(a) for a in argv), flush=True)
    rc = subprocess.run(argv, env=env).returncode
    if rc != 0:
        raise SystemExit(f"FAIL: the {name} run exited with {rc}")
    return prefix


def parse_expect(text):
    for op in ("<=", "="):
        what, sep, number = text.partition(op)
        if sep:
            if what not in KINDS:
                raise SystemExit(f"--expect {text}: {what} is none of {', '.join(KINDS)}")
            return what, op, float(number)
    raise SystemExit(f"--expect {text}: want WHAT=NUMBER or WHAT<=NUMBER")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tool", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--ranks", type=int, default=1)
    p.add_argument("--region", required=True)
    p.add_argument("--short", default="")
    p.add_argument("--long", required=True)
    p.add_argument("--expect", action="append", default=[])
    p.add_argument("--inside", action="store_true",
                   help="count only what happens inside the region (an inner step, whose "
                        "outer iteration does more outside it)")
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    command = a.command[1:] if a.command and a.command[0] == "--" else a.command
    expects = [parse_expect(e) for e in a.expect]
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    prefixes = {name: run(command, shlex.split(words), a.tool, a.out, name)
                for name, words in (("short", a.short), ("long", a.long))}
    failed = False
    for rank in range(a.ranks):
        seen = {}
        for name, prefix in prefixes.items():
            path = f"{prefix}.{rank}"
            if not os.path.exists(path):
                raise SystemExit(f"FAIL: rank {rank} wrote no {path} (was the tool loaded?)")
            seen[name] = count(path, a.region, a.inside)
        extra = seen["long"][2] - seen["short"][2]
        if extra <= 0:
            print(f"FAIL: rank {rank}: the long run entered {a.region} {seen['long'][2]} times, "
                  f"the short one {seen['short'][2]}: no steady state to read")
            failed = True
            continue
        per = {w: (seen["long"][0][w] - seen["short"][0][w]) / extra for w in KINDS}
        print(f"rank {rank}: {extra} more {a.region}; each: " +
              ", ".join(f"{w} {per[w]:.3f}" for w in KINDS))
        fences = seen["long"][1] - seen["short"][1]  # keeps the positive differences
        for (is_global, label), n in fences.most_common(8):
            print(f"  fence{' (global)' if is_global else ''} {n / extra:.3f}: {label}")
        for what, op, bound in expects:
            ok = abs(per[what] - bound) < 1e-9 if op == "=" else per[what] <= bound + 1e-9
            if not ok:
                print(f"FAIL: rank {rank}: {what} per {a.region} is {per[what]:.3f}, "
                      f"want {op} {bound:g}")
                failed = True
    if not failed:
        print("counts: " + ", ".join(a.expect) + f" per {a.region} on {a.ranks} rank(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
