#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""docs/decks.md's key tables must be what the application's schema prints.

    check_deck_docs.py APP DOC [--fix]

Runs `APP --deck-markdown` and compares its output with the block of DOC
between `<!-- BEGIN keys APPNAME -->` and `<!-- END keys APPNAME -->`.
With --fix, rewrites the block instead (run it after changing a schema).
"""
import argparse
import os
import subprocess
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("app")
    ap.add_argument("doc")
    ap.add_argument("--fix", action="store_true")
    args = ap.parse_args()
    name = os.path.basename(args.app)
    begin = f"<!-- BEGIN keys {name} -->\n"
    end = f"<!-- END keys {name} -->"
    tables = subprocess.run([args.app, "--deck-markdown"], check=True, capture_output=True,
                            text=True).stdout
    with open(args.doc, encoding="utf-8") as f:
        doc = f.read()
    if begin not in doc or end not in doc:
        print(f"{args.doc}: no '{begin.strip()}' ... '{end}' block for {name}")
        return 1
    head, rest = doc.split(begin, 1)
    current, tail = rest.split(end, 1)
    if current == tables:
        print(f"{args.doc}: the {name} key tables match its schema")
        return 0
    if args.fix:
        with open(args.doc, "w", encoding="utf-8") as f:
            f.write(head + begin + tables + end + tail)
        print(f"{args.doc}: rewrote the {name} key tables")
        return 0
    print(f"{args.doc}: the {name} key tables differ from `{name} --deck-markdown`; "
          f"run tests/scripts/check_deck_docs.py {args.app} {args.doc} --fix")
    import difflib
    sys.stdout.writelines(difflib.unified_diff(current.splitlines(True), tables.splitlines(True),
                                               "docs", "schema"))
    return 1


if __name__ == "__main__":
    sys.exit(main())
