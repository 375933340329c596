#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""kpmap-train against PyTorch on the Fashion-MNIST CNN, interleaved.

    bench/compare_torch_cnn.py [--app build/default/apps/kpmap-train]
                               [--bench build/default/bench/kpmap-bench-train]
                               [--ranks 1,2] [--rounds 3] [--steps 150]
                               [--epochs N] [--no-layers] [--smoke] [--json FILE]
                               [--sharding optimizer|gradients|parameters]
                               [--peer torch|replicated]

Both train inputs/cnn_fashion_mnist.toml's network on Debian's
dataset-fashion-mnist: conv 3x3 1->32 same, ReLU, max pool 2, conv 3x3
32->64 same, ReLU, max pool 2, flatten, dense -> 10; softmax cross-entropy,
Adam 1e-3, a global batch of 128 split over the ranks, float, pixels scaled
to [0, 1]. PyTorch runs one thread per rank and, at 2 ranks or more,
DistributedDataParallel over gloo; kpmap-train runs the deck under mpiexec
with one thread per rank. Each rank count runs --rounds rounds of kpmap,
PyTorch, PyTorch, kpmap, each run --steps training steps (or --epochs whole
epochs, for the test accuracy); reported: training samples per second (the
training steps only, all ranks together), each round's ratio and the median
ratio with its range, and the test accuracy after the last step.

