#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Pins what the apps leave behind, so that moving the code that writes it
changes nothing a user's scripts read: the result file's keys and the type of
each value, the CSV table's columns and rows, the files in the output folder
(checkpoint names included) and the exit codes.

  check_outputs.py heat --launcher "mpiexec -n {n}" --app kpmap-heat \
      --inputs inputs --workdir DIR
  check_outputs.py train --launcher ... --app kpmap-train --inputs inputs --workdir DIR

A type is "int" (a JSON integer), "num" (any JSON number: a double that
happens to be whole may be written either way), "num?" (a number, or null
for NaN), "str", "bool", a list of one type, or a dict of keys and types.
"""
import argparse
import csv
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

TIMING = {"wall_s": "num"}
for _phase in ("compute", "halo", "collectives", "io", "checkpoint"):
    TIMING.update({f"{_phase}_s": "num", f"{_phase}_min_s": "num", f"{_phase}_mean_s": "num"})

# Every run's result ends with these.
RESULT_END = {"stopped_by": "str", "checkpoint": "str", "timing": TIMING}

HEAT_RESULT = {
    "app": "str", "kpmap_version": "str", "deck": "str", "restart": "str", "ranks": "int",
    "nodes": "int", "decomposition": "str", "dimensions": "int", "cells": ["int"], "scheme": "str",
    "solver": "str", "preconditioner": "str", "step": "int", "steps_run": "int",
    "time": "num", "dt": "num", "volume": "num", "mass": "num", "density": "num",
    "energy": "num", "u": "num", "total_iterations": "int", "total_inner_iterations": "int",
    "last_error": "num", **RESULT_END,
}
HEAT_TEST_PROBLEM = {
    "number": "int", "expected_u": "num", "difference_percent": "num",
    "tolerance_percent": "num", "passed": "bool",
}
HEAT_CSV = "step,time,volume,mass,density,energy,u,iterations,error,wall_s".split(",")

TRAIN_COMMON = {
    "app": "str", "kpmap_version": "str", "deck": "str", "ranks": "int", "nodes": "int",
    "model": "str",
    "precision": "str", "parameters": "int",
    "state_bytes_per_rank": {"sharding": "str", "parameters": "int", "gradients": "int",
                             "optimizer": "int"},
    "train_samples": "int",
    "validation_samples": "int", "epochs": "int", "train_loss": "num?", "val_loss": "num?",
    "samples_per_second": "num?", **RESULT_END,
}
TRAIN_CLASSES = {
    "accuracy": "num?", "train_accuracy": "num?", "test_accuracy": "num?", "test_loss": "num?",
    "test_set": "str", "confusion": ["int"],
}
TRAIN_LINEAR = {
    "params": {"w": ["num"], "b": "num"}, "true_params": {"w": ["num"], "b": "num"},
}
TRAIN_CSV = "epoch,train_loss,val_loss,accuracy,samples_per_second,wall_s,train_accuracy".split(",")
# steps.csv: a row per logged step (train.log_every), by default where a run
# plans fewer than 10 epochs.
STEPS_CSV = "step,epoch,batch,batches,loss,accuracy,samples_per_second,wall_s".split(",")


def logged_steps(epochs, per_epoch):
    """The steps train.log_every's default logs in `epochs` epochs of `per_epoch`
    steps: every ceil(S / (16 - E))th of the S steps, under 10 epochs."""
    if epochs >= 10:
        return []
    total = epochs * per_epoch
    every = -(-total // (16 - epochs))
    return list(range(every, total + 1, every))

failures = []


def fail(msg):
    failures.append(msg)
    print("FAILED: " + msg)


def is_type(value, spec):
    if isinstance(spec, dict):
        return isinstance(value, dict)
    if isinstance(spec, list):
        return isinstance(value, list) and all(is_type(v, spec[0]) for v in value)
    if spec == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if spec in ("num", "num?"):
        if value is None:
            return spec == "num?"
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if spec == "str":
        return isinstance(value, str)
    if spec == "bool":
        return isinstance(value, bool)
    raise ValueError(spec)


def check_object(where, obj, spec):
    """The keys of `obj` are exactly those of `spec`, each of its type."""
    if set(obj) != set(spec):
        missing = sorted(set(spec) - set(obj))
        extra = sorted(set(obj) - set(spec))
        fail(f"{where}: keys differ: missing {missing}, unexpected {extra}")
    for key, kind in spec.items():
        if key not in obj:
            continue
        if not is_type(obj[key], kind):
            fail(f"{where}: '{key}' is {obj[key]!r}, expected {kind}")
        elif isinstance(kind, dict):
            check_object(f"{where}.{key}", obj[key], kind)


def run(args, n, cmd, expect):
    full = shlex.split(args.launcher.format(n=n)) + [args.app] + cmd
    print("$ " + " ".join(full), flush=True)
    p = subprocess.run(full, capture_output=True, text=True)
    if p.returncode != expect:
        print(p.stdout[-3000:])
        print(p.stderr[-3000:])
        fail(f"{' '.join(cmd)}: exit code {p.returncode}, expected {expect}")
    return p


def check_folder(out, files):
    """The output folder holds exactly `files` (names, or regexes for checkpoints)."""
    have = sorted(os.listdir(out)) if os.path.isdir(out) else []
    if have != sorted(files):
        fail(f"{out}: files {have}, expected {sorted(files)}")


def check_csv(path, header, first_column):
    """The table's header, and its first column (the step or epoch) in order."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except OSError as e:
        fail(f"{path}: {e}")
        return
    if not rows or rows[0] != header:
        fail(f"{path}: header {rows[0] if rows else None}, expected {header}")
        return
    column = [int(r[0]) for r in rows[1:]]
    if column != first_column:
        fail(f"{path}: first column {column}, expected {first_column}")
    for r in rows[1:]:
        if len(r) != len(header):
            fail(f"{path}: row {r} has {len(r)} fields, the header {len(header)}")


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: {e}")
        return {}


