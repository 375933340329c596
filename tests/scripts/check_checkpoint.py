#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Read a kpmap checkpoint with h5py, independently of kpmap, and check it.

usage: check_checkpoint.py FILE.h5 RANKS

Checks the root attributes, the values of the distributed field
(field(i, j) = 1000 i + j on 7 x 5), the replicated vector, each dataset's
checksum (XXH3 of each block written, recomputed here from its definition in
docs/checkpoints.md; `checksum` is the earlier algorithm's definition), and
that the XDMF sidecar parses and points at datasets of the right shape.
"""
import os
import sys
import xml.etree.ElementTree as ET

import h5py
import numpy as np
import xxhash

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def checksum(array):
    flat = np.ascontiguousarray(array).reshape(-1)
    bits = flat.view(np.uint64 if flat.dtype.itemsize == 8 else np.uint32)
    total = 0
    for g, b in enumerate(bits.tolist()):
        total = (total + splitmix64(int(b) ^ ((g * GOLDEN) & MASK))) & MASK
    return total


def block_elements(array, row):
    """The elements of the block a row of a dataset's checksum_blocks
    describes, in the block's order (docs/checkpoints.md): flags (1: a flat
    range), offset, count, box_offset, box_count (each as many values as the
    array has dimensions), hash."""
    a = np.ascontiguousarray(array)
    dims = a.ndim
    if dims == 0:
        return a.reshape(-1)
    field = [row[1 + f * dims: 1 + (f + 1) * dims] for f in range(4)]
    offset, count, box_offset, box_count = field
    if row[0] == 1:
        if any(box_count):
            a = a[tuple(slice(o, o + c) for o, c in zip(box_offset, box_count))]
        return np.ascontiguousarray(a).reshape(-1)[offset[0]:offset[0] + count[0]]
    return np.ascontiguousarray(a[tuple(slice(o, o + c) for o, c in zip(offset, count))])


def xxh3_rows(array, table):
    """Each row of a checksum_blocks table with its hash recomputed from
    `array`: XXH3-64 (seed 0) of the block's bytes."""
    out = np.array(table, dtype=np.uint64)
    for r, row in enumerate(out.tolist()):
        out[r, -1] = xxhash.xxh3_64_intdigest(block_elements(array, row).tobytes())
    return out


def verifies(dataset):
    """Whether a dataset's checksum (either algorithm) matches its data."""
    a = dataset[...]
    if "checksum_algorithm" in dataset.attrs:
        table = dataset.attrs["checksum_blocks"]
        covered = sum(block_elements(a, row).size for row in table.tolist())
        return covered == a.size and np.array_equal(xxh3_rows(a, table), table)
    return int(dataset.attrs["checksum"]) == checksum(a)


def rehash(dataset, array):
    """Stores the checksum of `array` in the dataset's attributes."""
    if "checksum_algorithm" in dataset.attrs:
        dataset.attrs["checksum_blocks"] = xxh3_rows(array, dataset.attrs["checksum_blocks"])
    else:
        dataset.attrs["checksum"] = np.uint64(checksum(array))


def main():
    path, ranks = sys.argv[1], int(sys.argv[2])
    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)

    with h5py.File(path, "r") as f:
        a = f.attrs
        check(a["app"] == b"write_checkpoint" or a["app"] == "write_checkpoint", "app")
        check(int(a["step"]) == 3 and float(a["time"]) == 1.5, "step and time")
        check(int(a["ranks"]) == ranks, f"ranks {a['ranks']} != {ranks}")
        deck = a["deck"]
        deck = deck.decode() if isinstance(deck, bytes) else deck
        check(deck == "[grid]\nnx = 5\n", "deck text")
        t = f["fields/temperature"][...]
        i, j = np.meshgrid(np.arange(7), np.arange(5), indexing="ij")
        check(t.shape == (7, 5) and np.array_equal(t, 1000.0 * i + j), "field values")
        check(np.array_equal(f["params"][...], np.full(3, 0.5)), "replicated params")
        for name in ("fields/temperature", "params"):
            d = f[name]
            check(d.attrs["checksum_algorithm"] in (b"xxh3-64 of each written block",
                                                    "xxh3-64 of each written block"),
                  f"checksum algorithm of {name}")
            check(verifies(d), f"checksum of {name}")
            # A changed element changes its block's hash.
            a = d[...]
            a.reshape(-1)[a.size // 2] += 1.0
            check(not np.array_equal(xxh3_rows(a, d.attrs["checksum_blocks"]),
                                     d.attrs["checksum_blocks"]), f"a change to {name} is seen")
        # The blocks as written: the field's row blocks (one a rank), the
        # replicated vector once.
        check(len(f["fields/temperature"].attrs["checksum_blocks"]) == ranks, "a block a rank")
        check(len(f["params"].attrs["checksum_blocks"]) == 1, "replicated data written once")

    xmf = path[:-3] + ".xmf"
    root = ET.parse(xmf).getroot()
    items = [d for d in root.iter("DataItem") if d.get("Format") == "HDF"]
    check(len(items) == 1, "one HDF DataItem")
    file_part, dataset = items[0].text.strip().split(":")
    check(os.path.exists(os.path.join(os.path.dirname(xmf), file_part)), "sidecar names the file")
    check(dataset == "/fields/temperature" and items[0].get("Dimensions") == "7 5",
          "sidecar dataset and shape")
    topo = root.find(".//Topology")
    check(topo.get("TopologyType") == "2DCoRectMesh" and topo.get("Dimensions") == "8 6",
          "sidecar topology (nodes = cells + 1)")

    for f in failures:
        print("FAIL: " + f)
    print(f"{path}: {'OK' if not failures else 'FAILED'} (read with h5py {h5py.__version__})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
