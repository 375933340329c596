#!/usr/bin/env python3
"""kpmap's plots: one small module behind every picture a kpmap run leaves.

    kpmap_plot.py train DIR   DIR/loss.png: train and validation loss (and accuracy) per epoch
    kpmap_plot.py heat DIR    DIR/field.png: the final field u, and the residual per step

kpmap-train and kpmap-heat call it at the end of a run (rank 0; KPMAP_PLOTS=0 turns it
off). Without matplotlib (or numpy, h5py) it prints a one-line notice and exits 0: a plot
is never worth failing a run for.
"""
import csv
import glob
import os
import sys


def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        return None


def _rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _numbers(rows, key):
    out = []
    for r in rows:
        try:
            out.append(float(r.get(key) or "nan"))
        except ValueError:
            out.append(float("nan"))
    return out


def plot_train(directory, plt):
    """loss.png from history.csv: losses (log scale) and, for classifiers, accuracy."""
    rows = _rows(os.path.join(directory, "history.csv"))
    if not rows:
        return None
    epoch = _numbers(rows, "epoch")
    train, val = _numbers(rows, "train_loss"), _numbers(rows, "val_loss")
    accuracy = _numbers(rows, "accuracy")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(epoch, train, "o-", ms=3, label="train loss")
    if any(v == v for v in val):  # not all NaN
        ax.plot(epoch, val, "s-", ms=3, label="validation loss")
    ax.set_xlabel("epoch")
    ax.set_ylabel("loss")
    if all(v > 0 for v in train if v == v):
        ax.set_yscale("log")
    ax.grid(alpha=0.3)
    lines, labels = ax.get_legend_handles_labels()
    if any(a == a and a > 0 for a in accuracy):
        ax2 = ax.twinx()
        ax2.plot(epoch, accuracy, "^-", ms=3, color="tab:green", label="accuracy")
        ax2.set_ylabel("accuracy")
        ax2.set_ylim(0, 1)
        more, more_labels = ax2.get_legend_handles_labels()
        lines, labels = lines + more, labels + more_labels
    ax.legend(lines, labels, loc="best")
    ax.set_title("kpmap-train: " + os.path.basename(os.path.abspath(directory)))
    path = os.path.join(directory, "loss.png")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_heat(directory, plt):
    """field.png: u of the newest checkpoint (its middle plane in 3-D) and the residual per step."""
    try:
        import h5py
        import numpy as np
    except ImportError:
        return None
    checkpoints = sorted(glob.glob(os.path.join(directory, "checkpoint_*.h5")))
    rows = _rows(os.path.join(directory, "summary.csv"))
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    if checkpoints:
        with h5py.File(checkpoints[-1], "r") as f:
            u = np.asarray(f["fields/u"])
            step = int(f.attrs.get("step", 0))
        plane = u[u.shape[0] // 2] if u.ndim == 3 else u
        image = left.imshow(plane, origin="lower", cmap="inferno", aspect="equal")
        fig.colorbar(image, ax=left, label="u")
        left.set_title(f"u at step {step}" + (" (middle z plane)" if u.ndim == 3 and u.shape[0] > 1 else ""))
        left.set_xlabel("x cell")
        left.set_ylabel("y cell")
    else:
        left.text(0.5, 0.5, "no checkpoint", ha="center", va="center")
        left.set_axis_off()
    steps = [s for s, r in zip(_numbers(rows, "step"), rows) if s > 0]
    error = [e for s, e in zip(_numbers(rows, "step"), _numbers(rows, "error")) if s > 0]
    if steps and any(e > 0 for e in error):
        right.semilogy(steps, [e if e > 0 else float("nan") for e in error], "o-", ms=3)
        right.set_ylabel("final relative residual of the solve")
    else:
        right.plot(steps, _numbers([r for r in rows if float(r["step"]) > 0], "u"), "o-", ms=3)
        right.set_ylabel("U (field summary)")
    right.set_xlabel("step")
    right.grid(alpha=0.3)
    right.set_title("per step")
    path = os.path.join(directory, "field.png")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv):
    if len(argv) != 3 or argv[1] not in ("train", "heat"):
        print(__doc__.strip().splitlines()[2:4], file=sys.stderr)
        return 2
    plt = _pyplot()
    if plt is None:
        print(f"kpmap: no plots (matplotlib is not installed for {sys.executable})")
        return 0
    try:
        path = (plot_train if argv[1] == "train" else plot_heat)(argv[2], plt)
    except (OSError, KeyError, ValueError) as e:
        print(f"kpmap: no plot: {e}")
        return 0
    if path is None:
        print("kpmap: no plots (numpy or h5py is missing, or there is nothing to plot)")
    else:
        print(f"kpmap: plot written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
