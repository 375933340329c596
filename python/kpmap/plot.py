# SPDX-License-Identifier: BSD-3-Clause
"""kpmap's plots: the one module behind every picture kpmap leaves.

    kpmap-plot RUN_DIR                a run's pictures: loss.png (kpmap-train), field.png (kpmap-heat)
    kpmap-plot train DIR              DIR/loss.png: loss (and accuracy) per epoch, or per logged
                                      step for a run of fewer than 5 epochs
    kpmap-plot heat DIR               DIR/field.png: the final field u, and the residual per step
    kpmap-plot trace FILE [PNG] [--window START_MS:END_MS]
                                      a picture of a --trace timeline (default FILE's .png)

(`python3 -m kpmap.plot` takes the same arguments.) Plotting is a step of its own, run
after mpiexec returns: a run names the command in its last lines, and scripts/run-demo
runs it. No MPI rank forks a process (unsafe with InfiniBand/UCX-registered or CUDA
memory). Without matplotlib (or numpy, h5py) in its own Python, kpmap-plot runs itself
again under the first Python that has them (kpmap.interpreter: $KPMAP_PYTHON, the python3s
on the PATH, /usr/bin/python3); where none has, it prints a one-line notice that says how to
install them and exits 0: a missing plotting library is not an error. A folder that is no run's, a file that is a link,
a FIFO or anything but a regular file, or a damaged one: a line that says what is wrong with
which file, exit 2. Pictures are written under a temporary name and renamed into place, never
through a link. kpmap-scale draws its speedup.png, efficiency.png and phases.png with
scaling().
"""
import csv
import glob
import json
import os
import stat
import sys

from kpmap import PHASE_LABELS, PHASES
from kpmap.interpreter import has_plotting, how_to_install


def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        return None


class BadFile(Exception):
    """A file kpmap-plot will not read or write, or cannot make sense of: its
    message is one line naming the file and what is wrong."""


_KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


