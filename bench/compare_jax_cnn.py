#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""kpmap-train against JAX (Flax NNX, jax.jit) on the Fashion-MNIST CNN, on one GPU.

    compare_jax_cnn.py --bundle DIR [--data DIR] [--steps 300] [--rounds 1] [--json FILE]

The network of the Flax data-parallel guide and of inputs/cnn_fashion_mnist.toml:
conv 3x3 1->32 same, ReLU, max pool 2, conv 3x3 32->64 same, ReLU, max pool 2,
flatten, dense -> 10; softmax cross-entropy, Adam 1e-3, batch 128, float32,
pixels scaled to [0, 1]. Each round runs kpmap, JAX, JAX, kpmap (A B B A), each
--steps training steps on the same images in the same order; reported: samples
per second of the training steps (JAX's first, compiling step excluded; kpmap's
from its result.json), each round's ratio kpmap / JAX, the median with its
range, and each one's held-out accuracy. gpu-check runs it from a bundle made
by scripts/gpu-bundle; --bundle names that bundle (its bin/ and inputs/).
"""
import argparse
import gzip
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

BATCH = 128


def read_idx(path):
    with gzip.open(path) as f:
        magic = struct.unpack(">I", f.read(4))[0]
        dims = struct.unpack(">" + "I" * (magic & 0xFF), f.read(4 * (magic & 0xFF)))
        return np.frombuffer(f.read(), dtype=np.uint8).reshape(dims)


def load(data):
    x = read_idx(f"{data}/train-images-idx3-ubyte.gz").astype(np.float32) / 255.0
    y = read_idx(f"{data}/train-labels-idx1-ubyte.gz").astype(np.int32)
    tx = read_idx(f"{data}/t10k-images-idx3-ubyte.gz").astype(np.float32) / 255.0
    ty = read_idx(f"{data}/t10k-labels-idx1-ubyte.gz").astype(np.int32)
    return x[..., None], y, tx[..., None], ty


def jax_run(data, steps, seed=0):
    # JAX takes 75 % of the GPU's memory at start unless told not to; kpmap's
    # runs share the GPU with this process.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax
    import jax.numpy as jnp
    import optax
    from flax import nnx

    class CNN(nnx.Module):
        def __init__(self, rngs):
            self.conv1 = nnx.Conv(1, 32, kernel_size=(3, 3), padding="SAME", rngs=rngs)
            self.conv2 = nnx.Conv(32, 64, kernel_size=(3, 3), padding="SAME", rngs=rngs)
            self.dense = nnx.Linear(64 * 7 * 7, 10, rngs=rngs)

        def __call__(self, x):
            x = nnx.max_pool(nnx.relu(self.conv1(x)), window_shape=(2, 2), strides=(2, 2))
            x = nnx.max_pool(nnx.relu(self.conv2(x)), window_shape=(2, 2), strides=(2, 2))
            return self.dense(x.reshape(x.shape[0], -1))

    graphdef, params = nnx.split(CNN(nnx.Rngs(seed)))
    opt = optax.adam(1e-3)
    opt_state = opt.init(params)

    def loss_fn(p, x, y):
        logits = nnx.merge(graphdef, p)(x)
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

    @jax.jit
    def step(p, s, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(p, x, y)
        updates, s = opt.update(grads, s, p)
        return optax.apply_updates(p, updates), s, loss

    @jax.jit
    def correct(p, x, y):
        return (jnp.argmax(nnx.merge(graphdef, p)(x), axis=-1) == y).sum()

    x, y, tx, ty = data
    per_epoch = len(x) // BATCH
    xs = jax.device_put(x[:per_epoch * BATCH].reshape(per_epoch, BATCH, 28, 28, 1))
    ys = jax.device_put(y[:per_epoch * BATCH].reshape(per_epoch, BATCH))
    params, opt_state, loss = step(params, opt_state, xs[0], ys[0])  # compiles
    loss.block_until_ready()
    t0 = time.perf_counter()
    for i in range(1, steps):
        params, opt_state, loss = step(params, opt_state, xs[i % per_epoch], ys[i % per_epoch])
    loss.block_until_ready()
    seconds = time.perf_counter() - t0
    hits = sum(int(correct(params, tx[i:i + 1000], ty[i:i + 1000])) for i in range(0, len(tx), 1000))
    return {"samples_per_s": (steps - 1) * BATCH / seconds, "accuracy": hits / len(tx),
            "loss": float(loss), "device": str(jax.devices()[0])}


def kpmap_run(bundle, data, steps, where):
    out = os.path.join(where, "kpmap")
    cmd = ["mpiexec", "-n", "1", f"{bundle}/bin/kpmap-train", f"{bundle}/inputs/cnn_fashion_mnist.toml",
           "--output", out, "--set", f"data.path={data}/train-images-idx3-ubyte.gz",
           "--set", f"data.labels={data}/train-labels-idx1-ubyte.gz",
           "--set", f"data.test_path={data}/t10k-images-idx3-ubyte.gz",
           "--set", f"data.test_labels={data}/t10k-labels-idx1-ubyte.gz",
           "--set", "train.epochs=100", "--set", f"train.max_steps={steps}"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "result.json")) as f:
        r = json.load(f)
    return {"samples_per_s": r["samples_per_second"], "accuracy": r.get("test_accuracy"),
            "loss": r.get("train_loss")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", required=True, help="a bundle of scripts/gpu-bundle")
    ap.add_argument("--data", help="Fashion-MNIST idx files (default: the bundle's slice)")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    data_dir = args.data or f"{args.bundle}/data/fashion-mnist"
    data = load(data_dir)

    ratios, runs = [], []
    with tempfile.TemporaryDirectory() as where:
        for r in range(args.rounds):
            a1 = kpmap_run(args.bundle, data_dir, args.steps, where)
            b1 = jax_run(data, args.steps)
            b2 = jax_run(data, args.steps)
            a2 = kpmap_run(args.bundle, data_dir, args.steps, where)
            kp = statistics.mean([a1["samples_per_s"], a2["samples_per_s"]])
            jx = statistics.mean([b1["samples_per_s"], b2["samples_per_s"]])
            ratios.append(kp / jx)
            runs.append({"kpmap": [a1, a2], "jax": [b1, b2]})
            print(f"round {r + 1}: kpmap {a1['samples_per_s']:.0f} {a2['samples_per_s']:.0f} samples/s "
                  f"(accuracy {a2['accuracy']}), JAX {b1['samples_per_s']:.0f} {b2['samples_per_s']:.0f} "
                  f"(accuracy {b2['accuracy']:.4f}, {b2['device']}): ratio {kp / jx:.3f}", flush=True)
    med = statistics.median(ratios)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"steps": args.steps, "batch": BATCH, "ratios": ratios, "median": med,
                       "runs": runs}, f, indent=1)
    print(f"kpmap / JAX samples/s: median {med:.3f} (range {min(ratios):.3f} to {max(ratios):.3f}, "
          f"{len(ratios)} round(s) of A B B A, {args.steps} steps of {BATCH})")


if __name__ == "__main__":
    sys.exit(main())
