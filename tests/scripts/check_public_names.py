#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Hold the apps' public names to the CHANGELOG: the deck keys (--help-deck),
the files of a run's output folder, result.json's keys and the CSV tables'
columns.

usage: check_public_names.py --manifest FILE --changelog CHANGELOG.md
                             --app NAME=BINARY:DECK ... [--work DIR]
                             [--record VERSION]

The manifest (tests/data/public_names.json) holds these names as each release
shipped them. Each app runs --help-deck and its DECK into a fresh folder under
DIR; every name of the newest release that is gone now, and every name that
is new since, must be named in the CHANGELOG's [Unreleased] section, between
backticks (`summary.json`, `output.keep`, `"nodes"`): a rename is the one
change that breaks a user's script or deck without a word. --record VERSION
stores the names as they are now as release VERSION (run it when releasing,
after the CHANGELOG's section is named). Exit status: 0 when every change is
in the CHANGELOG, 1 otherwise, 2 when an app fails to run.
"""
import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile


def deck_keys(binary):
    out = subprocess.run([binary, "--help-deck"], capture_output=True, text=True, check=True).stdout
    # "  mesh.cells (list of integers, required, >= 1)": a key's line.
    return sorted(set(re.findall(r"^  ([a-z_][a-z0-9_#.]*) \(", out, re.M)))


def key_paths(d, prefix=""):
    paths = []
    for k, v in d.items():
        paths.append(prefix + k)
        if isinstance(v, dict):
            paths += key_paths(v, prefix + k + ".")
    return paths


def run_names(binary, deck, folder):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run([binary, deck, "--set", f'output.dir="{folder}"'], capture_output=True,
                          text=True, env=env)
    if proc.returncode != 0:
        print(proc.stdout[-2000:], proc.stderr[-2000:])
        raise RuntimeError(f"{binary} {deck} exited {proc.returncode}")
    names = {"files": sorted({re.sub(r"\d{6}", "NNNNNN", f) for f in os.listdir(folder)})}
    with open(os.path.join(folder, "result.json"), encoding="utf-8") as f:
        names["result.json keys"] = sorted(key_paths(json.load(f)))
    for table in ("history.csv", "steps.csv"):
        path = os.path.join(folder, table)
        if os.path.exists(path):
            with open(path, encoding="utf-8", newline="") as f:
                names[f"{table} columns"] = next(csv.reader(f))
    return names


def unreleased(changelog):
    text = open(changelog, encoding="utf-8").read()
    m = re.search(r"^## \[Unreleased\]\n(.*?)(?=^## \[)", text, re.M | re.S)
    return m.group(1) if m else ""


def mentioned(name, section):
    token = re.compile(r"(?<![\w.])" + re.escape(name) + r"(?![\w])")
    return any(token.search(span) for span in re.findall(r"`([^`]+)`", section))


def changes(now, shipped_release, release, section):
    """What changed since `release` (its names: `shipped_release`) that
    `section` does not name."""
    failures = []
    for app, kinds in now.items():
        shipped = shipped_release.get(app, {})
        for kind in sorted(set(kinds) | set(shipped)):
            if (kind in shipped) != (kind in kinds):
                continue  # a table new or gone as a whole: its file is the change
            before = set(shipped.get(kind, []))
            after = set(kinds.get(kind, []))
            for change, names in (("gone", before - after), ("new", after - before)):
                for n in sorted(names):
                    if not mentioned(n, section):
                        failures.append(f"{app}: {kind}: `{n}` is {change} since {release} and "
                                        f"the CHANGELOG's [Unreleased] section does not name it")
    return failures


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--manifest", required=True)
    p.add_argument("--changelog", required=True)
    p.add_argument("--app", action="append", required=True, help="NAME=BINARY:DECK")
    p.add_argument("--work")
    p.add_argument("--record")
    a = p.parse_args()

    work = a.work or tempfile.mkdtemp(prefix="kpmap-public-names-")
    now = {}
    try:
        for spec in a.app:
            name, _, rest = spec.partition("=")
            binary, _, deck = rest.partition(":")
            folder = os.path.join(work, name)
            shutil.rmtree(folder, ignore_errors=True)
            names = {"deck keys": deck_keys(binary)}
            names.update(run_names(binary, deck, folder))
            now[name] = names
    except (OSError, RuntimeError, subprocess.CalledProcessError) as e:
        print(f"FAIL: {e}")
        return 2
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)

    manifest = {}
    if os.path.exists(a.manifest):
        with open(a.manifest, encoding="utf-8") as f:
            manifest = json.load(f)
    if a.record:
        manifest[a.record] = now
        with open(a.manifest + ".tmp", "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=1, sort_keys=True)
            f.write("\n")
        os.replace(a.manifest + ".tmp", a.manifest)
        print(f"recorded the names of release {a.record} in {a.manifest}")
        return 0

    def version_key(v):
        return tuple(int(x) for x in v.split("."))

    release = max(manifest, key=version_key)
    failures = changes(now, manifest[release], release, unreleased(a.changelog))
    # The check itself: a file renamed without a line is caught, with one it is not.
    app = next(iter(now))
    renamed = json.loads(json.dumps(now))
    renamed[app]["files"] = [f if f != "result.json" else "results.json"
                             for f in renamed[app]["files"]]
    caught = changes(now, renamed, "a release", "")
    passed = changes(now, renamed, "a release", "- `results.json` became `result.json`.")
    if len(caught) != 2 or passed:
        failures.append(f"the check itself: a renamed file gave {caught} without a CHANGELOG "
                        f"line and {passed} with one")
    for f in failures:
        print(f"FAIL: {f}")
    if failures:
        print("Add a CHANGELOG line for each (a rename: the old name, the new one, and the one "
              "change that moves a user's script or deck across).")
        return 1
    print(f"OK: every deck key, output file, result.json key and table column that changed since "
          f"{release} ({', '.join(now)}) is named in the CHANGELOG")
    return 0


if __name__ == "__main__":
    sys.exit(main())
