# SPDX-License-Identifier: BSD-3-Clause
"""Helpers shared by the apps' checkers (check_heat.py, check_train.py)."""
import json
import shlex
import subprocess
import sys

import numpy as np


def fail(msg: str) -> None:
    """Prints the failure and ends the check with exit code 1."""
    print("FAILED: " + msg)
    sys.exit(1)


def load(path: str) -> dict:
    """An app's JSON output (result.json)."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def rel(a, b) -> float:
    """Relative difference |a - b| / |b| of two numbers or arrays (2-norm)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.linalg.norm(a - b) / max(float(np.linalg.norm(b)), 1e-300))


def run(launcher: str, n: int, cmd: list) -> str:
    """Runs `cmd` on n ranks through a launcher template ("mpiexec -n {n}");
    fails the check, with the program's output, when it exits non-zero."""
    full = shlex.split(launcher.format(n=n)) + cmd
    print("$ " + " ".join(full), flush=True)
    p = subprocess.run(full, capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stdout[-3000:])
        print(p.stderr[-3000:])
        fail(f"exit code {p.returncode}")
    return p.stdout
