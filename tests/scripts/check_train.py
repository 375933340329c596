#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks of kpmap-train's results with independent tools (numpy, h5py).

    check_train.py compare A/result.json B/result.json ... [--rtol R]
        the linear parameters agree (relative 2-norm difference <= R)
    check_train.py recovers RESULT.json ... --noise S
        a linear model learned from synthetic data y = w.x + b + S * N(0, 1)
        (x ~ N(0, 1)) is within 5 standard errors (5 S / sqrt(samples)) of the
        true w and b, which result.json records, in every component
    check_train.py accuracy RESULT.json --min A
        the classification accuracy reached A
    check_train.py lstsq --launcher T --app APP --deck DECK --ranks N --work DIR
        writes a data set with numpy, trains on it from HDF5, and compares
        the parameters with numpy's least-squares solution (relative 1e-8)
    check_train.py restart --launcher T --app APP --deck DECK --ranks N --restart-ranks M
                           --epochs E --split S --work DIR [--rtol R]
        E epochs straight against S epochs + a restart (at M ranks) to E:
        the final checkpoints agree bit for bit (R = 0) or to relative R
    check_train.py images --launcher T --app APP --deck DECK --ranks N --work DIR
        writes byte images as HDF5 (N x H x W x 1) and as gzipped IDX files, trains
        on each: both give the same parameters bit for bit, and the network learns
    check_train.py no_checkpoints --launcher T --app APP --deck DECK --ranks N --work DIR
        the deck with output.checkpoints = false writes no HDF5 file and learns
        the same parameters, bit for bit, as with checkpoints
    check_train.py state_bytes --launcher T --app APP --deck DECK [--rank-counts N ...] --work DIR
        result.json's state_bytes_per_rank: every parameter, its gradient and the
        optimizer's arrays, of the precision's size, on each rank at each count
    check_train.py sharding --launcher T --app APP --deck DECK [--rank-counts N ...]
                            [--modes optimizer gradients parameters] [--epochs E]
                            [--cross --split S --cross-mode M] [--set S]... --work DIR
        train.sharding = MODE against "replicated" at each rank count: the same
        checkpoints and losses (optimizer: bit for bit; gradients, parameters: to
        1e-6), the optimizer's state (gradients: and the gradient; parameters: and
        the parameters) per rank its even part; --cross: a checkpoint crosses modes
        and rank counts (3 M -> 2 replicated, 2 replicated -> 3 M) as the same
        restart replicated (M optimizer: bit for bit; gradients, parameters: 1e-6)
    check_train.py mesh --launcher T --app APP --deck DECK --meshes DxM[:MODE]...
                        [--epochs E] [--restart-from DxM[:MODE] --restart-on DxM[:MODE]...
                        --split S [--restart-set S]...] [--set S]... --work DIR
        train.mesh = { data = D, model = M } (layers split over "model"), with
        train.sharding = MODE where given: every mesh gives the first mesh's
        losses and final checkpoint (whole arrays) to 1e-6; a checkpoint written
        on --restart-from after S epochs continues on each --restart-on mesh to
        the same final checkpoint (1e-6); for a deck of model.layers, each rank's
        parameter bytes are its blocks' (about 1/M), and under MODE the parts
        over "data" of them (about 1/(D M)) of the state MODE shards
    check_train.py same --launcher T --app APP --deck DECK --ranks N --work DIR
                        [--set S]... --other O... [--rtol R]
        the deck with the --set S overrides, and with the --other O ones too,
        reach the same parameters (to relative R)

    check_train.py stale_steps --launcher T --app APP --deck DECK --ranks N --work DIR
        a new run that logs no steps removes an earlier run's steps.csv

