#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""kpmap's MLP step against PyTorch on the same model, interleaved.

    bench/compare_torch_mlp.py [--bench build/default/bench/kpmap-bench-train]
                               [--ranks 1,2] [--rounds 3] [--steps 40]
                               [--smoke] [--json FILE]

Model: 784-512-512-10 ReLU MLP in float, softmax cross-entropy, Adam, a
global batch of 256. PyTorch runs with one thread per rank and, at more than
one rank, DistributedDataParallel over gloo with the batch split over the
ranks (as kpmap does), timing --steps steps after 5 for warm-up. kpmap runs
`kpmap-bench-train --benchmark_filter=mlp_step` (the same step on synthetic
data; Google Benchmark picks the step count, for at least --kpmap-time
seconds). Each rank count runs --rounds rounds of kpmap, PyTorch, PyTorch,
kpmap; reported: samples per second, each round's ratio and the median ratio
with its range.

--smoke runs 1 short round as a test that the script works (no speed is
asserted); without python3-torch it exits 77, which ctest counts as skipped.
"""
import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
import interleaved  # noqa: E402

BATCH = 256


def torch_worker(rank: int, world: int, steps: int, port: int, out: str) -> None:
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 10))
    if world > 1:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(port)
        dist.init_process_group("gloo", rank=rank, world_size=world)
        model = torch.nn.parallel.DistributedDataParallel(model)
    local = BATCH // world + (1 if rank < BATCH % world else 0)
    x = torch.randn(local, 784)
    y = torch.randint(0, 10, (local,))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()

    for _ in range(5):
        step()
    if world > 1:
        dist.barrier()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    if world > 1:
        dist.barrier()
    t = time.perf_counter() - t0
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"samples_per_s": steps * BATCH / t}, f)
    if world > 1:
        dist.destroy_process_group()


def run_torch(world: int, steps: int) -> float:
    import torch.multiprocessing as mp
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        port = 29500 + (os.getpid() % 1000)
        if world == 1:
            torch_worker(0, 1, steps, port, out)
        else:
            mp.spawn(torch_worker, args=(world, steps, port, out), nprocs=world, join=True)
        with open(out) as f:
            return json.load(f)["samples_per_s"]


def run_kpmap(bench: str, world: int, seconds: float) -> float:
    cmd = ["mpiexec", "--oversubscribe", "-n", str(world), bench,
           "--benchmark_filter=mlp_step", f"--benchmark_min_time={seconds}"]
    return float(interleaved.benchmark_json(cmd)[0]["samples_per_s"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default="build/default/bench/kpmap-bench-train")
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of kpmap, PyTorch x 2, kpmap")
    ap.add_argument("--steps", type=int, default=40, help="PyTorch's timed steps a run")
    ap.add_argument("--kpmap-time", type=float, default=2.0,
                    help="kpmap's --benchmark_min_time a run (seconds)")
    ap.add_argument("--smoke", action="store_true", help="1 short round: a quick check")
    ap.add_argument("--json", help="write every figure to this file")
    a = ap.parse_args()
    if a.smoke:
        a.rounds, a.steps, a.kpmap_time = 1, 3, 0.01
    code = interleaved.require(a.smoke, [a.bench])
    if code:
        return code
    log = lambda m: print(m, flush=True)  # noqa: E731
    results = {}
    for n in [int(r) for r in a.ranks.split(",")]:
        log(f"{n} rank(s), {a.rounds} round(s) of kpmap, PyTorch, PyTorch, kpmap:")
        results[n] = interleaved.interleave(
            a.rounds, lambda: {"samples_per_s": run_kpmap(a.bench, n, a.kpmap_time)},
            lambda: {"samples_per_s": run_torch(n, a.steps)}, "samples_per_s", log)
    print("\n| ranks | kpmap samples/s | PyTorch samples/s | kpmap / PyTorch | per round |")
    print("|---:|---:|---:|---:|---|")
    for n, r in results.items():
        print(f"| {n} | {interleaved.fmt(r['kpmap'])} | {interleaved.fmt(r['peer'])} | "
              f"**{interleaved.fmt(r['ratio'], 2)}** | "
              f"{', '.join(f'{x:.2f}' for x in r['ratios'])} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
