#!/usr/bin/env python3
"""Read a kpmap checkpoint with h5py, independently of kpmap, and check it.

usage: check_checkpoint.py FILE.h5 RANKS

Checks the root attributes, the values of the distributed field
(field(i, j) = 1000 i + j on 7 x 5), the replicated vector, each dataset's
checksum (recomputed here from its definition in docs/checkpoints.md), and
that the XDMF sidecar parses and points at datasets of the right shape.
"""
import os
import sys
import xml.etree.ElementTree as ET

import h5py
import numpy as np

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
            stored = int(f[name].attrs["checksum"])
            check(stored == checksum(f[name][...]), f"checksum of {name}")

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
