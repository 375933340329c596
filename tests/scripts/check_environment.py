#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Every environment variable kpmap reads is one the ranks agree on and the
docs name.

usage: check_environment.py SOURCE_ROOT

Finds each KPMAP_* name read in src/ (a string literal given to getenv,
getenv_opt or seconds_from_environment) and fails unless it is in
kpmap::environment_settings (src/kpmap/base/environment.hpp), the list the
Runtime has every rank agree on before the first collective, and in the table
of docs/reliability.md's "Environment variables"; and fails for a listed name
that nothing reads (a stale entry).
"""
import pathlib
import re
import sys


def main():
    root = pathlib.Path(sys.argv[1])
    read = {}
    pattern = re.compile(r'(?:getenv|getenv_opt|seconds_from_environment)\(\s*"(KPMAP_[A-Z0-9_]+)"')
    for path in sorted((root / "src").rglob("*")):
        if path.suffix not in (".cpp", ".hpp"):
            continue
        for name in pattern.findall(path.read_text(encoding="utf-8")):
            read.setdefault(name, str(path.relative_to(root)))
    header = (root / "src/kpmap/base/environment.hpp").read_text(encoding="utf-8")
    listed_text = re.search(r"environment_settings\[\]\s*=\s*\{(.*?)\};", header, re.S)
    if not listed_text:
        sys.exit("FAIL: src/kpmap/base/environment.hpp has no environment_settings[] list")
    listed = set(re.findall(r'"(KPMAP_[A-Z0-9_]+)"', listed_text.group(1)))
    docs = (root / "docs/reliability.md").read_text(encoding="utf-8")
    section = docs.split("## Environment variables", 1)[-1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `(KPMAP_[A-Z0-9_]+)", section, re.M))
    problems = []
    for name, where in sorted(read.items()):
        if name not in listed:
            problems.append(f"{name} (read in {where}) is not in environment_settings: "
                            "the ranks would not be checked to agree on it")
        if name not in documented:
            problems.append(f"{name} (read in {where}) is not in docs/reliability.md's "
                            "table of environment variables")
    for name in sorted(listed - set(read)):
        problems.append(f"{name} is in environment_settings but nothing in src/ reads it")
    for p in problems:
        print("FAIL: " + p)
    if problems:
        sys.exit(1)
    print(f"{len(read)} environment variables, each agreed on and documented")


if __name__ == "__main__":
    main()