T is a launcher template such as "mpiexec -n {n}".
"""
import argparse
import glob
import gzip
import os
import shlex
import subprocess
import tomllib

import h5py
import numpy as np

from app_checks import fail, load, rel, run


def theta(result: dict) -> np.ndarray:
    return np.array(result["params"]["w"] + [result["params"]["b"]], dtype=float)


def cmd_compare(args) -> None:
    ref = load(args.results[0])
    for other in args.results[1:]:
        r = load(other)
        d = rel(theta(r), theta(ref))
        print(f"{other} ({r['ranks']} ranks) vs {args.results[0]} ({ref['ranks']} ranks): "
              f"relative difference {d:.3e}")
        if not d <= args.rtol:
            fail(f"parameters differ by {d:.3e} > {args.rtol:g}")
    print("OK: the same parameters at every rank count")


def cmd_recovers(args) -> None:
    for path in args.results:
        r = load(path)
        truth = np.array(r["true_params"]["w"] + [r["true_params"]["b"]], dtype=float)
        # Least squares on n samples of unit-variance features: each estimate
        # has a standard error of about S / sqrt(n); 5 of them is a bound that
        # a converged fit misses with odds below one in a million per component.
        bound = 5 * args.noise / np.sqrt(r["train_samples"])
        err = np.abs(theta(r) - truth)
        print(f"{path} ({r['ranks']} ranks): largest error {err.max():.4f} against the "
              f"true parameters, bound {bound:.4f}")
        if not err.max() <= bound:
            fail(f"learned {theta(r).tolist()}, true {truth.tolist()}: "
                 f"component {int(err.argmax())} is off by {err.max():.4f} > {bound:.4f}")
    print("OK: the true parameters recovered at every rank count")


def cmd_accuracy(args) -> None:
    r = load(args.result)
    print(f"accuracy {r['accuracy']:.4f} (required {args.min})")
    if not r["accuracy"] >= args.min:
        fail("accuracy below the stated target")
    if "confusion" in r:
        # Independent bookkeeping: the confusion matrix counts every held-out
        # sample once, and its diagonal is the accuracy.
        c = np.array(r["confusion"], dtype=float)
        k = int(round(np.sqrt(c.size)))
        c = c.reshape(k, k)
        if c.sum() != r["validation_samples"]:
            fail(f"the confusion matrix counts {c.sum():g} samples, not {r['validation_samples']}")
        if abs(np.trace(c) / c.sum() - r["test_accuracy"]) > 1e-12:
            fail(f"the confusion matrix's diagonal gives accuracy {np.trace(c) / c.sum()}, "
                 f"result.json says {r['test_accuracy']}")
        print(f"confusion matrix ({k} classes) agrees with test_accuracy {r['test_accuracy']:.4f}")
    print("OK")


def cmd_lstsq(args) -> None:
    os.makedirs(args.work, exist_ok=True)
    rng = np.random.default_rng(12345)
    n, f = 301, 4
    x = rng.standard_normal((n, f))
    y = x @ np.array([0.5, -1.5, 2.0, 0.25]) - 0.75 + 0.1 * rng.standard_normal(n)
    data = os.path.join(args.work, "data.h5")
    with h5py.File(data, "w") as h:
        h["features"] = x
        h["targets"] = y
    out = os.path.join(args.work, "out")
    run(args.launcher, args.ranks, [args.app, args.deck, "--output", out,
                                    "--set", f"data.path={data}"])
    a = np.hstack([x, np.ones((n, 1))])
    exact, *_ = np.linalg.lstsq(a, y, rcond=None)
    d = rel(theta(load(os.path.join(out, "result.json"))), exact)
    print(f"relative difference to numpy's least squares: {d:.3e}")
    if not d <= 1e-8:
        fail("GD did not reach the least-squares solution to 1e-8")
    # A pixel scaling of features that are no bytes would have no effect:
    # refused once the file's header says so.
    cmd = shlex.split(args.launcher.format(n=args.ranks)) + [
        args.app, args.deck, "--output", os.path.join(args.work, "scaled"),
        "--set", f"data.path={data}", "--set", "data.mean=[0.5]", "--set", "data.std=[1.0]"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    says = f"the features of {data} are not bytes; they are used as they are: it would have no effect"
    if p.returncode != 2 or says not in p.stdout + p.stderr:
        print((p.stdout + p.stderr)[-2000:])
        fail(f"data.mean on float features: exit code {p.returncode}, expected 2 saying '{says}'")
    print("OK")


def write_idx(path: str, a: np.ndarray) -> None:
    header = bytes([0, 0, 8, a.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in a.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + a.astype(np.uint8).tobytes())


def cmd_images(args) -> None:
    """The same byte images as HDF5 and as gzipped IDX (labels shaped (N) or
    (N, 1)) train the same network; so do IDX training files of the first
    rows with test files (data.test_path) of the last, the rows the HDF5
    run's validation_fraction holds out."""
    os.makedirs(args.work, exist_ok=True)
    rng = np.random.default_rng(7)
    n = 480
    labels = rng.integers(0, 3, n)
    img = rng.integers(0, 90, (n, 10, 10)).astype(np.uint8)
    for i, c in enumerate(labels):  # class c: a bright bar in row band c, at a random column
        col = rng.integers(0, 8)
        img[i, 3 * c:3 * c + 3, col:col + 3] = 250
    h5 = os.path.join(args.work, "images.h5")
    with h5py.File(h5, "w") as f:
        f["x"] = img[..., None]  # N x H x W x 1, uint8 (data.x's default name)
        f["y"] = labels.astype(np.uint8)
    write_idx(os.path.join(args.work, "images.idx.gz"), img)
    write_idx(os.path.join(args.work, "labels.idx.gz"), labels)
    write_idx(os.path.join(args.work, "labels_column.idx.gz"), labels[:, None])
    held = int(0.25 * n)  # the deck's validation_fraction: the last rows are the validation set
    split = {}
    for name, a in (("train_images", img[:n - held]), ("train_labels", labels[:n - held]),
                    ("test_images", img[n - held:]), ("test_labels", labels[n - held:])):
        split[name] = os.path.join(args.work, name + ".idx.gz")
        write_idx(split[name], a)
    out = {}
    idx = ["data.kind=idx", f"data.path={os.path.join(args.work, 'images.idx.gz')}"]
    test_files = ["data.kind=idx", "data.validation_fraction=0",
                  f"data.path={split['train_images']}", f"data.labels={split['train_labels']}",
                  f"data.test_path={split['test_images']}"]
    for kind, sets in (("hdf5", [f"data.path={h5}"]),
                       ("idx", idx + [f"data.labels={os.path.join(args.work, 'labels.idx.gz')}"]),
                       ("idx_column", idx + ["data.labels=" +
                                             os.path.join(args.work, "labels_column.idx.gz")]),
                       ("idx_test_files", test_files + [f"data.test_labels={split['test_labels']}"])):
        out[kind] = os.path.join(args.work, kind)
        cmd = [args.app, args.deck, "--output", out[kind]]
        for s in sets:
            cmd += ["--set", s]
        run(args.launcher, args.ranks, cmd)
    r = load(os.path.join(out["hdf5"], "result.json"))
    print(f"hdf5: test accuracy {r['test_accuracy']:.4f} (0.9 required)")
    if not r["test_accuracy"] >= 0.9:
        fail("the network did not learn the bars")
    same_checkpoints(final_checkpoint(out["hdf5"]), final_checkpoint(out["idx"]), 0.0)
    same_checkpoints(final_checkpoint(out["hdf5"]), final_checkpoint(out["idx_column"]), 0.0)
    same_checkpoints(final_checkpoint(out["hdf5"]), final_checkpoint(out["idx_test_files"]), 0.0)
    t = load(os.path.join(out["idx_test_files"], "result.json"))
    if t["test_accuracy"] != r["test_accuracy"]:
        fail(f"test files: test accuracy {t['test_accuracy']}, the held-out rows' "
             f"{r['test_accuracy']}")
    # Test images without their labels: refused, naming both keys.
    p = subprocess.run([args.app, args.deck, "--output", os.path.join(args.work, "half")] +
                       [a for s in test_files for a in ("--set", s)],
                       capture_output=True, text=True, timeout=120)
    says = "keys 'data.test_path' and 'data.test_labels': give both, or neither"
    if p.returncode != 2 or says not in p.stdout + p.stderr:
        print((p.stdout + p.stderr)[-2000:])
        fail(f"data.test_path alone: exit code {p.returncode}, expected 2 saying '{says}'")
    print("OK: HDF5 and IDX images (labels N and N x 1; the held-out rows as test files) train "
          "to the same parameters, bit for bit")


