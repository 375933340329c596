#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Run a command that must end promptly with a given exit code and output.

usage: expect_exit.py [--within SECONDS] [--exit-code N] [--expect TEXT ...]
                      [--regex PATTERN ...] [--reject TEXT ...] [--once TEXT ...]
                      [--env VAR=VALUE ...]
                      [--checkpoint FILE:STEP ...] [--absent FILE ...] [--png FILE ...]
                      [--symlink LINK:TARGET ...] [--fifo PATH ...] -- command...

Passes when the command exits with exactly N (without --exit-code: with any
non-zero code, a failure that must happen) within SECONDS, and its combined
output contains every TEXT, each --once TEXT exactly once, and no --reject TEXT and matches every PATTERN (a Python regular
expression searched anywhere, "." matching newlines too, as ctest's
PASS_REGULAR_EXPRESSION does). A command still running after SECONDS is
killed and the check fails: that is the hang it guards against; without
--within, ctest's own timeout is the limit. A test of a run that must
succeed is "--exit-code 0 --regex ...": unlike PASS_REGULAR_EXPRESSION, which
ignores the exit code, a run that prints the line and then fails fails.
--env sets a variable for the command only. Afterwards each --checkpoint
FILE must be a readable HDF5 checkpoint (h5py) whose step attribute is
STEP (the failure left it intact), no --absent FILE may exist, and each
--png FILE (removed before the command runs) must be a PNG image.
--symlink makes LINK (and its folder) point at TARGET before the command
runs: e.g. an output file at /dev/full, whose every write fails as on a
full disk. --address-space KIB and --file-size KIB limit the command's address space
and the size of the files it writes as `ulimit -v KIB` and `ulimit -f KIB` do. --fifo makes PATH a named pipe that nothing writes to (a
program that opens it for reading blocks for ever). An argument "{empty}"
of the command is passed as an empty string (which CMake cannot pass).
"""
import argparse
import os
import re
import signal
import resource
import subprocess
import sys
import time


def check_checkpoint(path, step):
    """Problems with a checkpoint that must have survived the failure intact."""
    import h5py  # only the checks that look at files need it

    try:
        with h5py.File(path, "r") as f:
            got = int(f.attrs["step"])
            # Every dataset reads back whole.
            f.visititems(lambda _, obj: obj[()] if isinstance(obj, h5py.Dataset) else None)
    except Exception as e:  # any failure to read is the finding
        return [f"{path}: not a readable checkpoint ({e})"]
    if got != step:
        return [f"{path}: step {got}, expected {step}"]
    print(f"{path}: intact, step {step}")
    return []


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--within", type=float)
    p.add_argument("--expect", action="append", default=[])
    p.add_argument("--regex", action="append", default=[])
    p.add_argument("--reject", action="append", default=[])
    p.add_argument("--once", action="append", default=[])
    p.add_argument("--exit-code", type=int)
    p.add_argument("--env", action="append", default=[])
    p.add_argument("--checkpoint", action="append", default=[])
    p.add_argument("--absent", action="append", default=[])
    p.add_argument("--png", action="append", default=[])
    p.add_argument("--symlink", action="append", default=[])
    p.add_argument("--fifo", action="append", default=[])
    p.add_argument("--address-space", type=int)
    p.add_argument("--file-size", type=int)
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    cmd = ["" if arg == "{empty}" else arg for arg in cmd]
    if not cmd:
        p.error("no command given")

    env = dict(os.environ)
    for item in a.env:
        name, _, value = item.partition("=")
        env[name] = value
    for item in a.symlink:
        link, _, target = item.partition(":")
        os.makedirs(os.path.dirname(link) or ".", exist_ok=True)
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(target, link)
    for path in a.fifo:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        if os.path.lexists(path):
            os.remove(path)
        os.mkfifo(path)
    for path in a.png:
        if os.path.lexists(path):
            os.remove(path)
    start = time.monotonic()
    limits = [(resource.RLIMIT_AS, a.address_space), (resource.RLIMIT_FSIZE, a.file_size)]
    limits = [(which, kib * 1024) for which, kib in limits if kib is not None]

    def limit():  # as `ulimit -v KIB` and `ulimit -f KIB` would, for the command only
        for which, size in limits:
            resource.setrlimit(which, (size, size))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True, env=env,
                            preexec_fn=limit if limits else None)

    # ctest ends a test past its timeout with SIGTERM to this script alone:
    # the command, in a session of its own, must not outlive it.
    def end_command(signum, _frame):
        os.killpg(proc.pid, signal.SIGKILL)
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, end_command)
    try:
        out, _ = proc.communicate(timeout=a.within)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        print(out)
        print(f"FAIL: still running after {a.within} s (a hang)")
        return 1
    elapsed = time.monotonic() - start
    print(out)
    print(f"exit code {proc.returncode} after {elapsed:.2f} s")
    failures = []
    if a.exit_code is None and proc.returncode == 0:
        failures.append("exited 0 but should have failed")
    if a.exit_code is not None and proc.returncode != a.exit_code:
        failures.append(f"exit code {proc.returncode}, expected {a.exit_code}")
    for text in a.expect:
        if text not in out:
            failures.append(f"output lacks {text!r}")
    for text in a.once:
        if out.count(text) != 1:
            failures.append(f"output holds {text!r} {out.count(text)} times, not once")
    for text in a.reject:
        if text in out:
            failures.append(f"output holds {text!r}, which it must not")
    for pattern in a.regex:
        if not re.search(pattern, out, re.DOTALL):
            failures.append(f"output does not match {pattern!r}")
    for item in a.checkpoint:
        path, _, step = item.rpartition(":")
        failures += check_checkpoint(path, int(step))
    for path in a.absent:
        if os.path.exists(path):
            failures.append(f"{path} exists but should not")
    for path in a.png:
        try:
            with open(path, "rb") as f:
                if f.read(8) != b"\x89PNG\r\n\x1a\n":
                    failures.append(f"{path} is not a PNG image")
        except OSError as e:
            failures.append(f"{path}: {e.strerror}")
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
