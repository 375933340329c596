# SPDX-License-Identifier: BSD-3-Clause
"""What bench/compare_torch_*.py share: rounds of kpmap and its peer run
interleaved (kpmap, peer, peer, kpmap), the ratio of each round, and the
median with its range. Only a ratio within a round means anything on a shared
machine, whose speed drifts between minutes; the median of the rounds' ratios
is what docs/performance.md quotes.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
from typing import Callable, Dict, List

# Open MPI as root, one thread per rank (OpenBLAS and OpenMP alike).
MPI_ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")

# ctest's code for a skipped test (SKIP_RETURN_CODE): the smoke tests skip
# where python3-torch is missing; run by hand, a missing peer is an error (2).
SKIPPED = 77


def require(smoke: bool, files: List[str]) -> int:
    """0 if PyTorch, mpiexec and `files` are there, else the exit code to end with."""
    try:
        import torch  # noqa: F401
    except ImportError:
        print("PyTorch is missing: apt install python3-torch (scripts/install-deps installs it), "
              "and run this with /usr/bin/python3", file=sys.stderr)
        return SKIPPED if smoke else 2
    missing = [f for f in files if not os.path.exists(f)]
    if not shutil.which("mpiexec") or missing:
        print(f"need mpiexec and {', '.join(missing) or 'nothing else'} (build the project "
              "first; scripts/install-deps installs the data)", file=sys.stderr)
        return 2
    return 0


def spread(values: List[float]) -> Dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def interleave(rounds: int, kpmap: Callable[[], dict], peer: Callable[[], dict],
               key: str, log: Callable[[str], None], names=("kpmap", "PyTorch")) -> Dict:
    """`rounds` rounds of kpmap, peer, peer, kpmap. Each call returns a dict
    with `key` (a rate: higher is faster). A round's ratio is kpmap's mean
    rate over the peer's; returned: every run, each round's ratio, and the
    median and range of the ratios and of each side's rates."""
    runs: List[Dict] = []
    ratios: List[float] = []
    for r in range(rounds):
        k1 = kpmap()
        p1 = peer()
        p2 = peer()
        k2 = kpmap()
        k = (k1[key] + k2[key]) / 2
        p = (p1[key] + p2[key]) / 2
        ratios.append(k / p)
        runs.append({"kpmap": [k1, k2], "peer": [p1, p2]})
        log(f"  round {r + 1}: {names[0]} {k1[key]:,.0f}, {k2[key]:,.0f}; {names[1]} "
            f"{p1[key]:,.0f}, {p2[key]:,.0f}; ratio {k / p:.2f}")
    return {
        "runs": runs,
        "ratios": ratios,
        "ratio": spread(ratios),
        "kpmap": spread([x[key] for run in runs for x in run["kpmap"]]),
        "peer": spread([x[key] for run in runs for x in run["peer"]]),
    }


def fmt(s: Dict[str, float], digits: int = 0) -> str:
    """'1 234 (1 100-1 300)': a median and its range."""
    def one(v: float) -> str:
        return f"{v:,.{digits}f}".replace(",", " ")
    return f"{one(s['median'])} ({one(s['min'])}-{one(s['max'])})"


def benchmark_json(cmd: List[str]) -> List[Dict]:
    """The `benchmarks` of a Google Benchmark run with --benchmark_format=json."""
    p = subprocess.run(cmd + ["--benchmark_format=json"], capture_output=True, text=True,
                       env=MPI_ENV, check=True)
    return json.loads(p.stdout[p.stdout.index("{"):])["benchmarks"]
