#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Check docs/pmap.md's JAX-to-kpmap table line by line against code that runs.

usage: check_pmap_table.py DOC.md TABLE_PROGRAM.cpp [MORE.cpp ...] EXAMPLES_DIR

Every line of the table (the first Markdown table of DOC) needs code that ctest
compiles and runs: a block of the table program's sources marked `// [row]
<the line's JAX cell>` ... `// [end]`, or, for a line without such a block, the example its
third cell links (install.examples builds and runs those). Every code span of
the line's kpmap cell (a `...` span that holds `::`, `(` or a KPMAP_ macro) must
appear in that code, comments removed and whitespace ignored (a formatter may
wrap it). A block whose JAX cell no line has is stale and fails the check too.
"""
import os
import re
import sys


def strip_comments(code: str) -> str:
    code = re.sub(r"/\*.*?\*/", "", code, flags=re.S)
    return re.sub(r"//[^\n]*", "", code)


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def table_rows(doc: str):
    lines = doc.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("| JAX |"))
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cells) != 3:
            raise SystemExit(f"FAIL: a table line without 3 cells: {line}")
        yield cells


def code_spans(cell: str):
    for span in re.findall(r"`([^`]+)`", cell):
        if "::" in span or "(" in span or span.startswith("KPMAP_"):
            yield span


def main() -> None:
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    doc_path, program_paths, examples_dir = sys.argv[1], sys.argv[2:-1], sys.argv[-1]
    doc = open(doc_path, encoding="utf-8").read()
    program_path = " and ".join(os.path.basename(p) for p in program_paths)
    blocks = {}
    for path in program_paths:
        program = open(path, encoding="utf-8").read()
        for m in re.finditer(r"^[ \t]*// \[row\] (.*?)\n(.*?)^[ \t]*// \[end\]", program,
                             re.S | re.M):
            if m.group(1).strip() in blocks:
                raise SystemExit(f"FAIL: two blocks for `{m.group(1).strip()}`")
            blocks[m.group(1).strip()] = squash(strip_comments(m.group(2)))
    failures = []
    seen = set()
    rows = list(table_rows(doc))
    for jax, kpmap, example in rows:
        if jax in blocks:
            code, where = blocks[jax], f"{program_path}'s block for it"
            seen.add(jax)
        else:
            link = re.search(r"\]\(\.\./examples/([^)]+)\)", example)
            if not link:
                failures.append(f"{jax}: no block in {program_path} and no example linked")
                continue
            path = os.path.join(examples_dir, link.group(1))
            code, where = squash(strip_comments(open(path, encoding="utf-8").read())), path
        for span in code_spans(kpmap):
            if squash(span) not in code:
                failures.append(f"{jax}: `{span}` is not in {where}")
    for jax in blocks:
        if jax not in seen:
            failures.append(f"{program_path} has a block for `{jax}`, which no table line has")
    for f in failures:
        print("FAIL: " + f)
    if failures:
        sys.exit(1)
    print(f"OK: all {len(rows)} lines of the table run: {len(seen)} in {program_path}, "
          f"{len(rows) - len(seen)} in the examples they link")


if __name__ == "__main__":
    main()
