#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A page or comment that lists the registered pieces of a kind lists them all.

usage: check_registered_lists.py SOURCE_ROOT

The built-in solvers, layers, losses and optimizers are the names of the
KPMAP_*_BUILTIN_{SOLVER,LAYER,LOSS,OPTIMIZER} lines in src/ (what the build
registers). A list is three or more names of one kind joined by commas, "and",
"or" or "/" (`cg`, "cg", cg.cpp and CG alike); it fails when it misses one of
that kind's names, since it then tells a reader that a piece does not exist.
Prose that means every piece names the registry instead ("the registered
solvers (kpmap-heat --help-deck)"). Read: the pages that say what exists
(README.md, CONTRIBUTING.md, docs/*.md) and the comments and strings of src/,
apps/ and examples/; not docs/decks.md, which check_deck_docs.py writes from
the registry itself, nor the records of what was measured (docs/performance*.md,
docs/portability.md, bench/), whose lists name the pieces a measurement ran.
"""
import pathlib
import re
import sys

KINDS = {"SOLVER": "solvers", "LAYER": "layers", "LOSS": "losses", "OPTIMIZER": "optimizers"}
COMMENT_LEAD = re.compile(r"\n[ \t]*(?:///?|#|\*|>)?[ \t]*")


def registered(root):
    names = {kind: set() for kind in KINDS.values()}
    line = re.compile(r"^KPMAP_\w+?_BUILTIN_(SOLVER|LAYER|LOSS|OPTIMIZER)\(\s*(\w+)", re.M)
    for path in (root / "src").rglob("*.[ch]pp"):
        for kind, name in line.findall(path.read_text(encoding="utf-8")):
            names[KINDS[kind]].add(name)
    return names


def lists_of(text, names):
    """Yields (start offset, names in the list) of each list of `names`."""
    alternatives = "|".join(sorted((re.escape(n) for n in names), key=len, reverse=True))
    item = rf"[`\"']?\b({alternatives})(?:\.cpp|\.hpp)?\b[`\"']?"
    separator = r"\s*(?:,\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+|/)\s*"
    pattern = re.compile(rf"{item}(?:{separator}{item}){{2,}}", re.I)
    single = re.compile(item, re.I)
    for match in pattern.finditer(text):
        found = {m.group(1).lower() for m in single.finditer(match.group(0))}
        yield match.start(), found


def pages(root):
    for name in ("README.md", "CONTRIBUTING.md"):
        yield root / name
    records = ("decks.md", "portability.md")
    for path in sorted((root / "docs").glob("*.md")):
        if path.name not in records and not path.name.startswith("performance"):
            yield path
    for folder in ("src", "apps", "examples"):
        for path in sorted((root / folder).rglob("*")):
            if path.suffix in (".cpp", ".hpp", ".py"):
                yield path


def main():
    root = pathlib.Path(sys.argv[1])
    kinds = registered(root)
    if len(kinds["solvers"]) < 3 or len(kinds["layers"]) < 3:
        sys.exit(f"FAIL: found too few registrations in {root / 'src'}: {kinds}")
    problems = []
    for path in pages(root):
        raw = path.read_text(encoding="utf-8")
        # A list wrapped over comment lines reads as one line.
        text = COMMENT_LEAD.sub(lambda m: "\n" + " " * (len(m.group(0)) - 1), raw)
        for kind, names in kinds.items():
            if len(names) < 3:
                continue
            lowered = {n.lower() for n in names}
            for start, found in lists_of(text, names):
                missing = sorted(lowered - found)
                if missing:
                    number = raw.count("\n", 0, start) + 1
                    problems.append(f"{path.relative_to(root)}:{number}: a list of {kind} "
                                    f"({', '.join(sorted(found))}) misses {', '.join(missing)}")
    for problem in problems:
        print(problem)
    if problems:
        sys.exit(f"FAIL: {len(problems)} lists miss registered pieces: list them all, or name "
                 "the registry (\"the registered solvers (kpmap-heat --help-deck)\")")
    counts = ", ".join(f"{len(v)} {k}" for k, v in kinds.items())
    print(f"check_registered_lists: every list names all the registered pieces ({counts})")


if __name__ == "__main__":
    main()
