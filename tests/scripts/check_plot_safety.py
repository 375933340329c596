#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""kpmap-plot as careful as the apps, tried as a hostile user would: each case
makes a run folder (or trace) by hand, runs kpmap-plot on it under a time
limit, and checks its exit code, that it says in one line what is wrong with
which file (no traceback), and that nothing outside the folder changed.

  check_plot_safety.py --plot scripts/kpmap-plot --workdir DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

failures = []


def fail(msg):
    failures.append(msg)
    print("FAILED: " + msg, flush=True)


def plot(args, target, expect, says=None, extra=()):
    cmd = [sys.executable, args.plot, *([target] if isinstance(target, str) else target), *extra]
    print("$ " + " ".join(cmd), flush=True)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        fail(f"{target}: still running after 60 s")
        return
    out = p.stdout + p.stderr
    if p.returncode != expect:
        print(out[-2000:])
        fail(f"{target}: exit code {p.returncode}, expected {expect}")
    if "Traceback" in out:
        print(out[-2000:])
        fail(f"{target}: a Python traceback rather than a message")
    if says is not None and says not in out:
        print(out[-2000:])
        fail(f"{target}: the output does not say '{says}'")


def heat_folder(args, name, u=None, step=3, table=None):
    d = os.path.join(args.workdir, name)
    os.makedirs(d)
    with open(os.path.join(d, "history.csv"), "w", encoding="utf-8") as f:
        f.write(table if table is not None else
                "step,time,u,error\n0,0,1,0\n1,0.1,1,1e-9\n2,0.2,1,2e-9\n")
    with h5py.File(os.path.join(d, "checkpoint_000003.h5"), "w") as f:
        if callable(u):
            u(f)
        else:
            f.create_dataset("fields/u", data=np.ones((6, 8)) if u is None else u)
        f.attrs["step"] = step
    return d


def train_folder(args, name, steps):
    """A kpmap-train run of 2 epochs whose steps.csv is `steps` (bytes)."""
    d = os.path.join(args.workdir, name)
    os.makedirs(d)
    with open(os.path.join(d, "history.csv"), "w", encoding="utf-8") as f:
        f.write("epoch,train_loss,val_loss,accuracy\n1,0.5,0.6,0.7\n2,0.4,0.5,0.8\n")
    with open(os.path.join(d, "steps.csv"), "wb") as f:
        f.write(steps)
    return d


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--plot", required=True)
    p.add_argument("--workdir", required=True)
    args = p.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    victim = os.path.join(args.workdir, "victim.txt")
    with open(victim, "w", encoding="utf-8") as f:
        f.write("someone else's\n")

    # The harness itself: a good folder gives its picture.
    good = heat_folder(args, "good")
    plot(args, good, 0, says="plot written to")
    if not os.path.isfile(os.path.join(good, "field.png")):
        fail("a good folder got no field.png")

    # The picture's name is a link to a file elsewhere, or a FIFO: refused, left.
    d = heat_folder(args, "png_link")
    os.symlink(os.path.abspath(victim), os.path.join(d, "field.png"))
    plot(args, d, 2, says="field.png: it is a symbolic link")
    with open(victim, encoding="utf-8") as f:
        if f.read() != "someone else's\n":
            fail("the picture was written through a link")
    # A FIFO named like a checkpoint or as the table: refused at once, never read.
    d = heat_folder(args, "fifo_checkpoint")
    os.mkfifo(os.path.join(d, "checkpoint_999999.h5"))
    plot(args, d, 2, says="checkpoint_999999.h5: it is a FIFO")
    d = os.path.join(args.workdir, "fifo_table")
    os.makedirs(d)
    os.mkfifo(os.path.join(d, "history.csv"))
    plot(args, d, 2, says="history.csv: it is a FIFO")

    # Damaged results.
    plot(args, heat_folder(args, "short_rows", table="step,time,u,error\n0,0\n1,0.1,1\n"), 2,
         says="history.csv: line 2 has 2 fields and the header 4")
    plot(args, heat_folder(args, "one_d", u=np.ones(5)), 2, says="fields/u has shape (5,)")
    plot(args, heat_folder(args, "array_step", step=np.array([1, 2])), 2,
         says="its step attribute is [1, 2]")
    # A field of other values than floating-point numbers: named, exit 2.
    for name, data, kind in (("complex", np.ones((4, 4), dtype=complex), "complex128"),
                             ("strings", np.array([[b"ab", b"cd"], [b"ef", b"gh"]]), "|S2"),
                             ("compound", np.zeros((3, 3), dtype=[("a", "f8"), ("b", "i4")]),
                              "values; a kpmap-heat checkpoint holds floating-point numbers")):
        plot(args, heat_folder(args, f"u_{name}", u=data), 2,
             says=f"checkpoint_000003.h5: fields/u holds {kind}" if name != "compound"
             else kind)
    # A field too large for memory, never written (all fill value): drawn from
    # every k-th cell, not read whole (it was a MemoryError).
    huge = heat_folder(args, "u_sparse", u=lambda f: f.create_dataset(
        "fields/u", shape=(200000, 200000), dtype="f8", chunks=(1000, 1000), fillvalue=1.0))
    plot(args, huge, 0, says="plot written to")
    # A step log that cannot be drawn: named with its line, exit 2 (it was
    # "kpmap: no plot: 'batch'" and exit 0).
    head = b"step,epoch,batch,batches,loss,accuracy,samples_per_second,wall_s\n"
    plot(args, train_folder(args, "steps_no_batch",
                            b"step,epoch,loss\n1,1,0.5\n"), 2,
         says="steps.csv: no column 'batch' (its header has step, epoch, loss)")
    plot(args, train_folder(args, "steps_batch_x", head + b"1,1,1,4,0.5,0.5,10,1\n2,1,x,4,0.4,0.5,10,2\n"),
         2, says="steps.csv: line 3: batch is 'x', not a number")
    plot(args, train_folder(args, "steps_not_utf8", head + b"1,1,1,4,0.5,0.5,10,1\xff\n"), 2,
         says="steps.csv: line 2: byte 86 is not UTF-8 text")
    for name, doc, says in (("five", 5, "not a trace"), ("list", [1, 2, 3], "event 0 is 1"),
                            ("pid", [{"ph": "X", "pid": [1], "tid": 0, "ts": 0, "dur": 1,
                                      "name": "a"}], "event 0's pid is [1]"),
                            ("name", [{"ph": "X", "pid": 0, "tid": 0, "ts": 0, "dur": 1,
                                       "name": 5}], "event 0's name is 5"),
                            ("not_json", None, "not JSON")):
        path = os.path.join(args.workdir, f"trace_{name}.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write("{" if doc is None else json.dumps(doc))
        plot(args, ["trace", path], 2, says=says)
    trace_link = os.path.join(args.workdir, "trace_link.json")
    os.symlink(os.path.abspath(victim), trace_link)
    plot(args, ["trace", trace_link], 2, says="trace_link.json: it is a symbolic link")
    if failures:
        sys.exit(1)
    print("kpmap-plot: as promised")


if __name__ == "__main__":
    main()