def cmd_same(args) -> None:
    """The deck with --set S... and with --set S... --set O... train alike."""
    outs = []
    for extra in ([], args.other):
        out = os.path.join(args.work, "b" if extra else "a")
        cmd = [args.app, args.deck, "--output", out]
        for s in args.set + extra:
            cmd += ["--set", s]
        run(args.launcher, args.ranks, cmd)
        outs.append(final_checkpoint(out))
    same_checkpoints(outs[0], outs[1], args.rtol, prefix="params.")
    print(f"OK: {' '.join(args.other)} changes no parameter by more than {args.rtol:g}")


def cmd_no_checkpoints(args) -> None:
    thetas = []
    for setting in ("true", "false"):
        out = os.path.join(args.work, "checkpoints_" + setting)
        run(args.launcher, args.ranks, [args.app, args.deck, "--output", out,
                                        "--set", "output.checkpoints=" + setting])
        written = glob.glob(os.path.join(out, "**", "*.h5"), recursive=True)
        print(f"output.checkpoints = {setting}: {len(written)} HDF5 files")
        if (setting == "false") != (not written):
            fail(f"output.checkpoints = {setting} wrote {written or 'no HDF5 file'}")
        thetas.append(theta(load(os.path.join(out, "result.json"))))
    if not np.array_equal(thetas[0], thetas[1]):
        fail(f"the parameters differ without checkpoints: {thetas[1]} vs {thetas[0]}")
    print("OK: no checkpoint written, the same parameters bit for bit")


