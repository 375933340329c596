#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""kpmap-heat against TeaLeaf, side by side in one run, and the bandwidth targets.

Builds the two TeaLeaf peers under --work from their source checkouts (never
from this repository), then runs TeaLeaf's bm_3 deck (500 x 500, CG, 10 steps)
with each code at --ranks ranks, one thread per rank, interleaved --repeat
times, and prints the time of one CG iteration of each and kpmap's ratios
against the targets:

  - kpmap-heat <= 0.8 x UoB-HPC/TeaLeaf (C++, OpenMP model, MPI) and
    <= 0.5 x UK-MAC/TeaLeaf_ref (Fortran), per CG iteration;
  - every stencil and vector kernel of a CG iteration >= 0.8 of an in-run
    STREAM-style copy, and the full-batch linear-regression epoch >= 0.7
    (kpmap-bench-heat, kpmap-bench-train: their `of_copy` counters);
  - with --openmp BUILD (a kpmap build against Kokkos with OpenMP), the same
    CG figure at 2 threads x 1 rank and 1 thread x 2 ranks.

The codes stop at different iteration counts (TeaLeaf_ref and kpmap-heat take
the same, UoB's port more), so the figure compared is the time of one CG
iteration: TeaLeaf's final wall clock over its iterations, kpmap-heat's wall
time less I/O and checkpoints over `total_iterations` (result.json).

usage:
  git clone https://github.com/UoB-HPC/TeaLeaf /tmp/src/TeaLeaf
  git clone https://github.com/UK-MAC/TeaLeaf_ref /tmp/src/TeaLeaf_ref
  bench/compare_tealeaf.py --uob /tmp/src/TeaLeaf --ref /tmp/src/TeaLeaf_ref [--repeat 5]

kpmap-heat and the benchmarks come from --kpmap (default build/default: the
build the README's commands make). Needs cmake, make, gfortran and mpif90
(Debian: gfortran, libopenmpi-dev).
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1",
           OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def sh(cmd, cwd=None, env=ENV, log=None):
    """Runs cmd; its output goes to `log` (a path) or is returned."""
    out = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, errors="replace")
    if log:
        Path(log).write_text(out.stdout)
    if out.returncode != 0:
        where = f" (see {log})" if log else ":\n" + out.stdout[-3000:]
        sys.exit(f"compare_tealeaf: `{' '.join(map(str, cmd))}` failed{where}")
    return out.stdout


def build_uob(src, work):
    """UoB-HPC/TeaLeaf, its OpenMP model with MPI, its own Release flags."""
    tree = work / "uob"
    if not (tree / "build" / "omp-tealeaf").exists():
        shutil.rmtree(tree, ignore_errors=True)
        shutil.copytree(src, tree, ignore=shutil.ignore_patterns(".git"))
        sh(["cmake", "-B", "build", "-S", ".", "-DMODEL=omp", "-DENABLE_MPI=ON",
            "-DCMAKE_BUILD_TYPE=Release"], cwd=tree, log=work / "uob-configure.log")
        sh(["cmake", "--build", "build", "-j", str(os.cpu_count() or 2)], cwd=tree,
           log=work / "uob-build.log")
    return tree / "build" / "omp-tealeaf"


def build_ref(src, work):
    """UK-MAC/TeaLeaf_ref with its GNU flags (-O3 -march=native -funroll-loops).
    GCC 10 and later refuse its MPI calls' mixed argument types unless told."""
    tree = work / "ref"
    if not (tree / "tea_leaf").exists():
        shutil.rmtree(tree, ignore_errors=True)
        shutil.copytree(src, tree, ignore=shutil.ignore_patterns(".git"))
        sh(["make", "-j", str(os.cpu_count() or 2), "COMPILER=GNU", "MPI_COMPILER=mpif90",
            "C_MPI_COMPILER=mpicc", "OPTIONS=-fallow-argument-mismatch"], cwd=tree,
           log=work / "ref-build.log")
    return tree / "tea_leaf"


def run_ref(exe, deck, ranks, work):
    run = work / "run-ref"
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir()
    shutil.copy(deck, run / "tea.in")
    sh(["mpiexec", "-n", str(ranks), str(exe)], cwd=run)
    log = (run / "tea.out").read_text()
    counts = [int(c) for c in re.findall(r"Iteration count\s+(\d+)", log)]
    wall = float(re.findall(r"Wall clock\s+([0-9.Ee+-]+)", log)[-1])
    # TeaLeaf_ref prints each step's count one less than the iterations it ran.
    return wall / (sum(counts) + len(counts)), sum(counts) + len(counts)


def run_uob(exe, deck, ranks, work):
    run = work / "run-uob"
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir()
    shutil.copy(deck, run / "tea.in")
    shutil.copy(exe.parent.parent / "tea.problems", run / "tea.problems")
    # The port's own check has no 500 x 500 entry and reports FAILED (exit 1): the
    # timing is what is wanted here. Address randomisation off: at 2 ranks the
    # port has stopped in MPI_Isend (MPI_ERR_BUFFER) with it on. Its output
    # has held a stray byte that is not UTF-8: replaced, not fatal.
    out = subprocess.run(["mpiexec", "-n", str(ranks), "setarch", "-R", str(exe)], cwd=run,
                         env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         errors="replace")
    iterations = sum(int(c) for c in re.findall(r"CG:\s+(\d+) iterations", out.stdout))
    walls = re.findall(r"Wallclock:\s+([0-9.]+)s", out.stdout)
    if not iterations or not walls:
        sys.exit("compare_tealeaf: UoB TeaLeaf printed no CG iterations:\n" + out.stdout[-2000:])
    return float(walls[-1]) / iterations, iterations


def run_kpmap(app, deck, ranks, work, threads=1, extra_env=None, method="cg"):
    out = work / "run-kpmap"
    shutil.rmtree(out, ignore_errors=True)
    env = dict(ENV, OMP_NUM_THREADS=str(threads), **(extra_env or {}))
    # Open MPI binds each of up to 2 ranks to one core: a rank's threads
    # would share it. A threaded rank gets the cores and OpenMP places them.
    bind = ["--bind-to", "none"] if threads > 1 else []
    sh(["mpiexec", "-n", str(ranks), *bind, "-x", "OMP_NUM_THREADS", str(app), str(deck), "--set",
        "output.progress_every=0", "--set", f'solver.method="{method}"', "--output", str(out)],
       env=env)
    s = json.loads((out / "result.json").read_text())
    t = s["timing"]
    solve = t["wall_s"] - t.get("io_s", 0.0) - t.get("checkpoint_s", 0.0)
    return solve / s["total_iterations"], s["total_iterations"]


def bench_counters(exe, ranks, flt):
    """of_copy of each benchmark the filter selects (median of 3 repetitions)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        sh(["mpiexec", "-n", str(ranks), str(exe), f"--benchmark_filter={flt}",
            "--benchmark_repetitions=3", "--benchmark_report_aggregates_only=true",
            f"--benchmark_out={f.name}", "--benchmark_out_format=json"],
           env=dict(ENV, OPENBLAS_NUM_THREADS="1"))
        data = json.loads(Path(f.name).read_text())
    return {b["run_name"]: b["of_copy"] for b in data["benchmarks"]
            if b.get("aggregate_name") == "median" and "of_copy" in b}


def verdict(value, target, at_most):
    if target is None:
        return "(no target: which to run)"
    ok = value <= target if at_most else value >= target
    return "met" if ok else "NOT MET"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    p.add_argument("--uob", required=True, type=Path, help="UoB-HPC/TeaLeaf source checkout")
    p.add_argument("--ref", required=True, type=Path, help="UK-MAC/TeaLeaf_ref source checkout")
    p.add_argument("--kpmap", type=Path, default=ROOT / "build" / "default",
                   help="kpmap build folder (default: build/default)")
    p.add_argument("--openmp", type=Path, help="a kpmap build against Kokkos with OpenMP")
    p.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "kpmap-tealeaf",
                   help="where the peers are built and run (default: /tmp/kpmap-tealeaf)")
    p.add_argument("--deck", type=Path, default=ROOT / "inputs" / "tea_bm_3.in")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--repeat", type=int, default=5, help="interleaved runs of each code")
    p.add_argument("--method", default="cg",
                   help="kpmap-heat's solver.method for the deck's CG (default: cg; cgsr, "
                        "pipecg and fusedcg take CG's iterations)")
    a = p.parse_args()
    for src in (a.uob, a.ref):
        if not src.is_dir():
            sys.exit(f"compare_tealeaf: {src}: no such source checkout (see --help)")
    app = a.kpmap / "apps" / "kpmap-heat"
    if not app.exists():
        sys.exit(f"compare_tealeaf: {app} is missing: build kpmap first (README)")
    a.work.mkdir(parents=True, exist_ok=True)
    print(f"building the peers under {a.work} ...", flush=True)
    uob, ref = build_uob(a.uob.resolve(), a.work), build_ref(a.ref.resolve(), a.work)

    times = {"kpmap-heat": [], "UoB TeaLeaf": [], "TeaLeaf_ref": []}
    iterations = {}
    runs = [("TeaLeaf_ref", lambda: run_ref(ref, a.deck, a.ranks, a.work)),
            ("UoB TeaLeaf", lambda: run_uob(uob, a.deck, a.ranks, a.work)),
            ("kpmap-heat", lambda: run_kpmap(app, a.deck, a.ranks, a.work, method=a.method))]
    for rep in range(a.repeat):
        for name, run in runs:
            t, n = run()
            times[name].append(t)
            iterations[name] = n
        print(f"  round {rep + 1}/{a.repeat}: " +
              ", ".join(f"{k} {1e3 * v[-1]:.3f} ms" for k, v in times.items()), flush=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"\n{a.deck.name}, {a.ranks} ranks x 1 thread, median of {a.repeat} interleaved runs "
          f"(kpmap-heat: solver.method = \"{a.method}\")")
    print(f"{'code':<14} {'ms / CG iteration':>18} {'(min - max)':>17} {'iterations':>11}")
    for k, v in times.items():
        print(f"{k:<14} {1e3 * med[k]:>18.3f} ({1e3 * min(v):.3f} - {1e3 * max(v):.3f}) "
              f"{iterations[k]:>10}")
    rows = [("CG iteration / UoB TeaLeaf", med["kpmap-heat"] / med["UoB TeaLeaf"], 0.8, True),
            ("CG iteration / TeaLeaf_ref", med["kpmap-heat"] / med["TeaLeaf_ref"], 0.5, True)]

    heat = bench_counters(a.kpmap / "bench" / "kpmap-bench-heat", 1, "BM_kernel/2/")
    names = {"0": "operator + p.w", "1": "r -= a w, r.r", "2": "x += a p, p = r + b p",
             "3": "explicit stencil"}
    for run_name, value in sorted(heat.items()):
        n, kind = run_name.split("/")[2:4]
        rows.append((f"kernel {names.get(kind, kind)}, {n}^2 / copy", value, 0.8, False))
    train = bench_counters(a.kpmap / "bench" / "kpmap-bench-train", 1, "BM_linear_epoch")
    for run_name, value in sorted(train.items()):
        rows.append((f"linear epoch {run_name.split('/', 1)[1]} / copy", value, 0.7, False))
    if a.openmp:
        omp_app = a.openmp / "apps" / "kpmap-heat"
        t2, r2 = [], []
        for _ in range(a.repeat):  # interleaved, as above
            t2.append(run_kpmap(omp_app, a.deck, 1, a.work, threads=2,
                                extra_env={"OMP_PROC_BIND": "spread", "OMP_PLACES": "cores"})[0])
            r2.append(run_kpmap(omp_app, a.deck, 2, a.work, threads=1)[0])
        threads2, ranks2 = statistics.median(t2), statistics.median(r2)
        print(f"\nOpenMP build ({a.openmp}), median of {a.repeat}: 2 threads x 1 rank "
              f"{1e3 * threads2:.3f} ms ({1e3 * min(t2):.3f} - {1e3 * max(t2):.3f}), "
              f"1 thread x 2 ranks {1e3 * ranks2:.3f} ms ({1e3 * min(r2):.3f} - "
              f"{1e3 * max(r2):.3f}) per CG iteration")
        rows.append(("2 threads x 1 rank / 1 thread x 2 ranks", threads2 / ranks2, None, True))
    print(f"\n{'figure':<44} {'value':>7} {'target':>8}")
    for name, value, target, at_most in rows:
        bound = "" if target is None else ("<= " if at_most else ">= ") + str(target)
        print(f"{name:<44} {value:>7.2f} {bound:>8}  {verdict(value, target, at_most)}")


if __name__ == "__main__":
    main()
