#!/usr/bin/python3
"""kpmap-train's MLP step against PyTorch on the same model, side by side.

    bench/compare_torch_mlp.py [--bench build/default/bench/kpmap-bench-train]
                               [--ranks 1,2] [--repeat 3] [--steps 40]

Model: 784-512-512-10 ReLU MLP in float, softmax cross-entropy, Adam, a
global batch of 256. PyTorch runs with one thread per rank and, at more than
one rank, DistributedDataParallel over gloo with the batch split over the
ranks (as kpmap does). kpmap runs `kpmap-bench-train --benchmark_filter=mlp_step`.
Both are run alternately `--repeat` times; the median samples/s is reported.

Run by hand (not in CI): it needs Debian's python3-torch (apt install
python3-torch), which the project does not otherwise depend on.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

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


def run_kpmap(bench: str, world: int) -> float:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = ["mpiexec", "--oversubscribe", "-n", str(world), bench,
           "--benchmark_filter=mlp_step", "--benchmark_format=json",
           "--benchmark_min_time=2"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    data = json.loads(p.stdout[p.stdout.index("{"):])
    return float(data["benchmarks"][0]["samples_per_s"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default="build/default/bench/kpmap-bench-train")
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--steps", type=int, default=40)
    a = ap.parse_args()
    try:
        import torch  # noqa: F401
    except ImportError:
        print("PyTorch is missing: apt install python3-torch (run this with /usr/bin/python3)")
        return 2
    if not shutil.which("mpiexec") or not os.path.exists(a.bench):
        print(f"need mpiexec and {a.bench} (build the project first)")
        return 2
    rows = []
    for n in [int(r) for r in a.ranks.split(",")]:
        k, t = [], []
        for _ in range(a.repeat):
            k.append(run_kpmap(a.bench, n))
            t.append(run_torch(n, a.steps))
        km, tm = statistics.median(k), statistics.median(t)
        rows.append((n, km, tm))
        print(f"{n} rank(s): kpmap {km:,.0f} samples/s, PyTorch {tm:,.0f} samples/s, "
              f"kpmap/PyTorch = {km / tm:.2f}", flush=True)
    print("\n| ranks | kpmap samples/s | PyTorch samples/s | kpmap / PyTorch |")
    print("|---|---|---|---|")
    for n, km, tm in rows:
        print(f"| {n} | {km:,.0f} | {tm:,.0f} | {km / tm:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