def same_checkpoints(a_path: str, b_path: str, rtol: float, prefix: str = "") -> None:
    """The datasets (named prefix...) of two checkpoints agree bit for bit (rtol 0) or to rtol."""
    with h5py.File(a_path, "r") as a, h5py.File(b_path, "r") as b:
        names = sorted(k for k in a.keys() if k.startswith(prefix))
        if names != sorted(k for k in b.keys() if k.startswith(prefix)):
            fail(f"datasets differ: {names} vs {sorted(b.keys())}")
        for k in names:
            x, y = np.atleast_1d(a[k][()]), np.atleast_1d(b[k][()])
            if rtol == 0:
                same = np.array_equal(x.view(np.uint8), y.view(np.uint8))
                print(f"{k}: {'bit for bit' if same else 'DIFFERENT'}")
                if not same:
                    fail(f"{k} differs between {a_path} and {b_path}")
            else:
                d = rel(np.ravel(x), np.ravel(y))
                print(f"{k}: relative difference {d:.3e}")
                if not d <= rtol:
                    fail(f"{k} differs by {d:.3e} > {rtol:g}")


def final_checkpoint(folder: str) -> str:
    files = sorted(glob.glob(os.path.join(folder, "checkpoint_*.h5")))
    if not files:
        fail(f"no checkpoint in {folder}")
    return files[-1]


def cmd_stale_steps(args) -> None:
    """A new run that logs no steps, in a folder where an earlier run left its
    step log: the old steps.csv is removed (kpmap-plot would draw it as the
    new run's); a restart that logs none keeps the rows up to its checkpoint."""
    out = os.path.join(args.work, f"stale_{args.ranks}")
    steps = os.path.join(out, "steps.csv")
    run(args.launcher, args.ranks, [args.app, args.deck, "--output", out,
                                    "--set", "train.log_every=1", "--set", "train.epochs=2"])
    if not os.path.isfile(steps):
        fail("the run with train.log_every = 1 wrote no steps.csv")
    run(args.launcher, args.ranks, [args.app, args.deck, "--output", out,
                                    "--set", "train.log_every=0", "--set", "train.epochs=2"])
    if os.path.lexists(steps):
        fail("a new run that logs no steps left the earlier run's steps.csv")
    print(f"OK: {args.ranks} rank(s): the earlier run's steps.csv is gone")


def cmd_restart(args) -> None:
    straight = os.path.join(args.work, "straight")
    first = os.path.join(args.work, "first")
    second = os.path.join(args.work, "second")
    e, s = args.epochs, args.split
    run(args.launcher, args.ranks, [args.app, args.deck, "--output", straight,
                                    "--set", f"train.epochs={e}"])
    run(args.launcher, args.ranks, [args.app, args.deck, "--output", first,
                                    "--set", f"train.epochs={s}"])
    run(args.launcher, args.restart_ranks,
        [args.app, args.deck, "--output", second, "--set", f"train.epochs={e}",
         "--restart", final_checkpoint(first)])
    a_path, b_path = final_checkpoint(straight), final_checkpoint(second)
    with h5py.File(a_path, "r") as a, h5py.File(b_path, "r") as b:
        if int(a.attrs["step"]) != e or int(b.attrs["step"]) != e:
            fail(f"final checkpoints are at epochs {a.attrs['step']} and {b.attrs['step']}, not {e}")
        if not any(k.startswith("optimizer.") for k in a.keys()) and args.require_state:
            fail("the checkpoint holds no optimizer state")
    same_checkpoints(a_path, b_path, args.rtol)
    print(f"OK: {s} epochs + restart at {args.restart_ranks} ranks + {e - s} epochs == "
          f"{e} epochs at {args.ranks} ranks")


