#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Run a command that writes a Chrome trace, then check the trace.

usage: check_trace.py --trace FILE --ranks N [--require NAME ...] [--env]
                      [--arrived-before-wait SOLVER] -- COMMAND...

(--ranks 0: the N of COMMAND's `mpiexec -n N`.)

Removes FILE, runs COMMAND (with KPMAP_TRACE=FILE in its environment when --env is
given), then checks that FILE is one JSON document in Chrome's trace-event format with:
- one process per rank (pid 0 .. N-1, named "rank R"), each with a "compute" and a
  "communication" track;
- every required event name (a trailing * makes it a prefix) on every rank;
- every collective event (a name with "[axis]") on the communication track, with its
  axis and bytes, and the path MPI took for a View or number ("direct", "staged", "host");
- on each track, events that nest (none starts inside another and ends after it);
- with --arrived-before-wait SOLVER (kpmap::sim::pipecg): iterations (SOLVER::iteration)
  in which the non-blocking global sum was found complete (SOLVER::sums_arrived) before
  the host waited for it (SOLVER::sum_wait): it moved on while the operator ran. Only a
  rank that started its sum after the others can find it complete (the others' parts are
  in flight already), so which rank sees it depends on which is late: the count is over
  all ranks, at least a tenth of a rank's iterations. Prints each rank's share.
"""
import argparse
import json
import os
import subprocess
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--trace", required=True)
    p.add_argument("--ranks", type=int, required=True)
    p.add_argument("--require", action="append", default=[])
    p.add_argument("--env", action="store_true")
    p.add_argument("--arrived-before-wait", default=None)
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    command = a.command[1:] if a.command and a.command[0] == "--" else a.command
    if a.ranks == 0:  # the rank count mpiexec is given
        for flag in ("-n", "-np"):
            if flag in command:
                a.ranks = int(command[command.index(flag) + 1])
        if a.ranks == 0:
            a.ranks = 1
    if os.path.exists(a.trace):
        os.remove(a.trace)
    if a.env:  # KPMAP_TRACE creates no folder: the test makes the trace's
        os.makedirs(os.path.dirname(os.path.abspath(a.trace)), exist_ok=True)
    env = dict(os.environ)
    if a.env:
        env["KPMAP_TRACE"] = a.trace
    rc = subprocess.run(command, env=env).returncode
    if rc != 0:
        print(f"FAIL: the command exited with {rc}")
        return 1
    try:
        with open(a.trace, encoding="utf-8") as f:
            events = json.load(f)["traceEvents"]
    except (OSError, ValueError, KeyError) as e:
        print(f"FAIL: {a.trace} is not a Chrome trace: {e}")
        return 1
    problems = []
    names = {(e["pid"], e.get("tid")): e["args"]["name"] for e in events if e["ph"] == "M"
             and e["name"] in ("process_name", "thread_name")}
    for r in range(a.ranks):
        if names.get((r, None)) != f"rank {r}":
            problems.append(f"no process named 'rank {r}'")
        if names.get((r, 0)) != "compute" or names.get((r, 1)) != "communication":
            problems.append(f"rank {r} lacks its compute and communication tracks")
    spans = [e for e in events if e["ph"] == "X"]
    pids = {e["pid"] for e in spans}
    if pids != set(range(a.ranks)):
        problems.append(f"events of ranks {sorted(pids)}, expected 0..{a.ranks - 1}")
    for r in range(a.ranks):
        mine = [e["name"] for e in spans if e["pid"] == r]
        for want in a.require:
            hit = any(n.startswith(want[:-1]) if want.endswith("*") else n == want for n in mine)
            if not hit:
                problems.append(f"rank {r} has no event {want}")
    for e in spans:
        if "[" in e["name"]:
            args = e.get("args", {})
            if e["tid"] != 1:
                problems.append(f"collective {e['name']} is not on the communication track")
            if "axis" not in args or ("bytes" not in args):
                problems.append(f"collective {e['name']} lacks its axis or bytes: {args}")
            if "path" in args and args["path"] not in ("direct", "staged", "host"):
                problems.append(f"collective {e['name']} has path {args['path']!r}")
        if e["dur"] < 0:
            problems.append(f"negative duration: {e}")
    for track in {(e["pid"], e["tid"]) for e in spans}:
        open_ends = []
        for e in sorted((e for e in spans if (e["pid"], e["tid"]) == track),
                        key=lambda e: (e["ts"], -e["dur"])):
            while open_ends and open_ends[-1] <= e["ts"] + 1e-3:
                open_ends.pop()
            end = e["ts"] + e["dur"]
            if open_ends and end > open_ends[-1] + 1e-3:
                problems.append(f"{e['name']} on rank {track[0]} overlaps its enclosing event")
                break
            open_ends.append(end)
    if a.arrived_before_wait:
        prefix = a.arrived_before_wait
        seen = iterations = 0
        for r in range(a.ranks):
            mine = [e for e in spans if e["pid"] == r]
            early = total = 0
            for it in (e for e in mine if e["name"] == prefix + "::iteration"):
                lo, hi = it["ts"], it["ts"] + it["dur"]
                inside = [e for e in mine if lo <= e["ts"] <= hi]
                waits = [e["ts"] for e in inside if e["name"] == prefix + "::sum_wait"]
                arrived = [e["ts"] + e["dur"] for e in inside
                           if e["name"] == prefix + "::sums_arrived"]
                if waits:
                    total += 1
                    early += any(t <= min(waits) for t in arrived)
            print(f"rank {r}: the sum arrived during the operator in {early} of {total} "
                  f"iterations")
            seen += early
            iterations = max(iterations, total)
        if iterations == 0 or seen < 0.1 * iterations:
            problems.append(f"the sum arrived before its wait in {seen} iterations over all "
                            f"ranks, fewer than a tenth of {iterations}")
    for problem in sorted(set(problems))[:20]:
        print(f"FAIL: {problem}")
    if not problems:
        print(f"trace: {len(spans)} events from {a.ranks} rank(s), tracks named, collectives "
              f"annotated, events nested")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
