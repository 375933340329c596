#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Graceful stop: a run stopped by a signal and restarted from its last
checkpoint ends with the same result as an uninterrupted run.

usage: check_stop.py --launcher "mpiexec -n {n}" --app APP --deck DECK
                     --ranks N [--restart-ranks M] --work DIR
                     --key KEY [--key KEY ...] [--set key=value ...] [--rtol R]
                     [--stop-set key=value ...]
                     (--inject RANK:STEP | --signal SIG --to launcher|rank --after REGEX
                      | --given CHECKPOINT)

1. runs the deck uninterrupted on N ranks into WORK/full;
2. runs it again into WORK/stopped and stops it: with --inject through
   KPMAP_FAULT_INJECT=RANK:STEP:signal (rank RANK sends itself SIGTERM at
   step STEP), or with --signal by sending SIG to the launcher or to one rank
   process once a line of the output matches REGEX. The run must end within
   60 s with exit code 4, say which signal stopped it, and name in FILE
   (result.json) a checkpoint that exists. --stop-set
   settings apply to this run only: a later end (more epochs or steps) keeps
   a run that outpaces the signal's delivery from finishing before it lands;
   With --given, no run is stopped: CHECKPOINT (one kept under tests/, in the
   format of an earlier kpmap) is copied into WORK/stopped instead;
3. restarts from that checkpoint on M ranks (default N) into the same folder;
4. compares each KEY of FILE (dotted for nested objects) with the
   uninterrupted run: equal bit for bit, or within relative RTOL.
"""
import argparse
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

RESULT = "result.json"  # every app's result file (kpmap/run/output_keys.hpp)

from app_checks import fail, load, rel, run

STOPPED = 4  # kpmap::exit_code::stopped


def lookup(obj, key):
    for part in key.split("."):
        obj = obj[part]
    return obj


def children(pid):
    """The direct child processes of pid (Linux /proc)."""
    kids = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            kids += [int(k) for k in (task / "children").read_text().split()]
        except OSError:
            pass
    return kids


def stop_run(a, cmd):
    env = dict(os.environ)
    full = shlex.split(a.launcher.format(n=a.ranks)) + cmd
    if a.inject:
        env["KPMAP_FAULT_INJECT"] = a.inject + ":signal"
        print(f"$ KPMAP_FAULT_INJECT={env['KPMAP_FAULT_INJECT']} " + " ".join(full), flush=True)
        p = subprocess.run(full, capture_output=True, text=True, env=env, timeout=60)
        return p.returncode, p.stdout + p.stderr
    print("$ " + " ".join(full), flush=True)
    proc = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, start_new_session=True)
    deadline = time.monotonic() + 60
    lines = []
    pattern = re.compile(a.after)
    sig = getattr(signal, "SIG" + a.signal)
    sent = False
    for line in proc.stdout:
        lines.append(line)
        if not sent and pattern.search(line):
            if a.to == "launcher":
                target = proc.pid
            else:
                ranks = children(proc.pid)
                if not ranks:
                    os.killpg(proc.pid, signal.SIGKILL)
                    fail(f"no rank process found under the launcher (pid {proc.pid})")
                target = ranks[-1]
            print(f"sending SIG{a.signal} to pid {target} ({a.to}) after: {line.strip()}",
                  flush=True)
            os.kill(target, sig)
            sent = True
        if time.monotonic() > deadline:
            break
    try:
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        print("".join(lines[-40:]))
        fail("the stopped run was still going after 60 s")
    if not sent:
        print("".join(lines[-40:]))
        fail(f"no output line matched {a.after!r}: the signal was never sent")
    return proc.returncode, "".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--launcher", required=True)
    p.add_argument("--app", required=True)
    p.add_argument("--deck", required=True)
    p.add_argument("--ranks", type=int, required=True)
    p.add_argument("--restart-ranks", type=int)
    p.add_argument("--work", required=True)
    p.add_argument("--key", action="append", required=True)
    p.add_argument("--set", action="append", default=[])
    p.add_argument("--stop-set", action="append", default=[])
    p.add_argument("--rtol", type=float, default=0.0)
    p.add_argument("--inject")
    p.add_argument("--signal", choices=["TERM", "INT", "USR1"])
    p.add_argument("--to", choices=["launcher", "rank"], default="launcher")
    p.add_argument("--after")
    p.add_argument("--given")
    a = p.parse_args()
    if (bool(a.inject) + bool(a.signal and a.after) + bool(a.given)) != 1:
        p.error("give one of --inject, --given, or both --signal and --after")

    work = Path(a.work)
    shutil.rmtree(work, ignore_errors=True)  # no files of an earlier run
    sets = [x for s in a.set for x in ("--set", s)]
    base = [a.app, a.deck, *sets]

    full_dir = work / "full"
    run(a.launcher, a.ranks, base + ["--output", str(full_dir)])
    expected = load(full_dir / RESULT)

    stop_dir = work / "stopped"
    if a.given:
        stop_dir.mkdir(parents=True)
        checkpoint = str(stop_dir / Path(a.given).name)
        shutil.copyfile(a.given, checkpoint)
        print(f"restarting from the given checkpoint {a.given}")
    else:
        stop_sets = [x for s in a.stop_set for x in ("--set", s)]
        code, out = stop_run(a, base + stop_sets + ["--output", str(stop_dir)])
        if code != STOPPED:
            print(out[-4000:])
            fail(f"the stopped run exited with {code}, expected {STOPPED}")
        if "received: stopped" not in out:
            print(out[-4000:])
            fail("the stopped run did not say which signal stopped it")
        stopped = load(stop_dir / RESULT)
        checkpoint = stopped.get("checkpoint", "")
        if not stopped.get("stopped_by") or not checkpoint or not Path(checkpoint).is_file():
            fail(f"{RESULT} of the stopped run: stopped_by {stopped.get('stopped_by')!r}, "
                 f"checkpoint {checkpoint!r} (must exist)")
        print(f"stopped by {stopped['stopped_by']}; checkpoint {checkpoint}")

    run(a.launcher, a.restart_ranks or a.ranks,
        base + ["--output", str(stop_dir), "--restart", checkpoint])
    got = load(stop_dir / RESULT)
    if got.get("stopped_by"):
        fail(f"the restarted run reports stopped_by {got['stopped_by']!r}")
    for key in a.key:
        want, have = lookup(expected, key), lookup(got, key)
        if a.rtol == 0.0:
            if want != have:
                fail(f"{key}: {have!r} after the restart, {want!r} uninterrupted (bit for bit)")
            print(f"{key}: identical")
        else:
            d = rel(have, want)
            if d > a.rtol:
                fail(f"{key}: relative difference {d:.3e} > {a.rtol:g}")
            print(f"{key}: relative difference {d:.3e}")
    print("PASSED")


if __name__ == "__main__":
    sys.exit(main())
