#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Progress lines and pictures at every run length: 1 step, 1 epoch, 50 epochs.

    check_short_runs.py --train APP --heat APP --inputs DIR --launcher T --workdir W

Runs kpmap-train and kpmap-heat on 2 ranks (T: "mpiexec -n {n} ...") and checks:
- the progress lines a run prints by default are those output.progress_every's rule
  names (the first, every ceil(N / 15)th of N planned beyond 20, the last; step lines
  every ceil(S / (16 - E))th of S steps under 10 epochs): about 10 to 20 for any run
  long enough to have them, and every one where the deck asks (output.progress_every = 1);
- steps.csv holds the step lines' figures, history.csv the epoch lines';
- the figure kpmap-plot draws (kpmap.plot.train_figure, heat_figure) plots exactly
  those rows (steps for a run of fewer than 5 epochs, epochs beyond), with an x axis
  that shows every point inside limits at least one unit wide and at least two
  whole-number ticks, and a y range that holds every value; and kpmap-plot writes it.
"""
import argparse
import csv
import math
import os
import re
import shlex
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE, "python"))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from kpmap import plot  # noqa: E402

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print(f"FAIL: {what}")


def run(args, launcher, out, *extra):
    if os.path.exists(out):
        shutil.rmtree(out)
    cmd = shlex.split(launcher.format(n=2)) + [args.app] + list(extra) + ["--output", out]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def cadence_lines(planned, first=0):
    """The lines the default cadence prints over steps first+1 .. first+planned."""
    every = 1 if planned <= 20 else math.ceil(planned / 15)
    last = first + planned
    return sorted({s for s in range(first + 1, last + 1)
                   if s % every == 0 or s == first + 1 or s == last})


def check_axes(name, ax, xs, ys):
    """The axes' first line is (xs, ys), and its limits and ticks show it."""
    line = ax.lines[0]
    got_x = [float(v) for v in line.get_xdata()]
    got_y = [float(v) for v in line.get_ydata()]
    check(got_x == xs, f"{name}: the x values plotted {got_x[:5]}... are the file's {xs[:5]}...")
    check(len(got_y) == len(ys) and all(math.isclose(a, b, rel_tol=1e-12) for a, b in zip(got_y, ys)),
          f"{name}: the y values plotted are the file's")
    lo, hi = ax.get_xlim()
    check(lo <= min(xs) and max(xs) < hi and hi - lo >= 1,
          f"{name}: x limits ({lo:g}, {hi:g}) hold {min(xs):g}..{max(xs):g} and span one unit")
    ticks = [t for t in ax.get_xticks() if lo <= t <= hi]
    check(len(ticks) >= 2 and all(float(t).is_integer() for t in ticks),
          f"{name}: at least two whole-number x ticks inside the limits, got {ticks}")
    ylo, yhi = ax.get_ylim()
    finite = [y for y in ys if y == y]
    check(ylo < yhi and ylo <= min(finite) and max(finite) <= yhi,
          f"{name}: y limits ({ylo:g}, {yhi:g}) hold {min(finite):g}..{max(finite):g}")
    if ax.get_yscale() == "log":
        check(yhi / ylo >= 10, f"{name}: a log axis shows at least a decade ({ylo:g}, {yhi:g})")


def check_picture(name, directory, picture):
    p = subprocess.run([sys.executable, os.path.join(SOURCE, "scripts", "kpmap-plot"), directory],
                       capture_output=True, text=True, timeout=120)
    path = os.path.join(directory, picture)
    check(p.returncode == 0 and os.path.isfile(path) and open(path, "rb").read(8) == b"\x89PNG\r\n\x1a\n",
          f"{name}: kpmap-plot wrote {picture} ({p.stdout.strip()} {p.stderr.strip()})")


def train_case(args, name, expect_source, *keys, deck="train_sgd_ci.toml"):
    out = os.path.join(args.workdir, name)
    args.app = args.train
    stdout = run(args, args.launcher, out, os.path.join(args.inputs, deck), *keys)
    epochs = [int(m.group(1)) for m in re.finditer(r"^epoch (\d+)/\d+ ", stdout, re.M)]
    steps = [(int(m.group(1)), float(m.group(2)))
             for m in re.finditer(r"^step (\d+)  epoch \d+  \d+/\d+  loss (\S+)", stdout, re.M)]
    history = rows(os.path.join(out, "history.csv"))
    steps_csv = os.path.join(out, "steps.csv")
    logged = rows(steps_csv) if os.path.exists(steps_csv) else []
    check([s for s, _ in steps] == [int(r["step"]) for r in logged],
          f"{name}: steps.csv has a row for each step line")
    check(all(math.isclose(l, float(r["loss"]), rel_tol=1e-6) for (_, l), r in zip(steps, logged)),
          f"{name}: steps.csv's losses are the step lines'")
    fig, source, drawn = plot.train_figure(out, plt)
    check(source == expect_source, f"{name}: kpmap-plot draws {expect_source}, not {source}")
    if source == "steps":
        check_axes(name, fig.axes[0], [float(r["step"]) for r in logged],
                   [float(r["loss"]) for r in logged])
    else:
        check_axes(name, fig.axes[0], [float(r["epoch"]) for r in history],
                   [float(r["train_loss"]) for r in history])
    plt.close(fig)
    check_picture(name, out, "loss.png")
    return epochs, [s for s, _ in steps], history


