#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""File names that are no UTF-8 text: a deck may be named so (the name is only
echoed), an output folder may not (output.dir is a deck key, and a deck is
UTF-8 text), and the refusal names the argument and comes from every rank
together.

usage: check_names.py --launcher T --train APP --heat APP --train-deck DECK
                      --tea-deck DECK --work DIR [--ranks N ...]

For each rank count: kpmap-train on a copy of DECK named lin_<0xFF>.toml and
kpmap-heat on a TeaLeaf deck named tea_<0xFF>.in run (exit 0; the resolved
deck.toml names the file with \\xFF); --output DIR<0xFF> and
--set output.dir="DIR<0xFF>" end with exit 2 within 10 s, the message printed
once, naming --output or the key.
"""
import argparse
import os
import shlex
import shutil
import subprocess
import sys
import time

FF = b"\xff"


def run(cmd, timeout=60):
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=timeout, start_new_session=True)
    except subprocess.TimeoutExpired:
        return None, "", timeout
    out = (p.stdout + p.stderr).decode("utf-8", errors="replace")
    return p.returncode, out, time.monotonic() - start


def main():
    p = argparse.ArgumentParser()
    for name in ("--launcher", "--train", "--heat", "--train-deck", "--tea-deck", "--work"):
        p.add_argument(name, required=True)
    p.add_argument("--ranks", type=int, action="append", default=[])
    a = p.parse_args()
    ranks = a.ranks or [1, 3]
    work = os.fsencode(a.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    lin = os.path.join(work, b"lin_" + FF + b".toml")
    tea = os.path.join(work, b"tea_" + FF + b".in")
    shutil.copyfile(a.train_deck, lin)
    shutil.copyfile(a.tea_deck, tea)
    failures = []
    for n in ranks:
        launch = [os.fsencode(x) for x in shlex.split(a.launcher.format(n=n))]
        # A deck whose name is no UTF-8 runs; its resolved deck names it with \xFF.
        for app, deck, short in ((a.train, lin, "lin"), (a.heat, tea, "tea")):
            out = os.path.join(work, f"{short}_{n}".encode())
            code, text, _ = run(launch + [os.fsencode(app), deck, b"--output", out])
            what = f"{short}_<FF> deck, {n} rank(s)"
            if code != 0:
                print(text[-2000:])
                failures.append(f"{what}: exit code {code}")
                continue
            with open(os.path.join(out, b"deck.toml"), encoding="utf-8") as f:
                head = f.readline()
            if "_\\xFF." not in head:
                failures.append(f"{what}: deck.toml begins {head!r}")
            else:
                print(f"ok: {what}: exit 0, deck.toml names it as {head.split()[-1]}")
        # An output folder whose name is no UTF-8: refused by every rank together.
        bad = os.path.join(work, b"o" + FF)
        for args, says in (([b"--output", bad], "--output: \""),
                           ([b"--set", b'output.dir="' + bad + b'"'],
                            "key 'output.dir': its value is not UTF-8 text (byte")):
            code, text, secs = run(launch + [os.fsencode(a.train), os.fsencode(a.train_deck)] +
                                   args, timeout=10)
            what = f"{args[0].decode()} with 0xFF, {n} rank(s)"
            if code != 2 or says not in text or text.count(says) != 1:
                print(text[-2000:])
                failures.append(f"{what}: exit code {code}, '{says}' printed "
                                f"{text.count(says)} times")
            elif "MPI_ABORT" in text:
                failures.append(f"{what}: one rank aborted the job")
            else:
                print(f"ok: {what}: exit 2 after {secs:.1f} s")
            if os.path.exists(bad):
                failures.append(f"{what}: the folder was made")
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
