#!/usr/bin/env python3
"""Checks of kpmap-train's results with independent tools (numpy, h5py).

    check_train.py compare A/result.json B/result.json ... [--rtol R]
        the linear parameters agree (relative 2-norm difference <= R)
    check_train.py accuracy RESULT.json --min A
        the classification accuracy reached A
    check_train.py lstsq --launcher T --app APP --deck DECK --ranks N --work DIR
        writes a data set with numpy, trains on it from HDF5, and compares
        the parameters with numpy's least-squares solution (relative 1e-8)
    check_train.py restart --launcher T --app APP --deck DECK --ranks N --restart-ranks M
                           --epochs E --split S --work DIR [--rtol R]
        E epochs straight against S epochs + a restart (at M ranks) to E:
        the final checkpoints agree bit for bit (R = 0) or to relative R

T is a launcher template such as "mpiexec -n {n}".
"""
import argparse
import glob
import os

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
    print("OK")


def final_checkpoint(folder: str) -> str:
    files = sorted(glob.glob(os.path.join(folder, "checkpoint_*.h5")))
    if not files:
        fail(f"no checkpoint in {folder}")
    return files[-1]


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
        names = sorted(a.keys())
        if names != sorted(b.keys()):
            fail(f"datasets differ: {names} vs {sorted(b.keys())}")
        if not any(k.startswith("optimizer.") for k in names) and args.require_state:
            fail("the checkpoint holds no optimizer state")
        for k in names:
            x, y = a[k][()], b[k][()]
            if args.rtol == 0:
                same = np.array_equal(x.view(np.uint8), y.view(np.uint8))
                print(f"{k}: {'bit for bit' if same else 'DIFFERENT'}")
                if not same:
                    fail(f"{k} differs between the straight and the restarted run")
            else:
                d = rel(np.ravel(x), np.ravel(y))
                print(f"{k}: relative difference {d:.3e}")
                if not d <= args.rtol:
                    fail(f"{k} differs by {d:.3e} > {args.rtol:g}")
    print(f"OK: {s} epochs + restart at {args.restart_ranks} ranks + {e - s} epochs == "
          f"{e} epochs at {args.ranks} ranks")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compare")
    c.add_argument("results", nargs="+")
    c.add_argument("--rtol", type=float, default=1e-12)
    c = sub.add_parser("accuracy")
    c.add_argument("result")
    c.add_argument("--min", type=float, required=True)
    for name in ("lstsq", "restart"):
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
    args = ap.parse_args()
    {"compare": cmd_compare, "accuracy": cmd_accuracy, "lstsq": cmd_lstsq,
     "restart": cmd_restart}[args.cmd](args)


if __name__ == "__main__":
    main()