# Every run's folder holds these, by the same names for every app
# (kpmap/run/output_keys.hpp), and its checkpoints.
RUN_FILES = ["result.json", "history.csv", "deck.toml"]


def check_run(args, what, n, cmd, checkpoints, result_spec, csv_header, rows, steps=None):
    """Runs `cmd` on `n` ranks into the folder it names with --output, then
    checks the folder holds the run files and exactly `checkpoints`, the
    result's keys and types, and the table's header and first column; and
    where `steps` are given, steps.csv with a row for each of them."""
    out = cmd[cmd.index("--output") + 1]
    run(args, n, cmd, 0)
    check_folder(out, RUN_FILES + checkpoints + (["steps.csv"] if steps else []))
    result = load(os.path.join(out, "result.json"))
    check_object(f"{what} result.json", result, result_spec)
    check_csv(os.path.join(out, "history.csv"), csv_header, rows)
    if steps:
        check_csv(os.path.join(out, "steps.csv"), STEPS_CSV, steps)
    return result


def heat(args):
    deck = os.path.join(args.inputs, "heat2d_ci.toml")  # 6 steps, checkpoint_every 3
    out = os.path.join(args.workdir, "heat")
    result = check_run(args, "heat", 3, [deck, "--output", out],
                       ["checkpoint_000003.h5", "checkpoint_000003.xmf", "checkpoint_000006.h5",
                        "checkpoint_000006.xmf"], HEAT_RESULT, HEAT_CSV, list(range(7)))
    if result.get("checkpoint") != os.path.join(out, "checkpoint_000006.h5"):
        fail(f"heat result.json: checkpoint {result.get('checkpoint')!r}")

    # A restart into a new folder: the rest of the steps, and the restart named.
    again = os.path.join(args.workdir, "heat_restart")
    start = os.path.join(out, "checkpoint_000003.h5")
    result = check_run(args, "heat restarted", 2, [deck, "--output", again, "--restart", start],
                       ["checkpoint_000006.h5", "checkpoint_000006.xmf"], HEAT_RESULT, HEAT_CSV,
                       [4, 5, 6])
    if (result.get("restart"), result.get("steps_run")) != (start, 3):
        fail(f"restarted: restart {result.get('restart')!r}, steps_run {result.get('steps_run')}")

    # TeaLeaf's deck with its test problem: the check's own object.
    tea = os.path.join(args.workdir, "tea")
    run(args, 2, [os.path.join(args.inputs, "tea_bm_1.in"), "--output", tea], 0)
    result = load(os.path.join(tea, "result.json"))
    check_object("tea result.json", result,
                 {**HEAT_RESULT, "test_problem": HEAT_TEST_PROBLEM})

    # Exit codes: bad input 2, a wrong published answer 5.
    run(args, 2, [deck, "--output", os.path.join(args.workdir, "bad"), "--set", "time.dt=x"], 2)
    run(args, 2, [os.path.join(args.inputs, "tea_bm_1.in"), "--output",
                  os.path.join(args.workdir, "wrong"), "--set", "end_step=1"], 5)


def train(args):
    out = os.path.join(args.workdir, "mlp")  # 8 epochs, checkpoint_every 4
    check_run(args, "mlp", 2, [os.path.join(args.inputs, "train_mlp_ci.toml"), "--output", out],
              ["checkpoint_000004.h5", "checkpoint_000008.h5"], {**TRAIN_COMMON, **TRAIN_CLASSES},
              TRAIN_CSV, list(range(1, 9)), logged_steps(8, -(-5400 // 128)))

    lin = os.path.join(args.workdir, "linear")
    check_run(args, "linear", 3, [os.path.join(args.inputs, "train_linear_ci.toml"), "--output",
                                  lin, "--set", "train.epochs=5"],
              ["checkpoint_000005.h5"], {**TRAIN_COMMON, **TRAIN_LINEAR}, TRAIN_CSV,
              list(range(1, 6)), logged_steps(5, 1))

    # Cut mid-epoch by max_steps: the position's checkpoint, by its own name.
    cut = os.path.join(args.workdir, "cut")
    run(args, 2, [os.path.join(args.inputs, "train_mlp_ci.toml"), "--output", cut,
                  "--set", "train.max_steps=6"], 0)
    names = sorted(os.listdir(cut))
    if not any(re.fullmatch(r"checkpoint_\d{6}_\d{6}\.h5", n) for n in names):
        fail(f"{cut}: no mid-epoch checkpoint_EEEEEE_SSSSSS.h5 among {names}")

    run(args, 2, [os.path.join(args.inputs, "train_mlp_ci.toml"), "--output",
                  os.path.join(args.workdir, "bad"), "--set", "train.epochs=-1"], 2)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("app_kind", choices=["heat", "train"])
    p.add_argument("--launcher", required=True)
    p.add_argument("--app", required=True)
    p.add_argument("--inputs", required=True)
    p.add_argument("--workdir", required=True)
    args = p.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    {"heat": heat, "train": train}[args.app_kind](args)
    if failures:
        sys.exit(1)
    print(f"{args.app_kind}: outputs as pinned")


if __name__ == "__main__":
    main()
