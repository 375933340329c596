#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Every source file of kpmap says its licence in its first lines.

usage: check_licence.py SOURCE_ROOT [--fix]

A source file is C++ (.hpp, .cpp, .h and the configured .hpp.in), Python,
CMake (CMakeLists.txt, .cmake, .cmake.in), shell, or a program in scripts/ or
.ci/; inputs (decks, data, fuzz seeds, patches) are not. Each must carry
`SPDX-License-Identifier: BSD-3-Clause` (the LICENSE file at the root) in a
comment on its first line, or on its second after a `#!` line. --fix writes
the line where it is missing.
"""
import pathlib
import sys

TAG = "SPDX-License-Identifier: BSD-3-Clause"
FOLDERS = ("src", "apps", "bench", "examples", "tests", "python", "scripts", "cmake", ".ci")
SKIP = ("tests/data", "tests/decks", "tests/fuzz/seeds", "scripts/patches", "build")


def comment_for(path):
    name = path.name
    if name.endswith((".hpp", ".cpp", ".h", ".hpp.in")):
        return "// "
    if name.endswith((".py", ".cmake", ".cmake.in", ".sh")) or name == "CMakeLists.txt":
        return "# "
    return None


def sources(root):
    yield root / "CMakeLists.txt"
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            relative = path.relative_to(root).as_posix()
            if not path.is_file() or relative.startswith(SKIP) or "__pycache__" in relative:
                continue
            comment = comment_for(path)
            if comment is None and path.parent.name in ("scripts", ".ci") and \
                    path.parent.parent == root:
                first = path.read_text(encoding="utf-8").split("\n", 1)[0]
                comment = "# " if first.startswith("#!") else None
            if comment is not None:
                yield path


def main():
    root = pathlib.Path(sys.argv[1])
    fix = "--fix" in sys.argv[2:]
    missing = []
    for path in sources(root):
        comment = comment_for(path) or "# "
        lines = path.read_text(encoding="utf-8").split("\n")
        at = 1 if lines and lines[0].startswith("#!") else 0
        if any(TAG in line for line in lines[:at + 1]):
            continue
        missing.append(path.relative_to(root).as_posix())
        if fix:
            lines.insert(at, comment + TAG)
            path.write_text("\n".join(lines), encoding="utf-8")
    if missing and not fix:
        for name in missing:
            print(f"{name}: no '{TAG}' on its first line (after a #! line)")
        sys.exit(f"FAIL: {len(missing)} source files without their licence line; "
                 "tests/scripts/check_licence.py . --fix writes it")
    verb = "given" if fix else "checked"
    print(f"check_licence: {len(missing) if fix else 'all'} source files {verb} "
          f"their licence line")


if __name__ == "__main__":
    main()
