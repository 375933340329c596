#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Damaged inputs are refused at load with exit code 2, naming what is wrong.

usage: check_damaged.py heat|train --launcher T --app APP --deck DECK --work DIR
                        [--ranks N ...]

Runs the application once to write a checkpoint, then for every case below
copies it, damages it with h5py (a NaN or an impossible value in a dataset,
with its checksum recomputed, so only the value can give it away; a root
attribute out of range or at odds with another) and restarts from the copy
at each rank count: the run must end with exit code 2 within 10 s and say
what the case expects. `train` also feeds a data file holding a NaN.
"""
import argparse
import os
import shlex
import shutil
import subprocess
import sys
import time

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_checkpoint import rehash  # noqa: E402  (the independent definition)


def set_element(path, name, value, index=None):
    """Sets one element of dataset `name` (the middle one by default) and
    recomputes the dataset's checksum."""
    with h5py.File(path, "r+") as f:
        d = f[name]
        a = d[...]
        flat = a.reshape(-1)
        k = flat.size // 2 if index is None else index
        flat[k] = value
        d[...] = a
        rehash(d, a)
        return tuple(int(i) for i in np.unravel_index(k, a.shape))


def set_attr(path, name, value):
    with h5py.File(path, "r+") as f:
        old = f.attrs[name]
        if isinstance(old, (bytes, str)):
            f.attrs[name] = np.bytes_(value)
        else:
            f.attrs[name] = np.array(value, dtype=np.asarray(old).dtype)


def retype_attr(path, name, value):
    """Replaces root attribute `name` by `value`, of value's own type."""
    with h5py.File(path, "r+") as f:
        del f.attrs[name]
        f.attrs[name] = value


def text_record(path, text):
    """Makes the checkpoint's position the text record of older checkpoints."""
    with h5py.File(path, "r+") as f:
        for name in ("train_seed", "epoch", "batch", "optimizer_steps"):
            if name in f.attrs:
                del f.attrs[name]
        f.attrs["rng_state"] = np.bytes_(text)


def wrapped_table(path):
    """Rewrites the checksum_blocks of the checkpoint's first array as two
    flat ranges whose counts add up to its size only modulo 2^64: the first
    starts at 2^64 - 2^40, so offset + count wraps. Returns its name."""
    with h5py.File(path, "r+") as f:
        names = []
        f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset)
                     and o.ndim >= 1 and "checksum_blocks" in o.attrs else None)
        name = sorted(names)[0]
        d = f[name]
        width = d.attrs["checksum_blocks"].shape[1]
        rows = np.zeros((2, width), dtype=np.uint64)
        big = (1 << 64) - (1 << 40)
        rows[:, 0] = 1
        rows[0, 1], rows[0, 1 + d.ndim] = big, 1 << 40
        rows[1, 1], rows[1, 1 + d.ndim] = 0, (d.size - (1 << 40)) % (1 << 64)
        d.attrs["checksum_blocks"] = rows
        return name


def run(cmd, timeout=10):
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           start_new_session=True)
    except subprocess.TimeoutExpired:
        return None, "", timeout
    return p.returncode, p.stdout + p.stderr, time.monotonic() - start


def refused_once(what, cmd, message, also=()):
    """Runs `cmd`, which must end with exit 2 within 10 s printing `message`
    exactly once (not once per rank) and every text of `also`; returns the
    failures."""
    code, out, secs = run(cmd)
    missing = [t for t in [message, *also] if t not in out]
    if code is None:
        return [f"{what}: still running after 10 s"]
    if code != 2 or missing:
        print(out[-2000:])
        return [f"{what}: exit code {code}, lacks {missing}"]
    if out.count(message) != 1:
        return [f"{what}: the message is printed {out.count(message)} times"]
    print(f"ok: {what}: exit 2 after {secs:.1f} s")
    return []


def damage_chunk(path, name):
    """Flips a byte in the middle of dataset `name`'s first chunk on disk."""
    with h5py.File(path, "r") as f:
        info = f[name].id.get_chunk_info(0)
    with open(path, "r+b") as f:
        f.seek(info.byte_offset + info.size // 2)
        byte = f.read(1)[0]
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte ^ 0xFF]))


