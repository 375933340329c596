#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Time kpmap-heat's linear solvers on one deck, interleaved: ms per iteration and per step.

usage: compare_solvers.py [--app BIN] [--deck DECK] [--ranks N] [--launcher WORDS]
                          [--methods cg,pipecg,ppcg] [--rounds R] [--work DIR]
                          [-- EXTRA kpmap-heat ARGS]

Runs the deck with each solver.method, R rounds, each round in the order of --methods and
then backwards (A B C C B A: a drift in the machine's speed falls on all alike), and reads
each run's result.json: the time in the solves is the slowest rank's wall time less I/O
and checkpoints; per iteration it is that over total_iterations (PPCG's outer iterations,
each with its inner steps), per step over the steps run. Prints each method's medians with
their range, the ratios of the medians to the first method's, and the largest share of
the wall time a rank spent in global sums and in halo exchanges; fails if a method takes more than
5 % more or fewer iterations than it did in the first round.

--launcher replaces "mpiexec -n N" (the words before the program), for a run across hosts:

  scripts/sim-cluster --hosts 4 -- sh -c 'bench/compare_solvers.py --deck inputs/tea_bm_2.in \\
      --launcher "mpirun --host $KPMAP_SIM_HOSTS -n 4"'
"""
import argparse
import shlex
import statistics
import sys
import tempfile
from pathlib import Path

from compare_heat_builds import run_result, solve_seconds


def summary(values):
    return f"{statistics.median(values):.4f} ({min(values):.4f} - {max(values):.4f})"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--app", type=Path, default=Path("build/default/apps/kpmap-heat"))
    p.add_argument("--deck", type=Path, default=Path("inputs/tea_bm_2.in"))
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--launcher", default=None)
    p.add_argument("--methods", default="cg,pipecg,ppcg")
    p.add_argument("--rounds", type=int, default=2, help="each round runs each method twice")
    p.add_argument("--work", type=Path,
                   default=Path(tempfile.gettempdir()) / "kpmap-compare-solvers")
    p.add_argument("extra", nargs=argparse.REMAINDER)
    a = p.parse_args()
    extra = a.extra[1:] if a.extra[:1] == ["--"] else a.extra
    methods = a.methods.split(",")
    launcher = shlex.split(a.launcher) if a.launcher else None
    per_iteration = {m: [] for m in methods}
    per_step = {m: [] for m in methods}
    waits = {m: [] for m in methods}
    iterations = {}
    for r in range(a.rounds):
        for n, m in enumerate(methods + methods[::-1]):
            s = run_result(a.app, a.deck, a.ranks, a.work / f"{m}_{r}_{n}",
                           extra + ["--set", f"solver.method={m}"], launcher)
            seconds = solve_seconds(s)
            its = s["total_iterations"]
            first = iterations.setdefault(m, its)
            if abs(its - first) > 0.05 * first:
                sys.exit(f"{m} took {its} iterations, {first} in the first round")
            t = s["timing"]
            per_iteration[m].append(seconds / its * 1e3)
            per_step[m].append(seconds / s["steps_run"] * 1e3)
            waits[m].append((t["collectives_s"], t["halo_s"], t["wall_s"]))
            print(f"round {r + 1}: {m:9} {per_iteration[m][-1]:.4f} ms per iteration, "
                  f"{per_step[m][-1]:.2f} ms per step ({its} iterations)", flush=True)
    ref = methods[0]
    print(f"\n{'method':9} {'ms per iteration':>24} {'ms per step':>24} iterations  "
          f"per step / {ref}  global sums  halo")
    for m in methods:
        ratio = statistics.median(per_step[m]) / statistics.median(per_step[ref])
        coll = statistics.median(c / w for c, _, w in waits[m])
        halo = statistics.median(h / w for _, h, w in waits[m])
        print(f"{m:9} {summary(per_iteration[m]):>24} {summary(per_step[m]):>24} "
              f"{iterations[m]:10}  {ratio:14.3f}  {coll:10.0%}  {halo:4.0%}")
    print(f"medians (min - max) of {2 * a.rounds} runs each")
    return 0


if __name__ == "__main__":
    sys.exit(main())