def _not_regular(path):
    """What `path` is when it is there and not a regular file (a FIFO would block a
    reader for ever, a link send a picture elsewhere), else None."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _readable(path):
    """`path`, once it is known to be a regular file (or absent)."""
    what = _not_regular(path)
    if what:
        raise BadFile(f"{path}: it is {what}, and kpmap-plot reads only regular files")
    return path


def _save(fig, path, dpi):
    """fig as a PNG at `path`: written to PATH.tmp and renamed over it, never through
    a link or into anything but a regular file."""
    what = _not_regular(path)
    if what:
        raise BadFile(f"{path}: it is {what}, and kpmap-plot replaces only regular files "
                      "(remove it)")
    tmp = path + ".tmp"
    what = _not_regular(tmp)
    if what:
        raise BadFile(f"{tmp}: it is {what}, and kpmap-plot replaces only regular files")
    if os.path.exists(tmp):
        os.remove(tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        with os.fdopen(fd, "wb") as f:
            fig.savefig(f, format="png", dpi=dpi)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def _rows(path):
    try:
        with open(_readable(path), newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except UnicodeDecodeError:
        # Where, in the whole file (the reader decodes it a piece at a time).
        with open(path, "rb") as f:
            raw = f.read()
        try:
            raw.decode("utf-8")
            at = 0
        except UnicodeDecodeError as e:
            at = e.start
        line = raw[:at].count(b"\n") + 1
        raise BadFile(f"{path}: line {line}: byte {at + 1} is not UTF-8 text (a damaged file?)") \
            from None
    for n, r in enumerate(rows, start=2):
        if None in r.values() or None in r:
            raise BadFile(f"{path}: line {n} has {len([v for v in r.values() if v is not None])} "
                          f"fields and the header {len([k for k in r if k is not None])}")
    return rows


def _required(rows, path, keys):
    """Checks that each of `keys` is a column of `rows` (read from `path`)
    holding a number on every line: BadFile names the file, the line and the
    column where one is missing or is no number."""
    for key in keys:
        if rows and key not in rows[0]:
            raise BadFile(f"{path}: no column '{key}' (its header has "
                          f"{', '.join(k for k in rows[0] if k is not None)})")
        for n, r in enumerate(rows, start=2):
            try:
                float(r[key])
            except ValueError:
                raise BadFile(f"{path}: line {n}: {key} is {r[key]!r}, not a number") from None


def _numbers(rows, key):
    out = []
    for r in rows:
        try:
            out.append(float(r.get(key) or "nan"))
        except ValueError:
            out.append(float("nan"))
    return out


# A run of fewer epochs than this draws its step log (steps.csv), if it has one.
STEP_PLOT_EPOCHS = 5


def readable_x(ax, xs, unit):
    """Limits and ticks that say where `xs` lie whatever their number: from 0
    (or the first value less one) to a little past the last, whole-number
    ticks, labelled `unit`."""
    from matplotlib.ticker import MaxNLocator
    finite = [x for x in xs if x == x]
    lo = min(0.0, min(finite) - 1) if finite else 0.0
    hi = max(finite) if finite else 1.0
    ax.set_xlim(lo, hi + max(0.5, 0.03 * (hi - lo)))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=2))
    ax.set_xlabel(unit)


def readable_y(ax, ys, label, log=None):
    """A log scale (`log`, or by default for positive values over more than a
    factor of 3) showing at least a decade, else a linear one; values that are
    all one get a range around them rather than a sliver."""
    finite = [y for y in ys if y == y]
    ax.set_ylabel(label)
    if not finite:
        return
    lo, hi = min(finite), max(finite)
    if log is None:
        log = lo > 0 and hi > 3 * lo
    if log and lo > 0:
        ax.set_yscale("log")
        if hi < 10 * lo:
            ax.set_ylim(lo / 4, hi * 4)
    elif hi - lo <= 1e-9 * abs(hi):
        pad = 0.5 * abs(hi) if hi != 0 else 1.0
        ax.set_ylim(lo - pad, hi + pad)


def _accuracy_axis(ax, xs, accuracy, style):
    """accuracy on a second y axis from 0 to 1, where there is one; returns
    the handles and labels for the legend."""
    if not any(a == a and a > 0 for a in accuracy):
        return [], []
    ax2 = ax.twinx()
    ax2.plot(xs, accuracy, style, ms=3, color="tab:green", label="accuracy")
    ax2.set_ylabel("accuracy")
    ax2.set_ylim(0, 1)
    return ax2.get_legend_handles_labels()


def train_figure(directory, plt):
    """The picture of a kpmap-train run, and what it draws: ("steps", rows) where
    the run has fewer than STEP_PLOT_EPOCHS epochs and a step log (steps.csv:
    each logged step's batch loss and accuracy, epoch starts marked), else
    ("epochs", rows) from history.csv (train and validation loss per epoch,
    accuracy); (None, None, None) when there is nothing to draw."""
    history = _rows(os.path.join(directory, "history.csv"))
    steps_path = os.path.join(directory, "steps.csv")
    steps = _rows(steps_path) if os.path.lexists(steps_path) else []
    name = os.path.basename(os.path.abspath(directory))
    if steps and len(history) < STEP_PLOT_EPOCHS:
        _required(steps, steps_path, ("step", "epoch", "batch", "loss"))
        fig, ax = plt.subplots(figsize=(7, 4.5))
        x = _numbers(steps, "step")
        loss = _numbers(steps, "loss")
        ax.plot(x, loss, "o-", ms=3, label="batch loss")
        readable_y(ax, loss, "loss")
        readable_x(ax, x, "optimizer step")
        # Where each epoch began: after step - batch, marked where that is past 0.
        starts = {}
        for r, s_ in zip(steps, x):
            starts.setdefault(r["epoch"], s_ - float(r["batch"]))
        for epoch, begin in sorted(starts.items(), key=lambda kv: kv[1]):
            if begin > 0:
                ax.axvline(begin, ls=":", color="gray")
                ax.text(begin, 1.0, f" epoch {epoch}", transform=ax.get_xaxis_transform(),
                        va="top", fontsize=8, color="gray")
        ax.grid(alpha=0.3)
        lines, labels = ax.get_legend_handles_labels()
        more, more_labels = _accuracy_axis(ax, x, _numbers(steps, "accuracy"), "^-")
        ax.legend(lines + more, labels + more_labels, loc="lower left")
        ends = []
        for r in history:
            acc, val = _numbers([r], "accuracy")[0], _numbers([r], "val_loss")[0]
            text = f"epoch {r['epoch']}: " + (f"held-out loss {val:.3g}" if val == val else
                                              f"train loss {float(r['train_loss']):.3g}")
            ends.append(text + (f", accuracy {acc:.3f}" if acc == acc else ""))
        ax.set_title(f"kpmap-train: {name}, every logged step" +
                     ("\n" + "; ".join(ends[-2:]) if ends else ""), fontsize=10)
        return fig, "steps", steps
    if not history:
        return None, None, None
    epoch = _numbers(history, "epoch")
    train, val = _numbers(history, "train_loss"), _numbers(history, "val_loss")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(epoch, train, "o-", ms=3, label="train loss")
    if any(v == v for v in val):  # not all NaN
        ax.plot(epoch, val, "s-", ms=3, label="validation loss")
    readable_y(ax, train + val, "loss")
    readable_x(ax, epoch, "epoch")
    ax.grid(alpha=0.3)
    lines, labels = ax.get_legend_handles_labels()
    more, more_labels = _accuracy_axis(ax, epoch, _numbers(history, "accuracy"), "^-")
    ax.legend(lines + more, labels + more_labels, loc="lower left")
    ax.set_title("kpmap-train: " + name)
    return fig, "epochs", history


def plot_train(directory, plt):
    """loss.png: train_figure's picture."""
    fig, _, _ = train_figure(directory, plt)
    if fig is None:
        return None
    path = os.path.join(directory, "loss.png")
    fig.tight_layout()
    _save(fig, path, dpi=110)
    plt.close(fig)
    return path


def _ordinal(n):
    """The suffix of n as an ordinal: "st" (1st, 21st), "nd", "rd", "th"."""
    if n % 100 in (11, 12, 13):
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


# The most cells a side that a field's picture draws; a larger plane is read
# with a stride (every k-th cell), never whole: a picture shows no more, and a
# plane of 200000 x 200000 cells would not fit in memory.
DRAWN_CELLS = 2048


def _drawn_plane(d, np):
    """The plane of field dataset `d` that the picture shows (the middle z
    plane in 3-D), read with a stride that keeps each side at most
    DRAWN_CELLS; whether it is a plane of a 3-D field; and the strides (y, x)."""
    ny, nx = d.shape[-2:]
    sy, sx = -(-ny // DRAWN_CELLS), -(-nx // DRAWN_CELLS)
    if d.ndim == 3:
        return np.asarray(d[d.shape[0] // 2, ::sy, ::sx], dtype=float), d.shape[0] > 1, (sy, sx)
    return np.asarray(d[::sy, ::sx], dtype=float), False, (sy, sx)


def heat_figure(directory, plt):
    """The picture of a kpmap-heat run: u of the newest checkpoint (its middle
    plane in 3-D) and the residual per step (or U where the scheme solves
    nothing), with the history.csv rows it draws; (None, None) without numpy
    or h5py."""
    try:
        import h5py
        import numpy as np
    except ImportError:
        return None, None
    checkpoints = sorted(glob.glob(os.path.join(directory, "checkpoint_*.h5")))
    rows = _rows(_table(directory))
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    if checkpoints:
        newest = _readable(checkpoints[-1])
        try:
            with h5py.File(newest, "r") as f:
                d = f["fields/u"]
                if not isinstance(d, h5py.Dataset):
                    raise BadFile(f"{newest}: fields/u is no dataset; a kpmap-heat checkpoint "
                                  "holds the field u as one")
                if d.ndim not in (2, 3) or 0 in d.shape:
                    raise BadFile(f"{newest}: fields/u has shape {d.shape}; a kpmap-heat "
                                  "checkpoint holds a 2-D or 3-D field")
                if d.dtype.kind != "f":
                    raise BadFile(f"{newest}: fields/u holds {d.dtype} values; a kpmap-heat "
                                  "checkpoint holds floating-point numbers")
                u = _drawn_plane(d, np)
                d_shape = d.shape
                step = np.asarray(f.attrs.get("step", 0))
        except (OSError, KeyError) as e:
            raise BadFile(f"{newest}: not a kpmap-heat checkpoint ({e})") from None
        if step.ndim != 0 or not np.issubdtype(step.dtype, np.integer):
            raise BadFile(f"{newest}: its step attribute is {step.tolist()!r}, "
                          "not a whole number")
        step = int(step)
        plane, three_d, (sy, sx) = u
        ny, nx = d_shape[-2:]
        # A positive field over decades (heat spreading from hot strips)
        # on a log scale, where a linear one shows only the hottest cells.
        lo, hi = float(np.min(plane)), float(np.max(plane))
        norm = None
        if lo > 0 and hi > 30 * lo:
            from matplotlib.colors import LogNorm
            norm = LogNorm(vmin=max(lo, hi * 1e-8), vmax=hi)
        # Axes in the grid's cells whatever the stride: drawn pixel (j, i) is
        # cell (j * sy, i * sx), and covers the cells up to the next one drawn.
        extent = (-0.5, plane.shape[1] * sx - 0.5, -0.5, plane.shape[0] * sy - 0.5)
        image = left.imshow(plane, origin="lower", cmap="inferno", aspect="equal", norm=norm,
                            extent=extent)
        left.set_xlim(-0.5, nx - 0.5)
        left.set_ylim(-0.5, ny - 0.5)
        fig.colorbar(image, ax=left, label="u" + (" (log scale)" if norm else ""))
        title = f"u at step {step}" + (" (middle z plane)" if three_d else "")
        if sx > 1 or sy > 1:
            every = (f"every {sx}{_ordinal(sx)} cell" if sx == sy else
                     f"every {sx}{_ordinal(sx)} cell in x, {sy}{_ordinal(sy)} in y")
            title += f"\n{nx} x {ny} cells, {every} drawn"
        left.set_title(title, fontsize=10)
        left.set_xlabel("x cell")
        left.set_ylabel("y cell")
    else:
        left.text(0.5, 0.5, "no checkpoint", ha="center", va="center")
        left.set_axis_off()
    drawn = [r for s, r in zip(_numbers(rows, "step"), rows) if s > 0]
    steps = _numbers(drawn, "step")
    error = _numbers(drawn, "error")
    if steps and any(e > 0 for e in error):
        right.plot(steps, [e if e > 0 else float("nan") for e in error], "o-", ms=3)
        readable_y(right, [e for e in error if e > 0], "final relative residual of the solve",
                   log=True)
    else:
        u = _numbers(drawn, "u")
        right.plot(steps, u, "o-", ms=3)
        readable_y(right, u, "U (field summary)")
    readable_x(right, steps, "step")
    right.grid(alpha=0.3)
    right.set_title("per step")
    return fig, drawn


def plot_heat(directory, plt):
    """field.png: heat_figure's picture."""
    fig, _ = heat_figure(directory, plt)
    if fig is None:
        return None
    path = os.path.join(directory, "field.png")
    fig.tight_layout()
    _save(fig, path, dpi=110)
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

    # Across nodes, each tick says on how many: "4" over "2 nodes".
    across = any((r.get("nodes") or 1) > 1 for r in ok)

    def rank_axis(ax):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ranks)
        ax.set_xticklabels([f"{r['ranks']}\n{r['nodes']} node{'s' if r['nodes'] != 1 else ''}"
                            if across and r.get("nodes") else str(r["ranks"]) for r in ok])
        ax.minorticks_off()
        ax.set_xlabel("ranks (nodes)" if across else "ranks")
        ax.grid(True, alpha=0.3)

    def mark_oversubscribed(ax, key, scale=1.0):
        if over:
            ax.plot([r["ranks"] for r in over], [scale * r[key] for r in over], "o",
                    mfc="none", mec="tab:red", ms=11, label="oversubscribed")

    def save(fig, name):
        fig.tight_layout()
        _save(fig, os.path.join(directory, name), dpi=100)
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
    ax.set_xticklabels([f"{r['ranks']}{' †' if r['oversubscribed'] else ''}" +
                        (f"\n{r['nodes']} node{'s' if r['nodes'] != 1 else ''}"
                         if across and r.get("nodes") else "") for r in ok])
    ax.set_xlabel(("ranks (nodes)" if across else "ranks") +
                  (" († oversubscribed)" if over else ""))
    ax.set_ylabel("time (s), median")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(True, axis="y", alpha=0.3)
    save(fig, "phases.png")
    return written


def trace_slices(events):
    """The complete ('X') events of a Chrome trace as {(pid, tid): [(start_us, dur_us,
    depth, name)]}, depth counting the slices that enclose each one, as Perfetto
    stacks them."""
    tracks = {}
    for e in events:
        if e.get("ph") == "X":
            tracks.setdefault((e["pid"], e.get("tid", 0)), []).append(e)
    out = {}
    for key, evs in tracks.items():
        evs.sort(key=lambda e: (e["ts"], -e.get("dur", 0)))
        open_ends, slices = [], []
        for e in evs:
            start, dur = float(e["ts"]), float(e.get("dur", 0))
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            slices.append((start, dur, len(open_ends), e["name"]))
            open_ends.append(start + dur)
        out[key] = slices
    return out


def _check_events(trace_path, events):
    """Refuses, naming the file and the event, what is not a Chrome trace's event list."""
    if not isinstance(events, list):
        raise BadFile(f"{trace_path}: not a trace (no list of events, as --trace writes)")
    for n, e in enumerate(events):
        if not isinstance(e, dict):
            raise BadFile(f"{trace_path}: event {n} is {json.dumps(e)[:40]}, not an object")
        ints = ("pid", "tid") if e.get("ph") in ("X", "M") else ()
        for key in ints:
            if key in e and (not isinstance(e[key], int) or isinstance(e[key], bool)):
                raise BadFile(f"{trace_path}: event {n}'s {key} is {json.dumps(e[key])[:40]}, "
                              "not a whole number")
        if e.get("ph") == "X":
            if not isinstance(e.get("name"), str):
                raise BadFile(f"{trace_path}: event {n}'s name is "
                              f"{json.dumps(e.get('name'))[:40]}, not text")
            for key in ("ts", "dur"):
                v = e.get(key, 0)
                if not isinstance(v, (int, float)) or isinstance(v, bool):
                    raise BadFile(f"{trace_path}: event {n}'s {key} is {json.dumps(v)[:40]}, "
                                  "not a number")
        if e.get("ph") == "M" and not isinstance((e.get("args") or {}).get("name", ""), str):
            raise BadFile(f"{trace_path}: event {n}'s args.name is not text")


def timeline(trace_path, out_path, window_ms=None):
    """A picture of a kpmap Chrome trace (--trace, KPMAP_TRACE) laid out as Perfetto
    shows it: one band per rank, a compute and a communication track in each, nested
    regions stacked below the region that holds them. window_ms = (start, end) in
    milliseconds from the trace's start narrows it to a few steps."""
    plt = _pyplot()
    if plt is None:
        return None
    with open(_readable(trace_path), encoding="utf-8") as f:
        try:
            doc = json.load(f)
        except ValueError as e:
            raise BadFile(f"{trace_path}: not JSON ({e})") from None
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    _check_events(trace_path, events)
    names = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") in ("process_name", "thread_name"):
            names[(e["pid"], e.get("tid") if e["name"] == "thread_name" else None)] = \
                e["args"]["name"]
    slices = trace_slices(events)
    if not slices:
        return None
    t0 = min(s[0] for track in slices.values() for s in track)
    lo, hi = (None, None) if window_ms is None else (t0 + 1e3 * window_ms[0],
                                                      t0 + 1e3 * window_ms[1])
    rows, y = [], 0.0
    for key in sorted(slices):
        depth = 1 + max(s[2] for s in slices[key])
        rows.append((key, y, depth))
        y += depth + 0.6
    fig, ax = plt.subplots(figsize=(12, 0.9 + 0.32 * y))
    palette = plt.get_cmap("tab20").colors
    colour = {}
    for key, top, _ in rows:
        for start, dur, depth, name in slices[key]:
            if lo is not None and (start + dur < lo or start > hi):
                continue
            c = colour.setdefault(name.split("[")[0], palette[len(colour) % len(palette)])
            x, w = (start - t0) / 1e3, max(dur / 1e3, 1e-4)
            ax.broken_barh([(x, w)], (top + depth + 0.05, 0.9), facecolors=c,
                           edgecolors="black", linewidth=0.2)
            span = (hi - lo) / 1e3 if lo is not None else None
            if span and w > span / 25:
                ax.text(x + w / 2, top + depth + 0.5, name.replace("kpmap::", ""),
                        ha="center", va="center", fontsize=6, clip_on=True)
    ax.set_yticks([top + depth / 2 for _, top, depth in rows])
    ax.set_yticklabels([f"{names.get((pid, None), f'rank {pid}')} "
                        f"{names.get((pid, tid), tid)}" for (pid, tid), _, _ in rows],
                       fontsize=8)
    ax.set_ylim(y, -0.3)
    if lo is not None:
        ax.set_xlim(window_ms[0], window_ms[1])
    ax.set_xlabel("time since the first event (ms)")
    ax.grid(True, axis="x", alpha=0.3)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colour.values()]
    ax.legend(handles, [n.replace("kpmap::", "") for n in colour], fontsize=6, ncol=1,
              loc="upper left", bbox_to_anchor=(1.005, 1.0), frameon=False)
    ax.set_title(os.path.basename(trace_path) + (f", {window_ms[0]:g} to {window_ms[1]:g} ms"
                                                 if window_ms else ""), fontsize=9)
    fig.tight_layout()
    _save(fig, out_path, dpi=110)
    plt.close(fig)
    return out_path


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


def _table(directory):
    """The run's table: history.csv (summary.csv in a kpmap-heat folder
    written before kpmap 0.2)."""
    path = os.path.join(directory, "history.csv")
    old = os.path.join(directory, "summary.csv")
    return old if not os.path.isfile(path) and os.path.isfile(old) else path


def run_kind(directory):
    """"train" or "heat": what the run folder `directory` holds, from the
    first column of its history.csv (a row an epoch or a row a step), or
    None."""
    try:
        with open(_readable(_table(directory)), newline="", encoding="utf-8") as f:
            first = next(csv.reader(f), [""])[:1]
    except OSError:
        return None
    return {"epoch": "train", "step": "heat"}.get(first[0] if first else "")


def main(argv):
    args = argv[1:]
    if args in (["-h"], ["--help"]):
        print("usage:\n" + "\n".join(__doc__.strip().splitlines()[2:8]))
        return 0
    if len(args) == 1 and args[0] not in ("train", "heat", "trace"):
        if not os.path.isdir(args[0]):
            print(f"kpmap-plot: error: {args[0]}: no such folder (give a run's output folder)",
                  file=sys.stderr)
            return 2
        try:
            kind = run_kind(args[0])
        except BadFile as e:
            print(f"kpmap-plot: error: {e}", file=sys.stderr)
            return 2
        if kind is None:
            print(f"kpmap-plot: error: {args[0]}: not a kpmap-train or kpmap-heat run folder "
                  "(it has no history.csv with a column epoch or step)", file=sys.stderr)
            return 2
        args = [kind, args[0]]
    window = None
    if "--window" in args:
        i = args.index("--window")
        try:
            window = tuple(float(v) for v in args[i + 1].split(":"))
            assert len(window) == 2 and window[0] < window[1]
        except (IndexError, ValueError, AssertionError):
            print("kpmap: --window takes START_MS:END_MS, e.g. --window 120:135", file=sys.stderr)
            return 2
        del args[i:i + 2]
    usable = (len(args) == 2 and args[0] in ("train", "heat")) or \
        (args[:1] == ["trace"] and len(args) in (2, 3))
    if not usable or (window is not None and args[0] != "trace"):
        print("usage:\n" + "\n".join(__doc__.strip().splitlines()[2:8]), file=sys.stderr)
        return 2
    plt = _pyplot()
    if plt is None:
        print(f"kpmap: no plots ({how_to_install()})")
        return 0
    try:
        if args[0] == "trace":
            out = args[2] if len(args) == 3 else os.path.splitext(args[1])[0] + ".png"
            path = timeline(args[1], out, window)
        else:
            path = (plot_train if args[0] == "train" else plot_heat)(args[1], plt)
    except BadFile as e:
        print(f"kpmap-plot: error: {e}", file=sys.stderr)
        return 2
    except (OSError, KeyError, ValueError) as e:
        print(f"kpmap: no plot: {e}")
        return 0
    if path is None:
        print("kpmap: no plots (" + ("nothing to plot" if has_plotting() else how_to_install()) +
              ")")
    else:
        print(f"kpmap: plot written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
