#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Check CHANGELOG.md against the build: its newest release is the project's
version, and every breaking change says how a program moves across it.

usage: check_changelog.py CHANGELOG.md VERSION
"""
import re
import sys


def main() -> int:
    path, version = sys.argv[1], sys.argv[2]
    text = open(path, encoding="utf-8").read()
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\]", text, re.M)
    if not releases or releases[0] != version:
        print(f"FAIL: the newest release of {path} is {releases[:1]}, the project is {version}")
        return 1
    failures = []
    for section in re.findall(r"^### Changed \(breaking\)\n(.*?)(?=^##)", text, re.M | re.S):
        for item in re.split(r"^- ", section, flags=re.M)[1:]:
            if "Migration:" not in item:
                failures.append(item.splitlines()[0])
    for f in failures:
        print(f"FAIL: a breaking change without its migration: {f}")
    if failures:
        return 1
    print(f"OK: CHANGELOG.md's newest release is {version}; every breaking change has its migration")
    return 0


if __name__ == "__main__":
    sys.exit(main())
