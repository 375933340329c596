#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Smoke test of scripts/kpmap-scale: a tiny study at 1 and 2 ranks, one
repetition, through the real MPI launcher; then checks that the CSV, JSON,
table and plots are there and that the numbers are sane.

usage: check_scale_smoke.py OUT_DIR KPMAP_SCALE_ARGS...

The arguments name the program, deck, mode and launcher; this script adds
--ranks 1,2 --repeat 1 --out OUT_DIR.
"""
import csv
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent.parent / "scripts" / "kpmap-scale"


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[0])
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, str(SCRIPT), *argv[1:], "--ranks", "1,2", "--repeat", "1",
           "--out", str(out)]
    print("running:", " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, timeout=600)
    problems = []
    if proc.returncode != 0:
        problems.append(f"kpmap-scale exited with code {proc.returncode}")

    def check(ok, what):
        if not ok:
            problems.append(what)

    csv_path = out / "scaling.csv"
    rows = []
    if csv_path.is_file():
        with open(csv_path, newline="") as f:
            rows = list(csv.DictReader(f))
    check([r.get("ranks") for r in rows] == ["1", "2"], f"{csv_path}: rows for ranks 1 and 2")
    for r in rows:
        n = r["ranks"]
        check(r["status"] == "ok", f"ranks {n}: status {r['status']!r}")
        check(r.get("nodes") in ("", "1"), f"ranks {n}: nodes {r.get('nodes')!r} on one host")
        for key in ("wall_s", "speedup", "efficiency"):
            try:
                v = float(r[key])
            except ValueError:
                v = math.nan
            check(math.isfinite(v) and v > 0, f"ranks {n}: {key} = {r[key]!r} is not positive")
        for key in ("compute_s", "halo_s", "collectives_s", "io_s", "comm_share"):
            if r[key] != "":
                check(float(r[key]) >= 0, f"ranks {n}: {key} = {r[key]} is negative")
        if r["comm_share"] != "":
            check(float(r["comm_share"]) <= 1, f"ranks {n}: communication share above 1")
    if rows:
        check(rows[0]["speedup"] == "1.0", f"speedup at 1 rank is {rows[0]['speedup']}, not 1")
        check(rows[0]["efficiency"] == "1.0", f"efficiency at 1 rank is {rows[0]['efficiency']}")

    table = out / "scaling.md"
    text = table.read_text() if table.is_file() else ""
    check("| ranks | nodes | time (s) | speedup | efficiency | communication |" in text,
          f"{table}: no table header")
    check("\n| 1 | " in text and "\n| 2 | " in text, f"{table}: no rows for 1 and 2 ranks")
    try:
        doc = json.loads((out / "scaling.json").read_text())
        check(doc["study"]["ranks"] == [1, 2], "scaling.json: ranks")
    except (OSError, ValueError, KeyError) as e:
        problems.append(f"scaling.json: {e}")
    for name in ("speedup.png", "efficiency.png", "phases.png"):
        p = out / name
        check(p.is_file() and p.stat().st_size > 1000 and p.read_bytes()[:4] == b"\x89PNG",
              f"{p}: not a PNG image")

    if problems:
        print("FAIL:\n  " + "\n  ".join(problems))
        return 1
    print(f"kpmap-scale smoke: OK ({len(rows)} points, table, CSV, JSON and 3 plots in {out})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