def heat_case(args, name, *keys):
    out = os.path.join(args.workdir, name)
    args.app = args.heat
    stdout = run(args, args.launcher, out, os.path.join(args.inputs, "heat2d_ci.toml"),
                 "--set", "time.end_time=1e9", *keys)
    lines = [int(m.group(1)) for m in re.finditer(r"^step (\d+)/\d+ ", stdout, re.M)]
    fig, drawn = plot.heat_figure(out, plt)
    history = [r for r in rows(os.path.join(out, "history.csv")) if int(r["step"]) > 0]
    check([r["step"] for r in drawn] == [r["step"] for r in history],
          f"{name}: the residual plot draws every step of history.csv")
    check_axes(name, fig.axes[1], [float(r["step"]) for r in history],
               [float(r["error"]) for r in history])
    plt.close(fig)
    check_picture(name, out, "field.png")
    return lines, history


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    for opt in ("--train", "--heat", "--inputs", "--launcher", "--workdir"):
        ap.add_argument(opt, required=True)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)

    # One step: one step line, one epoch line (the epoch cut short), one point.
    epochs, steps, history = train_case(args, "one_step", "steps", "--set", "train.max_steps=1")
    check(steps == [1] and epochs == [1], f"one_step: step lines {steps}, epoch lines {epochs}")
    # One epoch of 38 steps (301 samples, batch 8): step lines every ceil(38 / 15) = 3.
    epochs, steps, history = train_case(args, "one_epoch", "steps", "--set", "train.epochs=1",
                                        "--set", "train.batch_size=8")
    check(steps == list(range(3, 38, 3)) and epochs == [1],
          f"one_epoch: step lines {steps} (every 3rd), epoch lines {epochs}")
    check(10 <= len(steps) + len(epochs) <= 20, "one_epoch: 10 to 20 progress lines")
    # One epoch without a step log: its one point on a readable axis.
    epochs, steps, history = train_case(args, "one_epoch_no_steps", "epochs", "--set",
                                        "train.epochs=1", "--set", "train.log_every=0")
    check(steps == [] and epochs == [1] and len(history) == 1,
          f"one_epoch_no_steps: step lines {steps}, epoch lines {epochs}")
    # Fifty epochs: no step lines, the first, every 4th and the last epoch.
    epochs, steps, history = train_case(args, "fifty_epochs", "epochs", deck="train_linear.toml")
    check(steps == [] and epochs == cadence_lines(50) and 10 <= len(epochs) <= 20,
          f"fifty_epochs: epoch lines {epochs}, expected {cadence_lines(50)}")
    check(len(history) == 50, "fifty_epochs: history.csv has every epoch")
    # The deck's cadence is kept: every epoch, or none.
    epochs, steps, _ = train_case(args, "every_epoch", "epochs", "--set",
                                  "output.progress_every=1", deck="train_linear.toml")
    check(epochs == list(range(1, 51)), f"every_epoch: {len(epochs)} epoch lines, not 50")
    epochs, steps, _ = train_case(args, "no_lines", "epochs", "--set", "output.progress_every=0",
                                  "--set", "train.log_every=0", deck="train_linear.toml")
    check(epochs == [] and steps == [], "no_lines: no progress lines")

    # kpmap-heat: 90 steps print the first, every 6th and the last; 1 step prints one.
    lines, history = heat_case(args, "heat_90_steps", "--set", "time.end_step=90")
    check(lines == cadence_lines(90) and 10 <= len(lines) <= 20,
          f"heat_90_steps: step lines {lines}, expected {cadence_lines(90)}")
    check(len(history) == 90, "heat_90_steps: history.csv has every step")
    lines, history = heat_case(args, "heat_one_step", "--set", "time.end_step=1")
    check(lines == [1], f"heat_one_step: step lines {lines}")

    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("progress lines and pictures as expected at 1 step, 1 epoch, 50 epochs, 90 steps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
