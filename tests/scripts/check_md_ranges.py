#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Every multi-dimensional kernel of the library and the examples states its
iteration order and tile through kpmap::row_major_range (src/kpmap/base/policy.hpp): no
Kokkos::MDRangePolicy is written anywhere else, where it would take the backend's
default order (Iterate::Left on CUDA and HIP), and no kpmap::RowMajorRange is built
by hand, where it would take the backend's default tile.

usage: check_md_ranges.py SOURCE_DIR...
"""
import os
import re
import sys

ALLOWED = os.path.join("kpmap", "base", "policy.hpp")
PATTERN = re.compile(r"\b(MDRangePolicy|RowMajorRange)\s*<")


def main():
    found = []
    for root in sys.argv[1:]:
        for folder, _, files in os.walk(root):
            for name in files:
                if not name.endswith((".hpp", ".cpp", ".h")):
                    continue
                path = os.path.join(folder, name)
                if path.endswith(ALLOWED):
                    continue
                with open(path, encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        if PATTERN.search(line.split("//")[0]):
                            found.append(f"{path}:{number}: {line.strip()}")
    for f in found:
        print("FAILED: a range of its own (use kpmap::row_major_range): " + f)
    if not found:
        print("every MDRange states its order and tile through kpmap::row_major_range")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