Then, unless --no-layers, each weighted layer's GFLOP/s forward and backward
(kpmap-bench-train's BM_cnn_layer, at each rank count's share of the batch,
all ranks running) beside OpenBLAS sgemm's at the same shapes in the same run:
the first convolution alone and as the model runs it, with the ReLU and max
pooling after it computed in its own kernels (the same sgemm shapes: the
convolution's).

--sharding optimizer runs kpmap-train with train.sharding = "optimizer"
(ZeRO stage 1) and PyTorch's Adam inside ZeroRedundancyOptimizer, each rank
keeping its part of the optimizer state (at 2 ranks or more). --peer
replicated races kpmap-train sharded against itself replicated instead of
PyTorch: the cost of the sharding, interleaved the same way (the only peer
of --sharding gradients and parameters: PyTorch 1.13 shards gradients and
parameters with FSDP, on CUDA only).

--smoke runs 1 round of 3 steps and a short layer pass, as a test that the
script works (no speed is asserted); without python3-torch it exits 77, which
ctest counts as skipped. Run by hand without PyTorch, it exits 2.
"""
import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
import interleaved  # noqa: E402

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


def torch_worker(rank: int, world: int, epochs: int, max_steps: int, port: int, out: str,
                 zero: bool = False) -> None:
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
    if zero and world > 1:
        from torch.distributed.optim import ZeroRedundancyOptimizer
        opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam,
                                      lr=1e-3)
    else:
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


def run_torch(world: int, epochs: int, max_steps: int, zero: bool = False) -> dict:
    import torch.multiprocessing as mp
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        port = 29500 + (os.getpid() % 1000)
        if world == 1:
            torch_worker(0, 1, epochs, max_steps, port, out)
        else:
            mp.spawn(torch_worker, args=(world, epochs, max_steps, port, out, zero),
                     nprocs=world, join=True)
        with open(out) as f:
            return json.load(f)


def run_kpmap(app: str, world: int, epochs: int, max_steps: int,
              sharding: str = "replicated") -> dict:
    with tempfile.TemporaryDirectory() as d:
        cmd = ["mpiexec", "--oversubscribe", "-n", str(world), app, DECK, "--output", d,
               "--set", f"train.epochs={epochs}", "--set", f"train.max_steps={max_steps}",
               "--set", "train.log_every=0", "--set", "output.checkpoints=false",
               "--set", f"train.sharding={sharding}"]
        subprocess.run(cmd, env=interleaved.MPI_ENV, check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(d, "result.json")) as f:
            return json.load(f)


def layer_rates(bench: str, world: int, min_time: float) -> list:
    """BM_cnn_layer at this rank count's share of the global batch (128 or 64
    images a rank; none for other shares), every rank running at once."""
    local = BATCH // world
    if BATCH % world or local not in (128, 64):
        return []
    cmd = ["mpiexec", "--oversubscribe", "-n", str(world), bench,
           f"--benchmark_filter=BM_cnn_layer/[0-9]/[0-9]/{local}/",
           f"--benchmark_min_time={min_time}"]
    return [{"layer": b["label"], "ranks": world, "images_per_rank": local,
             "GFLOPs": b["GFLOPs"], "sgemm_GFLOPs": b["sgemm_GFLOPs"], "of_sgemm": b["of_sgemm"]}
            for b in interleaved.benchmark_json(cmd)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--app", default="build/default/apps/kpmap-train")
    ap.add_argument("--bench", default="build/default/bench/kpmap-bench-train")
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of kpmap, PyTorch x 2, kpmap")
    ap.add_argument("--steps", type=int, default=150, help="training steps a run")
    ap.add_argument("--epochs", type=int, default=0, help="whole epochs a run instead of --steps")
    ap.add_argument("--no-layers", action="store_true", help="skip the per-layer rates")
    ap.add_argument("--layer-time", type=float, default=1.0,
                    help="--benchmark_min_time of each layer benchmark (seconds)")
    ap.add_argument("--smoke", action="store_true", help="1 round of 3 steps: a quick check")
    ap.add_argument("--json", help="write every figure to this file")
    ap.add_argument("--sharding",
                    choices=["replicated", "optimizer", "gradients", "parameters"],
                    default="replicated",
                    help="kpmap-train's train.sharding; optimizer: PyTorch's Adam in "
                         "ZeroRedundancyOptimizer; gradients, parameters: with --peer "
                         "replicated only")
    ap.add_argument("--peer", choices=["torch", "replicated"], default="torch",
                    help="replicated: kpmap-train replicated as the peer, not PyTorch")
    a = ap.parse_args()
    if a.smoke:
        a.rounds, a.steps, a.epochs, a.layer_time = 1, 3, 0, 0.01
    files = [a.app, DATA] + ([] if a.no_layers else [a.bench])
    code = interleaved.require(a.smoke, files)
    if code:
        return code
    epochs, steps = (a.epochs, 0) if a.epochs else (1, a.steps)
    what = f"{epochs} epoch(s)" if a.epochs else f"{steps} steps"
    log = lambda m: print(m, flush=True)  # noqa: E731
    if a.sharding in ("gradients", "parameters") and a.peer == "torch":
        print(f"compare_torch_cnn.py: PyTorch 1.13 shards {a.sharding} with FSDP, which needs "
              "CUDA; use --peer replicated", file=sys.stderr)
        return 2
    zero = a.sharding == "optimizer"
    me = "kpmap" + (f" ({a.sharding} sharded)" if a.sharding != "replicated" else "")
    peer = "kpmap replicated" if a.peer == "replicated" else (
        "PyTorch (ZeroRedundancyOptimizer)" if zero else "PyTorch")
    results = {"runs_of": what, "sharding": a.sharding, "peer": peer, "ranks": {},
               "layers": []}
    for n in [int(r) for r in a.ranks.split(",")]:
        log(f"{n} rank(s), {a.rounds} round(s) of {me}, {peer} x 2, {me}, {what} a run:")
        if a.peer == "replicated":
            other = lambda: run_kpmap(a.app, n, epochs, steps)  # noqa: E731
        else:
            other = lambda: run_torch(n, epochs, steps, zero)  # noqa: E731
        results["ranks"][n] = interleaved.interleave(
            a.rounds, lambda: run_kpmap(a.app, n, epochs, steps, a.sharding), other,
            "samples_per_second", log, (me, peer))
    print(f"\n| ranks | {me} samples/s | {peer} samples/s | ratio | per round | "
          f"{me} test acc. | {peer} test acc. |")
    print("|---:|---:|---:|---:|---|---:|---:|")
    for n, r in results["ranks"].items():
        acc = [[x["test_accuracy"] for run in r["runs"] for x in run[side]]
               for side in ("kpmap", "peer")]
        print(f"| {n} | {interleaved.fmt(r['kpmap'])} | {interleaved.fmt(r['peer'])} | "
              f"**{interleaved.fmt(r['ratio'], 2)}** | "
              f"{', '.join(f'{x:.2f}' for x in r['ratios'])} | "
              f"{statistics.median(acc[0]):.4f} | {statistics.median(acc[1]):.4f} |")
    if not a.no_layers:
        for n in results["ranks"]:
            results["layers"] += layer_rates(a.bench, n, a.layer_time)
        print("\n| layer | ranks | images a rank | kpmap GFLOP/s | sgemm GFLOP/s, same shapes | "
              "of sgemm |")
        print("|---|---:|---:|---:|---:|---:|")
        for r in results["layers"]:
            print(f"| {r['layer']} | {r['ranks']} | {r['images_per_rank']} | {r['GFLOPs']:.1f} | "
                  f"{r['sgemm_GFLOPs']:.1f} | {r['of_sgemm']:.2f} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
