#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Tensor parallelism against data parallelism at the same rank count, interleaved.

    bench/compare_mesh.py [--app build/default/apps/kpmap-train]
                          [--deck inputs/mlp_wide_tensor_parallel.toml]
                          [--ranks 2] [--rounds 3] [--steps 20] [--smoke]

Runs the deck's training steps on a mesh of 1 x R (data x model: its split
layers over all ranks, every rank on the same samples) and of R x 1 (data
parallel: every rank holds every layer whole and works on its share of the
batch), --rounds rounds of A B B A, one thread per rank. Reported: training
samples per second of the slowest rank, each round's ratio, the median ratio
with its range, and the values each rank sends per step under each mesh
(ring all-reduce: 2 (R - 1) / R of the values reduced), counted from the
deck's layers: what makes one mesh win.

--smoke runs 1 round of 2 steps (no speed is asserted).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import tomllib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
import interleaved  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def run(app: str, deck: str, data: int, model: int, steps: int) -> dict:
    with tempfile.TemporaryDirectory() as d:
        cmd = ["mpiexec", "--oversubscribe", "-n", str(data * model), app, deck, "--output", d,
               "--set", f"train.mesh.data={data}", "--set", f"train.mesh.model={model}",
               "--set", f"train.max_steps={steps}", "--set", "train.log_every=0",
               "--set", "output.checkpoints=false"]
        subprocess.run(cmd, env=interleaved.MPI_ENV, check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(d, "result.json")) as f:
            return json.load(f)


def volumes(deck: dict, ranks: int) -> dict:
    """Values each rank sends per step (ring all-reduce) on 1 x R and R x 1."""
    width = deck["data"]["features"]
    batch = deck["train"]["batch_size"]
    ring = 2 * (ranks - 1) / ranks
    whole = tensor = 0.0
    first = True
    for layer in deck["model"]["layers"]:
        if layer["type"] != "dense":
            continue
        units = layer["units"]
        params = units * width + units
        whole += params  # data parallel: every gradient is summed over the ranks
        kind = layer.get("parallel", "none")
        if kind == "row":
            tensor += batch * units  # its output, summed over "model" forward
        elif kind == "column" and not first:
            tensor += batch * width  # its input gradient, summed over "model" backward
        width = units
        first = False
    return {"data_parallel": ring * whole, "tensor_parallel": ring * tensor}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--app", default=os.path.join(ROOT, "build/default/apps/kpmap-train"))
    ap.add_argument("--deck", default=os.path.join(ROOT, "inputs/mlp_wide_tensor_parallel.toml"))
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    if a.smoke:
        a.rounds, a.steps = 1, 2
    for f in (a.app, a.deck):
        if not os.path.exists(f):
            print(f"compare_mesh.py: {f} is missing (build the project first)", file=sys.stderr)
            return 2
    with open(a.deck, "rb") as f:
        deck = tomllib.load(f)
    n = a.ranks
    log = lambda m: print(m, flush=True)  # noqa: E731
    names = (f"1 x {n} (tensor parallel)", f"{n} x 1 (data parallel)")
    log(f"{a.rounds} round(s) of {names[0]}, {names[1]} x 2, {names[0]}; {a.steps} steps a run:")
    r = interleaved.interleave(a.rounds, lambda: run(a.app, a.deck, 1, n, a.steps),
                               lambda: run(a.app, a.deck, n, 1, a.steps),
                               "samples_per_second", log, names)
    v = volumes(deck, n)
    print(f"\n| ranks | {names[0]} samples/s | {names[1]} samples/s | ratio | per round |")
    print("|---:|---:|---:|---:|---|")
    print(f"| {n} | {interleaved.fmt(r['kpmap'])} | {interleaved.fmt(r['peer'])} | "
          f"**{r['ratio']['median']:.2f} ({r['ratio']['min']:.2f}-{r['ratio']['max']:.2f})** | "
          f"{', '.join(f'{x:.2f}' for x in r['ratios'])} |")
    print(f"\nvalues each rank sends per step: tensor parallel {v['tensor_parallel']:,.0f}, "
          f"data parallel {v['data_parallel']:,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
