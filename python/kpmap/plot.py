"""kpmap's plots: the one module behind every picture kpmap leaves.

    python3 -m kpmap.plot train DIR   DIR/loss.png: train and validation loss (and accuracy) per epoch
    python3 -m kpmap.plot heat DIR    DIR/field.png: the final field u, and the residual per step

kpmap-train and kpmap-heat run it at the end of a run (rank 0; KPMAP_PLOTS=0 turns it
off). Without matplotlib (or numpy, h5py) it prints a one-line notice and exits 0: a plot
is never worth failing a run for. kpmap-scale draws its speedup.png, efficiency.png and
phases.png with scaling().
"""
import csv
import glob
import os
import sys

from kpmap import PHASE_LABELS, PHASES


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


def scaling(directory, rows, title, mode, repeat):
    """speedup.png, efficiency.png and phases.png of a scaling study from its rows
    (kpmap.scale.collect.summarise); returns the names of the files written."""
    plt = _pyplot()
    ok = [r for r in rows if r["status"] == "ok"]
    if plt is None or not ok:
        return []
    from matplotlib.ticker import FormatStrFormatter
    ranks = [r["ranks"] for r in ok]
    over = [r for r in ok if r["oversubscribed"]]
    written = []

    def rank_axis(ax):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ranks)
        ax.set_xticklabels([str(n) for n in ranks])
        ax.minorticks_off()
        ax.set_xlabel("ranks")
        ax.grid(True, alpha=0.3)

    def mark_oversubscribed(ax, key, scale=1.0):
        if over:
            ax.plot([r["ranks"] for r in over], [scale * r[key] for r in over], "o",
                    mfc="none", mec="tab:red", ms=11, label="oversubscribed")

    def save(fig, name):
        fig.tight_layout()
        fig.savefig(os.path.join(directory, name), dpi=100)
        plt.close(fig)
        written.append(name)

    fig, ax = plt.subplots(figsize=(5, 3.6))
    ax.plot(ranks, [r["ideal_speedup"] for r in ok], "--", color="gray", label="ideal")
    spread = repeat > 1
    label = "measured: median, min-max" if spread else "measured"
    ax.errorbar(ranks, [r["speedup"] for r in ok], yerr=error_bars(ok, "speedup"), fmt="o-",
                color="tab:blue", capsize=3, label=label)
    mark_oversubscribed(ax, "speedup")
    rank_axis(ax)
    ax.set_yscale("log", base=2)
    ax.set_ylabel("scaled speedup" if mode == "weak" else "speedup")
    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    save(fig, "speedup.png")

    fig, ax = plt.subplots(figsize=(5, 3.6))
    ax.axhline(100, ls="--", color="gray", label="ideal")
    bars = error_bars(ok, "efficiency", 100)
    ax.errorbar(ranks, [100 * r["efficiency"] for r in ok], yerr=bars, fmt="o-",
                color="tab:blue", capsize=3, label=label)
    mark_oversubscribed(ax, "efficiency", 100)
    rank_axis(ax)
    ax.set_ylim(0, max(110, 5 + max(100 * r["efficiency"] + a for r, a in zip(ok, bars[1]))))
    ax.set_ylabel("parallel efficiency (%)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    save(fig, "efficiency.png")

    fig, ax = plt.subplots(figsize=(6, 3.6))
    x = list(range(len(ok)))
    bottom = [0.0] * len(ok)
    colors = {"compute_s": "tab:blue", "halo_s": "tab:orange", "collectives_s": "tab:red",
              "io_s": "tab:green", "checkpoint_s": "tab:purple"}
    for ph in PHASES:
        vals = [r[ph] or 0.0 for r in ok]
        if any(vals):
            ax.bar(x, vals, bottom=bottom, color=colors[ph], label=PHASE_LABELS[ph])
            bottom = [b + v for b, v in zip(bottom, vals)]
    rest = [max(0.0, r["wall_s"] - b) for r, b in zip(ok, bottom)]
    no_phases = not any(bottom)
    # "other": wall time outside the four phases (set-up, output of results).
    if no_phases or any(v > 0.005 * r["wall_s"] for v, r in zip(rest, ok)):
        ax.bar(x, rest, bottom=bottom, color="lightgray",
               label="total (no phase times)" if no_phases else "other")
    if spread:
        ax.errorbar(x, [r["wall_s"] for r in ok],
                    yerr=[[r["wall_s"] - r["wall_min_s"] for r in ok],
                          [r["wall_max_s"] - r["wall_s"] for r in ok]],
                    fmt="none", ecolor="black", capsize=3, label="wall: median, min-max")
    ax.set_xticks(x)
    ax.set_xticklabels([f"{r['ranks']}{' †' if r['oversubscribed'] else ''}" for r in ok])
    ax.set_xlabel("ranks" + (" († oversubscribed)" if over else ""))
    ax.set_ylabel("time (s), median")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(True, axis="y", alpha=0.3)
    save(fig, "phases.png")
    return written


def error_bars(rows, key, scale=1.0):
    """How far a ratio to the reference time moves when a point's time goes from
    its median to its fastest and slowest repetition (the reference held at its
    median): [below, above], for errorbar(). Clamped at zero: with one
    repetition median, minimum and maximum are equal, and v - v * t / t can
    round to a tiny negative number, which errorbar() refuses."""
    below, above = [], []
    for r in rows:
        v = scale * r[key]
        below.append(max(0.0, v - v * r["wall_s"] / r["wall_max_s"]))
        above.append(max(0.0, v * r["wall_s"] / r["wall_min_s"] - v))
    return [below, above]


def main(argv):
    if len(argv) != 3 or argv[1] not in ("train", "heat"):
        print("usage:\n" + "\n".join(__doc__.strip().splitlines()[2:4]), file=sys.stderr)
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
