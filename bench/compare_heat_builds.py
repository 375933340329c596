#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Time one kpmap-heat deck with two builds, interleaved: ms per solver iteration.

usage: compare_heat_builds.py --before BIN --after BIN [--deck DECK] [--ranks N]
                              [--rounds R] [--work DIR] [-- EXTRA kpmap-heat ARGS]

Runs the deck R rounds in the order before, after, after, before (so that a drift in
the machine's speed falls on both alike) and reads each run's result.json: the time
of one outer solver iteration is (wall - io - checkpoint) / total_iterations, where
the wall time is the slowest rank's. Prints each build's median and range, and the
ratio of the medians; fails if the two builds took different iteration counts.

  bench/compare_heat_builds.py --before /tmp/old/build/default/apps/kpmap-heat \\
      --after build/default/apps/kpmap-heat --deck inputs/tea_bm_3.in --ranks 2 --rounds 6
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))


def run_result(binary, deck, ranks, out, extra, launcher=None):
    """Runs the deck (launcher: the words before the program, default mpiexec -n RANKS)
    and returns its result.json."""
    launcher = launcher or ["mpiexec", "-n", str(ranks)]
    cmd = launcher + [str(binary), str(deck), "--output", str(out),
                      "--set", "output.progress_every=0"] + extra
    done = subprocess.run(cmd, env=ENV, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited with {done.returncode}:\n{done.stdout}{done.stderr}")
    return json.loads((out / "result.json").read_text())


def solve_seconds(s):
    """The slowest rank's time in the solves: wall less I/O and checkpoints."""
    t = s["timing"]
    return t["wall_s"] - t["io_s"] - t["checkpoint_s"]


def run(binary, deck, ranks, out, extra):
    s = run_result(binary, deck, ranks, out, extra)
    return solve_seconds(s) / s["total_iterations"] * 1e3, s["total_iterations"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--before", required=True, type=Path)
    p.add_argument("--after", required=True, type=Path)
    p.add_argument("--deck", type=Path, default=Path("inputs/tea_bm_3.in"))
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--rounds", type=int, default=5, help="each round runs each build twice")
    p.add_argument("--work", type=Path,
                   default=Path(tempfile.gettempdir()) / "kpmap-compare-heat")
    p.add_argument("extra", nargs=argparse.REMAINDER)
    a = p.parse_args()
    extra = a.extra[1:] if a.extra[:1] == ["--"] else a.extra
    times = {"before": [], "after": []}
    iterations = {}
    for r in range(a.rounds):
        for n, name in enumerate(("before", "after", "after", "before")):
            out = a.work / f"{name}_{r}_{n}"
            ms, its = run(getattr(a, name), a.deck, a.ranks, out, extra)
            times[name].append(ms)
            iterations.setdefault(name, its)
            print(f"round {r + 1}: {name:6} {ms:.4f} ms per iteration ({its} iterations)",
                  flush=True)
    if iterations["before"] != iterations["after"]:
        sys.exit(f"the builds took {iterations['before']} and {iterations['after']} iterations")
    med = {k: statistics.median(v) for k, v in times.items()}
    for name, v in times.items():
        print(f"{name:6}: {med[name]:.4f} ({min(v):.4f} - {max(v):.4f}) ms per iteration, "
              f"median (min - max) of {len(v)}")
    print(f"after / before: {med['after'] / med['before']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
