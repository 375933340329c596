#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Every relative link of the Markdown docs leads somewhere.

    check_doc_links.py SOURCE_DIR

In README.md, CONTRIBUTING.md, CHANGELOG.md and docs/*.md, a link or image
`[text](target)` whose target is not a URL must name a file or folder of the
repository, and a `#anchor` (after a file, or alone for the same file) one of
that Markdown file's headings as GitHub makes anchors of them: lower case,
punctuation but `-` and `_` dropped, spaces made `-`, `-1`, `-2` ... added to
repeats. Code blocks and inline code are skipped.
"""
import glob
import os
import re
import sys

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def prose(text):
    """`text` without fenced code blocks and inline code spans."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(path):
    seen, out = {}, set()
    with open(path, encoding="utf-8") as f:
        text = re.sub(r"^```.*?^```", "", f.read(), flags=re.S | re.M)
    for m in re.finditer(r"^#{1,6}\s+(.*?)\s*#*\s*$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def main():
    root = sys.argv[1]
    files = [os.path.join(root, n) for n in ("README.md", "CONTRIBUTING.md", "CHANGELOG.md")]
    files += sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    bad = []
    for path in files:
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8") as f:
            text = prose(f.read())
        for m in LINK.finditer(text):
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            dest = path if not file_part else os.path.normpath(
                os.path.join(os.path.dirname(path), file_part))
            where = os.path.relpath(path, root)
            if not os.path.exists(dest):
                bad.append(f"{where}: link to {target}: no such file")
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                bad.append(f"{where}: link to {target}: {os.path.relpath(dest, root)} has no "
                           f"heading with the anchor #{anchor}")
    for b in bad:
        print(b)
    if bad:
        return 1
    print(f"{len(files)} files: every relative link and anchor resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
