#!/usr/bin/python3
"""kpmap-train against PyTorch on the Fashion-MNIST CNN, trained side by side.

    bench/compare_torch_cnn.py [--app build/default/apps/kpmap-train]
                               [--ranks 1,2] [--epochs 3] [--max-steps N]

Both train inputs/cnn_fashion_mnist.toml's network on Debian's
dataset-fashion-mnist: conv 3x3 1->32 same, ReLU, max pool 2, conv 3x3
32->64 same, ReLU, max pool 2, flatten, dense -> 10; softmax cross-entropy,
Adam 1e-3, a global batch of 128 split over the ranks, float, pixels scaled
to [0, 1]. PyTorch runs one thread per rank and, at 2 ranks or more,
DistributedDataParallel over gloo; kpmap-train runs the deck under mpiexec
with one thread per rank. Reported: training samples per second (the
training steps only, all ranks together) and the test accuracy after the
last epoch. With --max-steps the runs stop early (a speed comparison only).

Run by hand (not in CI): it needs Debian's python3-torch, which the project
does not otherwise depend on.
"""
import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

DATA = "/usr/share/datasets/fashion-mnist"
DECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "inputs",
                    "cnn_fashion_mnist.toml")
BATCH = 128


def idx(name: str) -> np.ndarray:
    with gzip.open(os.path.join(DATA, name), "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def torch_worker(rank: int, world: int, epochs: int, max_steps: int, port: int, out: str) -> None:
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    torch.set_num_threads(1)
    torch.manual_seed(1)
    net = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Flatten(), nn.Linear(64 * 7 * 7, 10))
    model = net
    if world > 1:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(port)
        dist.init_process_group("gloo", rank=rank, world_size=world)
        model = nn.parallel.DistributedDataParallel(net)
    x = torch.from_numpy(idx("train-images-idx3-ubyte.gz").astype(np.float32) / 255).unsqueeze(1)
    y = torch.from_numpy(idx("train-labels-idx1-ubyte.gz").astype(np.int64))
    xt = torch.from_numpy(idx("t10k-images-idx3-ubyte.gz").astype(np.float32) / 255).unsqueeze(1)
    yt = torch.from_numpy(idx("t10k-labels-idx1-ubyte.gz").astype(np.int64))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(2)
    steps, train_seconds, samples = 0, 0.0, 0
    for _ in range(epochs):
        order = torch.randperm(len(y), generator=gen)  # the same on every rank
        if world > 1:
            dist.barrier()
        t0 = time.perf_counter()
        for first in range(0, len(y), BATCH):
            batch = order[first:first + BATCH]
            mine = batch[rank::world]  # this rank's share of the global batch
            opt.zero_grad(set_to_none=True)
            loss_fn(model(x[mine]), y[mine]).backward()
            opt.step()
            steps += 1
            samples += len(batch)
            if max_steps and steps >= max_steps:
                break
        if world > 1:
            dist.barrier()
        train_seconds += time.perf_counter() - t0
        if max_steps and steps >= max_steps:
            break
    with torch.no_grad():
        correct = sum(int((net(xt[i:i + 1000]).argmax(1) == yt[i:i + 1000]).sum())
                      for i in range(0, len(yt), 1000))
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"samples_per_second": samples / train_seconds,
                       "test_accuracy": correct / len(yt), "steps": steps}, f)
    if world > 1:
        dist.destroy_process_group()


def run_torch(world: int, epochs: int, max_steps: int) -> dict:
    import torch.multiprocessing as mp
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        port = 29500 + (os.getpid() % 1000)
        if world == 1:
            torch_worker(0, 1, epochs, max_steps, port, out)
        else:
            mp.spawn(torch_worker, args=(world, epochs, max_steps, port, out), nprocs=world,
                     join=True)
        with open(out) as f:
            return json.load(f)


def run_kpmap(app: str, world: int, epochs: int, max_steps: int) -> dict:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    with tempfile.TemporaryDirectory() as d:
        cmd = ["mpiexec", "--oversubscribe", "-n", str(world), app, DECK, "--output", d,
               "--set", f"train.epochs={epochs}", "--set", f"train.max_steps={max_steps}"]
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(d, "result.json")) as f:
            return json.load(f)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--app", default="build/default/apps/kpmap-train")
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--max-steps", type=int, default=0)
    a = ap.parse_args()
    try:
        import torch  # noqa: F401
    except ImportError:
        print("PyTorch is missing: apt install python3-torch (run this with /usr/bin/python3)")
        return 2
    if not shutil.which("mpiexec") or not os.path.exists(a.app) or not os.path.isdir(DATA):
        print(f"need mpiexec, {a.app} (build the project first) and {DATA} "
              "(scripts/install-deps installs it)")
        return 2
    table = []
    for n in [int(r) for r in a.ranks.split(",")]:
        k = run_kpmap(a.app, n, a.epochs, a.max_steps)
        t = run_torch(n, a.epochs, a.max_steps)
        table.append((n, k, t))
        print(f"{n} rank(s): kpmap {k['samples_per_second']:,.0f} samples/s, test accuracy "
              f"{k['test_accuracy']:.4f}; PyTorch {t['samples_per_second']:,.0f} samples/s, "
              f"test accuracy {t['test_accuracy']:.4f}", flush=True)
    print(f"\n| ranks | kpmap samples/s | PyTorch samples/s | kpmap / PyTorch | "
          f"kpmap test acc. | PyTorch test acc. |")
    print("|---|---|---|---|---|---|")
    for n, k, t in table:
        ks, ts = k["samples_per_second"], t["samples_per_second"]
        print(f"| {n} | {ks:,.0f} | {ts:,.0f} | {ks / ts:.2f} | {k['test_accuracy']:.4f} | "
              f"{t['test_accuracy']:.4f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