def damaged_data(a, ranks, launch):
    """Training data files that cannot be read: exit 2 within 10 s at every
    rank count (no rank left waiting in a collective read), naming the file,
    the dataset, the deck key and why."""
    rng_ = np.random.default_rng(1)
    x = rng_.normal(size=(400, 3))

    def write(path, nan=False, **features):
        with h5py.File(path, "w") as f:
            data = x.copy()
            if nan:
                data[17, 2] = np.nan
            if features.pop("zero", False):
                data = np.zeros((400, 0))
            f.create_dataset("features", data=data, **features)
            f["targets"] = x[:, 0]

    def external(path):
        raw = path + ".bin"
        x.astype("<f8").tofile(raw)
        with h5py.File(path, "w") as f:
            f.create_dataset("features", shape=x.shape, dtype="<f8",
                             external=[(raw, 0, x.nbytes)])
            f["targets"] = x[:, 0]

    def chunk(**kw):
        def make(path):
            write(path, chunks=(50, 3), **kw)
            damage_chunk(path, "features")
        return make

    where = "dataset 'features' (data.x): samples 0 to "
    cases = [
        # (name, write(path), expected text)
        ("nan in the data", lambda p: write(p, nan=True),
         "dataset 'features': sample 17, feature 2 is nan"),
        ("bad fletcher32 checksum", chunk(fletcher32=True),
         where + "{last} cannot be read: data error detected by Fletcher32 checksum"),
        ("corrupt gzip chunk", chunk(compression="gzip"),
         where + "{last} cannot be read: inflate() failed"),
        # h5py's own LZF filter is not in the C library kpmap links.
        ("filter not available", lambda p: write(p, compression="lzf"),
         "dataset 'features' is compressed with filter 32000 (lzf), which this HDF5 library "
         "does not have (data.x)"),
        ("external storage", external,
         "dataset 'features' keeps its data in external files, which parallel HDF5 does not read"),
        ("no features", lambda p: write(p, zero=True),
         "features dataset 'features' is 400 x 0: its samples have no features (data.x)"),
    ]
    hdf5_deck = os.path.join(os.path.dirname(a.deck), "train_linear_hdf5_ci.toml")
    failures = []
    for name, make, text in cases:
        data = os.path.join(a.work, name.replace(" ", "_") + "_data.h5")
        make(data)
        for n in ranks:
            cmd = launch(n) + [a.app, hdf5_deck, "--set", f"data.path={data}", "--output",
                               os.path.join(a.work, "out_data")]
            # Rank 0 reads the first block of samples, which holds the damaged chunk.
            failures += refused_once(f"{name}, {n} rank(s)", cmd, text.format(
                last=-(-400 // n) - 1), [f"data file {data}"])
    return failures


def idx_bytes(shape, data):
    """An IDX file of unsigned bytes: the header claims `shape`, `data` follows."""
    header = bytes([0, 0, 8, len(shape)]) + b"".join(int(d).to_bytes(4, "big") for d in shape)
    return header + bytes(data)


def damaged_idx(a, ranks, launch):
    """IDX images and labels whose header, length, gzip stream or labels are
    wrong: exit 2 within 10 s at every rank count, naming the file and its key
    once."""
    import gzip
    deck = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "decks",
                        "cnn_file_images.toml")
    rng_ = np.random.default_rng(3)
    n = 60
    images = rng_.integers(0, 255, (n, 10, 10)).astype(np.uint8)
    labels = rng_.integers(0, 3, n).astype(np.uint8)
    good_labels = os.path.join(a.work, "labels.idx")
    with open(good_labels, "wb") as f:
        f.write(idx_bytes(labels.shape, labels.tobytes()))

    def raw(shape, data):
        def make(path):
            with open(path, "wb") as f:
                f.write(idx_bytes(shape, data))
        return make

    def damaged_gz(path):
        with gzip.open(path, "wb") as f:
            f.write(idx_bytes(images.shape, images.tobytes()))
        with open(path, "r+b") as f:
            size = os.path.getsize(path)
            f.seek(size // 2)
            byte = f.read(1)[0]
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([byte ^ 0xFF]))

    pixels = images.tobytes()
    # (name, write(images path), labels path or None (the good ones), expected texts)
    bad_label = labels.copy()
    bad_label[41] = 7
    bad_labels = os.path.join(a.work, "bad_labels.idx")
    with open(bad_labels, "wb") as f:
        f.write(idx_bytes(bad_label.shape, bad_label.tobytes()))
    cases = [
        # 240 x 2097156 x 2284 x 3851171736 = 2^64 + 128: read as 128-pixel images before.
        ("header product overflows", raw((240, 2097156, 2284, 3851171736), bytes(128)), None,
         ["(data.path) has an IDX header of 240 x 2097156 x 2284 x 3851171736 elements, more "
          "than 2^64 bytes"]),
        ("images cut short", raw(images.shape, pixels[:-250]), None,
         ["(data.path) has an IDX header of 60 x 10 x 10 = 6000 bytes of data, but 5750 follow "
          "it (a truncated file?)"]),
        ("trailing bytes", raw(images.shape, pixels + bytes(10)), None,
         ["6000 bytes of data, but 6010 follow it (trailing bytes"]),
        # A header claiming 2^32 - 1 images is the image file's fault, not the labels'.
        ("too many images claimed", raw((2**32 - 1, 10, 10), pixels), None,
         ["(data.path) has an IDX header of 4294967295 x 10 x 10"]),
        ("damaged gzip stream", damaged_gz, None, ["(data.path) cannot be read: incorrect data check (a damaged .gz file?)"]),
        ("label out of range", raw(images.shape, pixels), bad_labels,
         [f"data file {bad_labels} (data.labels): sample 41 has label 7, which is no class "
          "index in [0, 3)"]),
    ]
    failures = []
    for name, make, label_file, texts in cases:
        path = os.path.join(a.work, name.replace(" ", "_") + ".idx")
        make(path)
        for n_ranks in ranks:
            cmd = launch(n_ranks) + [
                a.app, deck, "--set", "data.kind=idx", "--set", f"data.path={path}",
                "--set", f"data.labels={label_file or good_labels}",
                "--output", os.path.join(a.work, "out_idx")]
            failures += refused_once(f"IDX {name}, {n_ranks} rank(s)", cmd, texts[0],
                                     [f"data file {label_file or path}"] + texts[1:])
    return failures


def another_layer(a, ranks, launch):
    """A restart of a CNN into a model with the same parameter shapes but another
    layer (another pooling, another activation): refused, naming the layer's key."""
    out = os.path.join(a.work, "cnn")
    code, text, _ = run(launch(2) + [a.app, a.cnn_deck, "--output", out, "--set",
                                     "train.max_steps=2"], timeout=120)
    if code != 0:
        print(text)
        return ["the CNN run that writes the checkpoint failed"]
    ckpt = os.path.join(out, sorted(f for f in os.listdir(out) if f.startswith("checkpoint_")
                                    and f.endswith(".h5"))[-1])
    failures = []
    for key, value, saved in (("model.layers.3.type", "avgpool2d", "maxpool2d"),
                              ("model.layers.2.type", "tanh", "relu")):
        for n in ranks:
            code, text, _ = run(launch(n) + [a.app, a.cnn_deck, "--restart", ckpt, "--output",
                                             os.path.join(a.work, "cnn_out"), "--set",
                                             f"{key}={value}"])
            says = f"key '{key}' is \"{value}\" here and \"{saved}\" in the checkpoint"
            if code != 2 or says not in (text or ""):
                print((text or "")[-2000:])
                failures.append(f"{key}={value}, {n} rank(s): exit code {code}, lacks '{says}'")
            else:
                print(f"ok: {key}={value}, {n} rank(s): exit 2")
    return failures


def main():
    p = argparse.ArgumentParser()
    p.add_argument("app_kind", choices=["heat", "train"])
    p.add_argument("--launcher", required=True)
    p.add_argument("--app", required=True)
    p.add_argument("--deck", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--ranks", type=int, action="append", default=[])
    p.add_argument("--cnn-deck", help="train: a CNN deck, restarted into another layer")
    a = p.parse_args()
    ranks = a.ranks or [1, 3]
    launch = lambda n: shlex.split(a.launcher.format(n=n))  # noqa: E731
    shutil.rmtree(a.work, ignore_errors=True)
    good = os.path.join(a.work, "good")
    # A short run (2 epochs of kpmap-train; it is slow under sanitizers): the
    # restarts are refused at load, before the deck's length matters.
    short = ["--set", "train.epochs=2"] if a.app_kind == "train" else []
    code, out, _ = run(launch(2) + [a.app, a.deck, "--output", good] + short, timeout=120)
    if code != 0:
        print(out)
        print("FAIL: the run that writes the checkpoint failed")
        return 1
    ckpt = sorted(f for f in os.listdir(good) if f.startswith("checkpoint_") and f.endswith(".h5"))[-1]
    source = os.path.join(good, ckpt)

    # (name, damage(path) -> expected texts)
    cases = []
    if a.app_kind == "heat":
        def field(name, value, rule):
            def damage(path):
                at = set_element(path, name, value)
                shown = "nan" if np.isnan(value) else ("inf" if np.isinf(value) else f"{value:g}")
                return [f"dataset '{name}': element [{', '.join(map(str, at))}] is {shown} ({rule})"]
            return damage
        cases += [
            ("nan energy", field("fields/energy", np.nan, "a checkpoint holds finite numbers only")),
            ("negative density", field("fields/density", -1.0, "it must be above zero")),
            ("zero density", field("fields/density", 0.0, "it must be above zero")),
            ("negative energy", field("fields/energy", -2.5, "it must not be negative")),
            ("inf eigenvalue", field("solver/eigenvalues", np.inf,
                                     "a checkpoint holds finite numbers only")),
            # The deck at odds with the checkpoint: the volume would jump mid-run.
            ("another domain",
             lambda path: (["key 'mesh.upper' is [20.0, 20.0] here and [10.0, 10.0] in the "
                            "checkpoint: restart file " + path + " holds another problem"],
                           ["--set", "mesh.upper=[20, 20]"])),
            ("other cells", lambda path: (["key 'mesh.cells' is [12, 12] here"],
                                          ["--set", "mesh.cells=[12, 12]"])),
            ("another state", lambda path: (["key 'states.2.density' is 7.0 here and 0.1 in"],
                                            ["--set", "states.2.density=7"])),
        ]
    else:
        def nan_param(path):
            with h5py.File(path, "r") as f:
                name = sorted(n for n in f.keys() if n.startswith("params."))[0]
            at = set_element(path, name, np.nan)
            return [f"dataset '{name}': element [{', '.join(map(str, at))}] is nan"]

        def position(name, value, expect):
            def damage(path):
                with h5py.File(path, "r+") as f:
                    del f.attrs[name]
                    f.attrs[name] = value
                return [expect]
            return damage
        def negative_moment(path):
            with h5py.File(path, "r") as f:
                name = sorted(n for n in f.keys() if n.startswith("optimizer.v."))[0]
            at = set_element(path, name, -1.0)
            return [f"dataset '{name}': element [{', '.join(map(str, at))}] is -1 "
                    "(it must not be negative)"]

        cases += [
            ("nan parameter", nan_param),
            # Adam's second moment is a mean of squares: -1 would train into NaN.
            ("negative second moment", negative_moment),
            ("epoch at odds with step",
             position("epoch", np.int64(7), "gives another epoch than attribute step")),
            ("too few optimizer steps",
             position("optimizer_steps", np.int64(1), "optimizer steps, fewer than")),
            ("optimizer steps not a number",
             position("optimizer_steps", np.float64(12.5),
                      "attribute optimizer_steps holds no integer")),
            ("negative batch", position("batch", np.int64(-2), "gives a negative batch position")),
            ("batch that would overflow",
             position("batch", np.int64(2**63 - 1),
                      "gives batch position 9223372036854775807, more than 1000000000000000")),
            ("negative seed", position("train_seed", np.int64(-5), "gives train.seed -5")),
            ("optimizer steps that would overflow",
             position("optimizer_steps", np.int64(2**63 - 1),
                      "9223372036854775807 optimizer steps, more than 1000000000000000")),
            ("unknown field in a text record",
             lambda path: (text_record(path, "train.seed=1 epoch=2 batch=0 optimizer_steps=40 "
                                             "speed=3"), ["has an unknown field 'speed=3'"])[1]),
            ("field given twice in a text record",
             lambda path: (text_record(path, "epoch=2 batch=0 optimizer_steps=40 batch=1"),
                           ["gives batch twice"])[1]),
            # The deck at odds with the checkpoint (nothing damaged).
            ("another optimizer",
             lambda path: (["key 'optimizer.kind' is \"momentum\" here and \"adam\" in the "
                            "checkpoint: restart file " + path + " was written with other "
                            "optimizer settings"], ["--set", "optimizer.kind=momentum"])),
            ("another learning rate",
             lambda path: (["key 'optimizer.learning_rate' is 0.5 here"],
                           ["--set", "optimizer.learning_rate=0.5"])),
            # Another model of the same shapes: its parameters would fit, silently.
            ("another activation",
             lambda path: (["key 'model.activation' is \"tanh\" here and \"relu\" in the "
                            "checkpoint: restart file " + path + " holds the parameters of "
                            "another model"], ["--set", "model.activation=tanh"])),
            ("restart beyond train.max_steps",
             lambda path: (["train.max_steps is 3: nothing left to do"],
                           ["--set", "train.max_steps=3"])),
        ]
    cases += [
        # Offsets and counts read from the file are checked before they are
        # added up or used to index (it was a SIGSEGV).
        ("checksum_blocks that wrap",
         lambda path: [f"dataset '{wrapped_table(path)}': row 0 of its checksum_blocks holds "
                       "1099511627776 elements from element 18446742974197923840 overrun the",
                       "the file is corrupted"]),
        ("negative step", lambda path: (set_attr(path, "step", -5), ["attribute step is -5"])[1]),
        ("step near 2^63", lambda path: (set_attr(path, "step", 2**63 - 10),
                                         ["attribute step is 9223372036854775798 (a damaged file: "
                                          "a step lies from 0 to 1000000000000000"])[1]),
        ("nan time", lambda path: (set_attr(path, "time", np.nan), ["attribute time is nan"])[1]),
        ("no ranks", lambda path: (set_attr(path, "ranks", 0), ["attribute ranks is 0"])[1]),
        ("step not an integer", lambda path: (retype_attr(path, "step", np.float64(2.5)),
                                              ["its root attribute step (an integer) is missing "
                                               "or of another type"])[1]),
        ("app with a stray space", lambda path: (set_attr(path, "app", f"kpmap-{a.app_kind} "),
                                                 [f"was written by 'kpmap-{a.app_kind} ', not by "
                                                  f"kpmap-{a.app_kind}"])[1]),
    ]

    failures = []
    for name, damage in cases:
        bad = os.path.join(a.work, name.replace(" ", "_") + ".h5")
        shutil.copyfile(source, bad)
        expect = damage(bad)
        extra = []
        if isinstance(expect, tuple):  # (texts, extra arguments): a deck at odds with the file
            expect, extra = expect
        for n in ranks:
            cmd = launch(n) + [a.app, a.deck, "--restart", bad, "--output",
                               os.path.join(a.work, "out")] + extra
            code, out, secs = run(cmd)
            what = f"{name}, {n} rank(s)"
            if code is None:
                failures.append(f"{what}: still running after 10 s")
                continue
            missing = [t for t in expect if t not in out]
            if code != 2 or missing:
                print(out[-2000:])
                failures.append(f"{what}: exit code {code}, lacks {missing}")
            else:
                print(f"ok: {what}: exit 2 after {secs:.1f} s: {expect[0]}")

    if a.app_kind == "train" and a.cnn_deck:
        failures += another_layer(a, ranks, launch)
    if a.app_kind == "train":
        failures += damaged_data(a, ranks, launch)
        failures += damaged_idx(a, ranks, launch)

    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
