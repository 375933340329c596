#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Check that every ```cpp block of a document is a marked block of a program.

usage: check_doc_snippets.py DOC.md PROGRAM.cpp [PROGRAM.cpp ...]

PROGRAM marks blocks with a line `// [name]` and ends them with `// [end]`.
Each ```cpp block in DOC must equal one marked block of one of the programs (indentation removed),
so the document cannot drift from code that ctest compiles and runs.
"""
import re
import sys
import textwrap


def blocks_of_program(text):
    blocks = {}
    for m in re.finditer(r"^[ \t]*// \[(\w+)\]\n(.*?)^[ \t]*// \[end\]", text, re.S | re.M):
        blocks[m.group(1)] = textwrap.dedent(m.group(2)).strip()
    return blocks


def main():
    doc_path, program_paths = sys.argv[1], sys.argv[2:]
    doc = open(doc_path, encoding="utf-8").read()
    program = {}
    for path in program_paths:
        for name, block in blocks_of_program(open(path, encoding="utf-8").read()).items():
            program[f"{path}:{name}"] = block
    program_path = " or ".join(program_paths)
    snippets = [textwrap.dedent(s).strip() for s in re.findall(r"```cpp\n(.*?)```", doc, re.S)]
    if not snippets:
        print(f"FAIL: {doc_path} has no ```cpp blocks")
        return 1
    missing = [s for s in snippets if s not in program.values()]
    for s in missing:
        print(f"FAIL: this block of {doc_path} is not in {program_path}:\n{s}\n")
    print(f"{len(snippets) - len(missing)} of {len(snippets)} snippets match {program_path}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