# The state arrays each optimizer keeps, one the parameters' size each
# (momentum's velocity; Adam's two moments), and the bytes of a value.
OPTIMIZER_ARRAYS = {"gd": 0, "sgd": 0, "momentum": 1, "adam": 2}
VALUE_BYTES = {"double": 8, "float": 4, "mixed": 4}


def cmd_state_bytes(args) -> None:
    """result.json's state_bytes_per_rank: each rank holds every parameter,
    its gradient and the optimizer's arrays, of the precision's value size,
    at every rank count (parameters replicated)."""
    with open(args.deck, "rb") as f:
        deck = tomllib.load(f)
    kind = deck.get("optimizer", {}).get("kind", "gd")
    precision = deck.get("model", {}).get("precision", "double")
    for ranks in args.rank_counts:
        out = os.path.join(args.work, f"np{ranks}")
        run(args.launcher, ranks, [args.app, args.deck, "--output", out,
                                   "--set", "train.max_steps=1", "--set", "output.checkpoints=false"])
        r = load(os.path.join(out, "result.json"))
        held = r["state_bytes_per_rank"]
        whole = r["parameters"] * VALUE_BYTES[precision]
        expect = {"sharding": "replicated", "parameters": whole, "gradients": whole,
                  "optimizer": OPTIMIZER_ARRAYS[kind] * whole}
        if held != expect:
            fail(f"{ranks} rank(s): state_bytes_per_rank {held}, expected {expect} "
                 f"({r['parameters']} {precision} parameters, optimizer {kind})")
        print(f"OK: {ranks} rank(s): {held}")


