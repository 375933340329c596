#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Arrows point down only: checks every include and import against the layer
order written in CONTRIBUTING.md, and that no library or app code forks a
process.

    check_layers.py REPO_ROOT

CONTRIBUTING.md's tables "C++ layers (bottom up)" and "Python modules (bottom
up)" give, row by row from the bottom, the paths each layer holds. A C++ row names
folders (ending in /) or whole files, never a prefix of file names, so that the
folder list is the layer table. A file may include (or import) a file of its own layer
or of a layer below; anything else, or a file no row holds, fails with the file,
the line and both layers. In src/ and apps/, a call of system, popen, fork,
vfork, posix_spawn or exec* fails too: a process forked from an MPI rank is
unsafe with registered (InfiniBand/UCX) or CUDA memory. And an MPI reduction
or broadcast written outside src/kpmap/transport/ fails: host numbers are
summed one way, kpmap::psum(values, count, axis) over a mesh axis and
transport/host.hpp below the collectives (checked, their errors named).
"""
import os
import re
import sys

failures = []


def fail(message):
    failures.append(message)
    print("FAIL: " + message)


def read_table(text, title):
    """The rows [(layer name, [paths])] of the table under heading `title`."""
    m = re.search(r"^#+ " + re.escape(title) + r"\s*$", text, re.M)
    if not m:
        sys.exit(f"check_layers: CONTRIBUTING.md has no section '{title}'")
    rows = []
    for line in text[m.end():].splitlines():
        if line.startswith("#"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].isdigit():
            continue
        paths = re.findall(r"`([^`]+)`", cells[2])
        if not paths:
            sys.exit(f"check_layers: the row of layer {cells[1]} names no paths")
        rows.append((cells[1], paths))
    if not rows:
        sys.exit(f"check_layers: the table '{title}' has no rows")
    return rows


def layer_of(rel, rows):
    """(index, name) of the row holding repository path `rel`: the longest match wins."""
    best = None
    for i, (name, paths) in enumerate(rows):
        for p in paths:
            if rel == p or rel.startswith(p):
                if best is None or len(p) > best[2]:
                    best = (i, name, len(p))
    return None if best is None else best[:2]


def code_lines(path):
    """(line number, text) of a file's lines outside // and /* */ comments."""
    out = []
    in_block = False
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            text = ""
            i = 0
            while i < len(line):
                if in_block:
                    end = line.find("*/", i)
                    if end < 0:
                        i = len(line)
                    else:
                        in_block = False
                        i = end + 2
                elif line.startswith("/*", i):
                    in_block = True
                    i += 2
                elif line.startswith("//", i):
                    break
                else:
                    text += line[i]
                    i += 1
            out.append((n, text))
    return out


INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](kpmap/[^>"]+)[>"]')
FORK = re.compile(r"(?<![\w.>])(?:std::|::)?(system|popen|fork|vfork|posix_spawnp?|"
                  r"exec[lv]p?e?)\s*\(")
RAW_MPI = re.compile(r"\b(MPI_(?:I?allreduce|I?bcast|I?reduce|Reduce_scatter\w*|Scan|Exscan))\s*\(",
                     re.I)
# Strings are not calls: "kpmap::sim::fork(" in a message is text.
STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def layered_files(root, tops, suffixes, rows, table):
    """(path, repository path, layer) of every file under `tops` ending in one
    of `suffixes`; a file no row of `table` holds is a failure, not yielded."""
    for top in tops:
        for folder, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith(suffixes):
                    continue
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, root)
                mine = layer_of(rel, rows)
                if mine is None:
                    fail(f"{rel}: no {table} of CONTRIBUTING.md holds it (add it to a row)")
                    continue
                yield path, rel, mine


def check_cpp(root, rows):
    checked = 0
    for name, paths in rows:
        for p in paths:
            if not p.endswith("/") and not os.path.isfile(os.path.join(root, p)):
                fail(f"CONTRIBUTING.md: layer '{name}' names `{p}`, which is neither a "
                     "folder (ending in /) nor a file")
    for path, rel, mine in layered_files(root, ("src", "apps", "examples"),
                                         (".hpp", ".cpp", ".hpp.in"), rows, "layer"):
        checked += 1
        for n, text in code_lines(path):
            m = INCLUDE.match(text)
            if m:
                target = "src/" + m.group(1)
                theirs = layer_of(target, rows)
                if theirs is None:
                    fail(f"{rel}:{n}: includes <{m.group(1)}>, which no layer holds")
                elif theirs[0] > mine[0]:
                    fail(f"{rel}:{n}: layer '{mine[1]}' includes <{m.group(1)}> of "
                         f"layer '{theirs[1]}' above it")
            if rel.startswith(("src/", "apps/")):
                f = FORK.search(STRING.sub('""', text))
                if f:
                    fail(f"{rel}:{n}: calls {f.group(1)}(): no process is forked from "
                         "an MPI rank (plots and other helpers are steps of their own)")
            if rel.startswith(("src/", "apps/")) and not rel.startswith("src/kpmap/transport/"):
                r = RAW_MPI.search(STRING.sub('""', text))
                if r:
                    fail(f"{rel}:{n}: calls {r.group(1)}(): host numbers are reduced and "
                         "broadcast through kpmap::psum/pmax/pmin(values, count, axis) or "
                         "transport/host.hpp, not by MPI directly")
    return checked


IMPORT = re.compile(r"^\s*(?:from\s+(kpmap(?:\.\w+)*)\s+import\s+([\w, ()]+)|import\s+(kpmap(?:\.\w+)*))")


def module_path(root, module):
    """The repository path of Python module `module` (a package's __init__.py)."""
    base = os.path.join("python", *module.split("."))
    if os.path.isfile(os.path.join(root, base + ".py")):
        return base + ".py"
    return os.path.join(base, "__init__.py")


def check_python(root, rows):
    checked = 0
    for path, rel, mine in layered_files(root, (os.path.join("python", "kpmap"),), (".py",),
                                         rows, "Python layer"):
        checked += 1
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                m = IMPORT.match(line)
                if not m:
                    continue
                targets = []
                if m.group(3):
                    targets.append(m.group(3))
                else:
                    # from kpmap.scale import plan: a module if there is one, else names.
                    for item in re.split(r"[,\s()]+", m.group(2)):
                        sub = m.group(1) + "." + item
                        if item and os.path.exists(os.path.join(root, module_path(root, sub))):
                            targets.append(sub)
                    targets.append(m.group(1))
                for t in targets:
                    target = module_path(root, t)
                    theirs = layer_of(target, rows)
                    if target == rel:
                        continue
                    if theirs is None:
                        fail(f"{rel}:{n}: imports {t}, which no Python layer holds")
                    elif theirs[0] > mine[0]:
                        fail(f"{rel}:{n}: '{mine[1]}' imports {t} of '{theirs[1]}' above it")
    return checked


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    with open(os.path.join(root, "CONTRIBUTING.md"), encoding="utf-8") as f:
        text = f.read()
    n_cpp = check_cpp(root, read_table(text, "C++ layers (bottom up)"))
    n_py = check_python(root, read_table(text, "Python modules (bottom up)"))
    if failures:
        print(f"{len(failures)} arrow(s) point up or out of the layer map: see CONTRIBUTING.md")
        return 1
    print(f"check_layers: {n_cpp} C++ and {n_py} Python files, every include and import points "
          "down; no process is forked; no MPI reduction outside transport/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
