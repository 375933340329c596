#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A stand-in for kpmap-train / kpmap-heat / a Google Benchmark, for testing
kpmap-scale without building or running the real programs.

usage: fake_app.py DECK [--set KEY=VALUE]... --output DIR
       fake_app.py [--benchmark_filter=RE] --benchmark_out=FILE ...

It takes the rank count from the MPI launcher's environment (Open MPI, MPICH)
or from KPMAP_SCALE_RANKS, and only rank 0 writes. The work is data.samples
(a TOML deck), the product of mesh.cells, or x_cells * y_cells (a TeaLeaf
deck), after the --set overrides. Its times are a fixed model of the work, the
rank count and the repetition (KPMAP_SCALE_REPETITION), given by times() so
that a test can compute what the harness must report:

    compute = work * 1e-6 / ranks, collectives = 0.01 * ranks,
    halo = 0.002 * (ranks - 1) for a mesh (0 otherwise), io = 0.001,
    every time multiplied by REPETITION_FACTOR[repetition] (median factor 1).

Keys that change its behaviour, given with --set: fake.fail_ranks=N (exit 3
with a message on stderr at N ranks), fake.no_timing=1 (JSON without
"timing"), fake.report_ranks=N (a wrong "ranks"), fake.sleep=S (sleep S s).
Without --benchmark_filter a benchmark run reports two benchmarks.
"""
import json
import os
import re
import sys
import time
import tomllib

REPETITION_FACTOR = {1: 1.0, 2: 1.5, 3: 0.9}


def times(work, ranks, repetition, mesh):
    f = REPETITION_FACTOR.get(repetition, 1.0)
    phases = {
        "compute_s": f * work * 1e-6 / ranks,
        "halo_s": f * 0.002 * (ranks - 1) if mesh else 0.0,
        "collectives_s": f * 0.01 * ranks,
        "io_s": f * 0.001,
    }
    return dict(phases, wall_s=sum(phases.values()))


def env_int(*names, default):
    for n in names:
        if os.environ.get(n):
            return int(os.environ[n])
    return default


def parse_toml_value(text):
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def main(argv):
    ranks = env_int("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "KPMAP_SCALE_RANKS", default=1)
    rank = env_int("OMPI_COMM_WORLD_RANK", "PMI_RANK", default=0)
    repetition = env_int("KPMAP_SCALE_REPETITION", default=1)

    bench_out = [a.split("=", 1)[1] for a in argv if a.startswith("--benchmark_out=")]
    if bench_out:
        if rank == 0:
            names = ["BM_fake/1024"]
            if not any(a.startswith("--benchmark_filter=") for a in argv):
                names.append("BM_fake/2048")
            runs = [{"name": n, "run_name": n, "run_type": "iteration", "iterations": 10,
                     "real_time": 1000.0 / ranks, "cpu_time": 1000.0 / ranks,
                     "time_unit": "us"} for n in names]
            with open(bench_out[0], "w") as f:
                json.dump({"context": {"ranks": str(ranks)}, "benchmarks": runs}, f)
        return 0

    deck, sets, output = None, {}, None
    i = 0
    while i < len(argv):
        if argv[i] == "--set":
            key, _, value = argv[i + 1].partition("=")
            sets[key] = parse_toml_value(value)
            i += 2
        elif argv[i] == "--output":
            output = argv[i + 1]
            i += 2
        elif argv[i] in ("--hostfile", "--host"):  # a launcher's, as mpirun would take them
            i += 2
        elif deck is None:
            deck = argv[i]
            i += 1
        else:
            print(f"fake: unexpected argument {argv[i]!r}", file=sys.stderr)
            return 2
    if deck is None or output is None:
        print("fake: usage: fake_app.py DECK [--set K=V]... --output DIR", file=sys.stderr)
        return 2

    if sets.get("fake.sleep"):
        time.sleep(float(sets["fake.sleep"]))
    if sets.get("fake.fail_ranks") == ranks:
        print("fake: starting", file=sys.stderr)
        print(f"fake: injected failure at {ranks} ranks", file=sys.stderr)
        return 3

    text = open(deck).read()
    meaningful = [x.split("!")[0].strip() for x in text.splitlines()]
    if [x for x in meaningful if x][:1] == ["*tea"]:
        cells = {k: int(v) for k, v in re.findall(r"(?m)^\s*([xyz]_cells)\s*[= ]\s*(\d+)", text)}
        work, mesh, result = cells["x_cells"] * cells["y_cells"], True, "result.json"
        scaled = cells["x_cells"]
    else:
        data = tomllib.loads(text)
        for key, value in sets.items():
            node = data
            *parents, last = key.split(".")
            for p in parents:
                node = node.setdefault(p, {})
            node[last] = value
        if "mesh" in data:
            cells = data["mesh"]["cells"]
            work, mesh, result, scaled = 1, True, "result.json", cells
            for c in cells:
                work *= c
        else:
            work, mesh, result = data["data"]["samples"], False, "result.json"
            scaled = work

    if rank == 0:
        doc = {"ranks": int(sets.get("fake.report_ranks", ranks)),
               "nodes": int(sets.get("fake.nodes", 1)), "work": work, "scaled": scaled,
               "timing": times(work, ranks, repetition, mesh)}
        if sets.get("fake.no_timing"):
            del doc["timing"]
        os.makedirs(output, exist_ok=True)
        with open(os.path.join(output, result), "w") as f:
            json.dump(doc, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