def cmd_sharding(args) -> None:
    """train.sharding = "optimizer" (ZeRO stage 1) against "replicated", at
    each rank count: the same parameters and optimizer state bit for bit
    (each rank applies the same elementwise update to its part, and the parts
    are gathered, so no sum is taken in another order) and the same losses;
    the optimizer's state per rank is the largest rank's even part of the
    parameter count, each parameter and gradient whole. "gradients" (stage
    2, --modes): the same to 1e-6 (a reduce-scatter may sum the ranks in
    another order than the all-reduce), the gradient per rank its even part
    too; "parameters" (stage 3): as gradients, and the parameters per rank
    their even part too. At 4 ranks each sharded kind is at most 0.3 of its
    replicated size. With --cross, a checkpoint written sharded
    (--cross-mode) at 3 ranks continues replicated at 2, and one written
    replicated at 2 continues sharded at 3, each bit for bit as the same
    restart with both runs replicated (bit for bit for "optimizer", to 1e-6
    for the stages that reduce-scatter)."""
    with open(args.deck, "rb") as f:
        deck = tomllib.load(f)
    chosen = {"optimizer.kind": deck.get("optimizer", {}).get("kind", "gd"),
              "model.precision": deck.get("model", {}).get("precision", "double")}
    for setting in args.set:  # what a --set chooses instead
        key, _, value = setting.partition("=")
        if key in chosen:
            chosen[key] = value.strip('"')
    kinds = OPTIMIZER_ARRAYS[chosen["optimizer.kind"]]
    vb = VALUE_BYTES[chosen["model.precision"]]
    epochs = ["--set", f"train.epochs={args.epochs}"]
    for setting in args.set:
        epochs += ["--set", setting]

    def train(ranks: int, mode: str, out: str, extra=()) -> dict:
        run(args.launcher, ranks, [args.app, args.deck, "--output", out, *epochs,
                                   "--set", f"train.sharding=\"{mode}\"", *extra])
        return load(os.path.join(out, "result.json"))

    for ranks in args.rank_counts:
        res = {m: train(ranks, m, os.path.join(args.work, f"np{ranks}_{m}"))
               for m in ["replicated"] + args.modes}
        n = res["replicated"]["parameters"]
        whole = n * vb
        part = -(-n // ranks) * vb  # the largest rank's part: ceil(n / ranks) values
        for mode in args.modes:
            # Stage 1 takes no sum in another order: bit for bit. Stage 2's
            # reduce-scatter may add the ranks' gradients in another order
            # than the all-reduce: to 1e-6, and the figures say which held.
            rtol = 0 if mode == "optimizer" else 1e-6
            same_checkpoints(final_checkpoint(os.path.join(args.work, f"np{ranks}_replicated")),
                             final_checkpoint(os.path.join(args.work, f"np{ranks}_{mode}")), rtol)
            for key in ("train_loss", "val_loss"):
                a, b = res["replicated"][key], res[mode][key]
                if a != b and not (a != a and b != b) and not abs(b - a) <= rtol * abs(a):
                    fail(f"{ranks} ranks: {key} {b!r} with {mode} sharded, {a!r} replicated")
            expect = {"sharding": mode,
                      "parameters": part if mode == "parameters" else whole,
                      "gradients": whole if mode == "optimizer" else part,
                      "optimizer": kinds * part}
            held = res[mode]["state_bytes_per_rank"]
            if held != expect:
                fail(f"{ranks} ranks, {mode}: state_bytes_per_rank {held}, expected {expect}")
            replicated = res["replicated"]["state_bytes_per_rank"]
            sharded = ((["optimizer"] if kinds else []) +
                       (["gradients"] if mode != "optimizer" else []) +
                       (["parameters"] if mode == "parameters" else []))
            for kind in sharded:
                if ranks == 4 and not held[kind] <= 0.3 * replicated[kind]:
                    fail(f"4 ranks, {mode}: {kind} per rank {held[kind]} bytes, more than 0.3 "
                         f"of the replicated {replicated[kind]}")
            exact = res[mode]["train_loss"] == res["replicated"]["train_loss"]
            print(f"OK: {ranks} rank(s), {mode}: the same parameters, optimizer state and losses "
                  f"({'bit for bit' if exact else 'to 1e-6'}: {res[mode]['train_loss']!r}); {held}")
    if not args.cross:
        return
    # Each crossing against the same restart with both runs replicated: the
    # sharded write (3 -> 2), then the sharded read (2 -> 3).
    split = ["--set", f"train.epochs={args.split}"]
    for first, then in (((3, args.cross_mode), (2, "replicated")),
                        ((2, "replicated"), (3, args.cross_mode))):
        finals = []
        for (r0, m0), (r1, m1) in ((first, then), ((first[0], "replicated"),
                                                   (then[0], "replicated"))):
            tag = f"cross_{r0}{m0}"
            train(r0, m0, os.path.join(args.work, tag), split)
            out = os.path.join(args.work, f"{tag}_to_{r1}{m1}")
            train(r1, m1, out, ["--restart", final_checkpoint(os.path.join(args.work, tag))])
            finals.append(final_checkpoint(out))
        # Stage 1 sums nothing in another order than replicated: bit for bit.
        # Stages 2 and 3 reduce-scatter where replicated all-reduces, which
        # MPI may add up in another order: to 1e-6.
        rtol = 0 if args.cross_mode == "optimizer" else 1e-6
        same_checkpoints(finals[0], finals[1], rtol)
        print(f"OK: {first[1]} at {first[0]} ranks -> {then[1]} at {then[0]}: "
              f"{'bit for bit' if rtol == 0 else 'to 1e-6'} as "
              f"replicated at {first[0]} -> replicated at {then[0]}")


def split_parameter_bytes(deck: dict, model: int) -> int:
    """The parameter bytes the largest rank holds of a sequential deck's dense
    layers on `model` ranks along "model": a column layer's ceil(units / M)
    rows and biases, a row layer's ceil(inputs / M) columns and its whole
    bias, other dense layers whole."""
    width = deck["data"]["features"]
    n = 0
    for layer in deck["model"]["layers"]:
        if layer["type"] != "dense":
            continue
        units, kind = layer["units"], layer.get("parallel", "none")
        if kind == "column":
            n += -(-units // model) * (width + 1)
        elif kind == "row":
            n += units * -(-width // model) + units
        else:
            n += units * (width + 1)
        width = units
    return n * VALUE_BYTES[deck["model"].get("precision", "double")]


def cmd_mesh(args) -> None:
    """Tensor parallelism: the deck on meshes of data x model ranks (its
    split layers in blocks over "model") trains as on the first mesh, to
    1e-6 relative (another rank count sums the gradient in another order),
    and a checkpoint continues across meshes. For a deck of model.layers,
    each rank's parameter bytes are its blocks' (about 1/M of a split layer)."""
    def shape(text: str) -> tuple:
        d, m = (int(v) for v in text.split(":")[0].split("x"))
        return d, m

    def mode(text: str) -> str:
        return text.split(":")[1] if ":" in text else "replicated"

    with open(args.deck, "rb") as f:
        deck = tomllib.load(f)

    def train(mesh: str, out: str, extra=()) -> dict:
        d, m = shape(mesh)
        run(args.launcher, d * m, [args.app, args.deck, "--output", out,
                                   "--set", f"train.mesh.data={d}",
                                   "--set", f"train.mesh.model={m}",
                                   "--set", f"train.sharding=\"{mode(mesh)}\"", *extra])
        return load(os.path.join(out, "result.json"))

    def expected_bytes(mesh: str) -> dict:
        """The largest rank's bytes of each kind of state: its blocks of the
        split layers and the rest whole (n values), or, where MODE shards a
        kind, ceil(n / D) of them."""
        d, m = shape(mesh)
        vb = VALUE_BYTES[deck["model"].get("precision", "double")]
        whole = split_parameter_bytes(deck, m)
        part = -(-(whole // vb) // d) * vb
        kinds = OPTIMIZER_ARRAYS[deck.get("optimizer", {}).get("kind", "gd")]
        sharded = mode(mesh) != "replicated"
        return {"sharding": mode(mesh),
                "parameters": part if mode(mesh) == "parameters" else whole,
                "gradients": part if mode(mesh) in ("gradients", "parameters") else whole,
                "optimizer": kinds * (part if sharded else whole)}

    epochs = ["--set", f"train.epochs={args.epochs}"]
    for setting in args.set:
        epochs += ["--set", setting]
    folders = {}
    first = None
    for mesh in args.meshes:
        folders[mesh] = os.path.join(args.work, f"mesh_{mesh.replace(':', '_')}")
        r = train(mesh, folders[mesh], epochs)
        if "layers" in deck.get("model", {}) and not args.set:
            want = expected_bytes(mesh)
            held = r["state_bytes_per_rank"]
            if held != want:
                fail(f"mesh {mesh}: state_bytes_per_rank {held} on the largest rank, "
                     f"expected {want}")
            print(f"OK: mesh {mesh}: {held} bytes per rank")
        # The mesh is layout: the model has the same parameters on every one,
        # as many as its layers hold whole (counted here from the deck).
        whole = (split_parameter_bytes(deck, 1) // VALUE_BYTES[deck["model"].get("precision", "double")]
                 if "layers" in deck.get("model", {}) else None)
        want = whole if whole is not None else (first[1]["parameters"] if first else r["parameters"])
        if r["parameters"] != want:
            fail(f"mesh {mesh}: {r['parameters']} parameters, expected {want}")
        print(f"OK: mesh {mesh}: {r['parameters']} parameters")
        if first is None:
            first = (mesh, r)
            continue
        for key in ("train_loss", "val_loss"):
            a, b = first[1][key], r[key]
            if not abs(b - a) <= 1e-6 * abs(a):
                fail(f"mesh {mesh}: {key} {b!r}, mesh {first[0]}: {a!r}")
        same_checkpoints(final_checkpoint(folders[first[0]]), final_checkpoint(folders[mesh]),
                         1e-6, "params.")
        print(f"OK: mesh {mesh} trains as mesh {first[0]} (train_loss {r['train_loss']!r})")
    if not args.restart_from:
        return
    source = os.path.join(args.work, f"split_{args.restart_from.replace(':', '_')}")
    train(args.restart_from, source, epochs + ["--set", f"train.epochs={args.split}"])
    if args.restart_from not in folders:
        folders[args.restart_from] = os.path.join(
            args.work, f"mesh_{args.restart_from.replace(':', '_')}")
        train(args.restart_from, folders[args.restart_from], epochs)
    for mesh in args.restart_on:
        out = os.path.join(args.work,
                           f"restart_{args.restart_from}_to_{mesh}".replace(":", "_"))
        again = [x for s in args.restart_set for x in ("--set", s)]
        train(mesh, out, epochs + ["--restart", final_checkpoint(source)] + again)
        same_checkpoints(final_checkpoint(folders[args.restart_from]), final_checkpoint(out),
                         1e-6)
        print(f"OK: a checkpoint of mesh {args.restart_from} continues on mesh {mesh}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compare")
    c.add_argument("results", nargs="+")
    c.add_argument("--rtol", type=float, default=1e-12)
    c = sub.add_parser("recovers")
    c.add_argument("results", nargs="+")
    c.add_argument("--noise", type=float, required=True)
    c = sub.add_parser("accuracy")
    c.add_argument("result")
    c.add_argument("--min", type=float, required=True)
    c = sub.add_parser("state_bytes")
    c.add_argument("--launcher", required=True)
    c.add_argument("--app", required=True)
    c.add_argument("--deck", required=True)
    c.add_argument("--rank-counts", type=int, nargs="+", default=[1, 3])
    c.add_argument("--work", required=True)
    c = sub.add_parser("sharding")
    c.add_argument("--launcher", required=True)
    c.add_argument("--app", required=True)
    c.add_argument("--deck", required=True)
    c.add_argument("--rank-counts", type=int, nargs="+", default=[1, 2, 3, 4])
    c.add_argument("--epochs", type=int, default=2)
    c.add_argument("--split", type=int, default=1)
    c.add_argument("--cross", action="store_true")
    c.add_argument("--modes", nargs="+", default=["optimizer"],
                   choices=["optimizer", "gradients", "parameters"])
    c.add_argument("--cross-mode", default="optimizer",
                   choices=["optimizer", "gradients", "parameters"])
    c.add_argument("--set", action="append", default=[], help="a --set for every run")
    c.add_argument("--work", required=True)
    c = sub.add_parser("mesh")
    c.add_argument("--launcher", required=True)
    c.add_argument("--app", required=True)
    c.add_argument("--deck", required=True)
    c.add_argument("--meshes", nargs="+", required=True)
    c.add_argument("--epochs", type=int, default=3)
    c.add_argument("--restart-from")
    c.add_argument("--restart-on", nargs="+", default=[])
    c.add_argument("--restart-set", action="append", default=[],
                   help="a --set for the runs that continue (a layout change)")
    c.add_argument("--split", type=int, default=1)
    c.add_argument("--set", action="append", default=[], help="a --set for every run")
    c.add_argument("--work", required=True)
    for name in ("lstsq", "restart", "images", "same", "no_checkpoints", "stale_steps"):
        c = sub.add_parser(name)
        c.add_argument("--launcher", required=True)
        c.add_argument("--app", required=True)
        c.add_argument("--deck", required=True)
        c.add_argument("--ranks", type=int, default=2)
        c.add_argument("--work", required=True)
        if name == "restart":
            c.add_argument("--restart-ranks", type=int, default=2)
            c.add_argument("--epochs", type=int, default=6)
            c.add_argument("--split", type=int, default=3)
            c.add_argument("--rtol", type=float, default=0.0)
            c.add_argument("--require-state", action="store_true")
        if name == "same":
            c.add_argument("--set", action="append", default=[])
            c.add_argument("--other", action="append", required=True)
            c.add_argument("--rtol", type=float, default=1e-12)
    args = ap.parse_args()
    {"compare": cmd_compare, "recovers": cmd_recovers, "accuracy": cmd_accuracy, "lstsq": cmd_lstsq, "images": cmd_images, "state_bytes": cmd_state_bytes,
     "sharding": cmd_sharding,
     "mesh": cmd_mesh,
     "same": cmd_same, "no_checkpoints": cmd_no_checkpoints, "stale_steps": cmd_stale_steps,
     "restart": cmd_restart}[args.cmd](args)


if __name__ == "__main__":
    main()
