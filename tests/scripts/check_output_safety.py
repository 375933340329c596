#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What a run may write, tried as a hostile user would: each case runs an app
and checks both its exit code and that nothing it must not touch changed.

  check_output_safety.py CASE --launcher "mpiexec -n {n}" --app kpmap-heat \
      --deck inputs/heat2d_ci.toml --ranks 3 --workdir DIR

CASE is one of:
  targets        --trace and output files that are devices, FIFOs, links, folders,
                 missing folders or the input deck: exit 2, each left as it was
  lock           a second run on a busy output folder: exit 2 naming the holder's
                 pid and host; a stale lock left by a killed run does not block
  restart-table  a restart into the same folder keeps each step of the CSV table once
  non-ascii      an output folder named in any language works, and its resolved
                 deck reads back
  links          a hard link to a file elsewhere as history.csv or result.json is
                 replaced, not written through; one as the lock, or a FIFO there, is
                 refused (exit 2) and left as it was; kpmap-heat's fields/ as a
                 symbolic link is refused
  other-app      a folder that holds the other application's run is refused (exit 2)
                 and its checkpoints are left as they were
  trace-target   a --trace or KPMAP_TRACE file that is, or could become, one of the
                 run's own files is refused (exit 2) before the run, and nothing is
                 written there; KPMAP_TRACE_MAX_EVENTS is checked without a trace too
  long-path      output folders of 240 and 400 characters take checkpoints (Open MPI
                 4's MPI-IO once overflowed a buffer on them); a name of 256
                 characters or a path of 4100 is refused up front, exit 2, and nothing
                 is created
"""
import argparse
import csv
import os
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import time

# What every run leaves in its folder, by the same names for every app
# (kpmap/run/output_keys.hpp).
RESULT, TABLE, RESOLVED_DECK = "result.json", "history.csv", "deck.toml"

failures = []


def fail(msg):
    failures.append(msg)
    print("FAILED: " + msg, flush=True)


def command(args, extra, n=None):
    n = args.ranks if n is None else n
    return shlex.split(args.launcher.format(n=n)) + [args.app, args.deck] + extra


def run(args, extra, expect, env=None, timeout=120, contains=None, n=None):
    cmd = command(args, extra, n)
    print("$ " + " ".join(cmd), flush=True)
    full_env = {**os.environ, **(env or {})}
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=timeout)
    except subprocess.TimeoutExpired:
        fail(f"{' '.join(extra)}: still running after {timeout} s")
        return None
    out = p.stdout + p.stderr
    if p.returncode != expect:
        print(out[-3000:])
        fail(f"{' '.join(extra)}: exit code {p.returncode}, expected {expect}")
    if contains is not None and contains not in out:
        print(out[-3000:])
        fail(f"{' '.join(extra)}: the output does not say '{contains}'")
    return out


def kind(path):
    try:
        m = os.lstat(path).st_mode
    except FileNotFoundError:
        return "missing"
    for name, test in (("link", stat.S_ISLNK), ("fifo", stat.S_ISFIFO), ("chr", stat.S_ISCHR),
                       ("dir", stat.S_ISDIR), ("file", stat.S_ISREG)):
        if test(m):
            return name
    return "other"


def out_dir(args, name):
    return os.path.join(args.workdir, name)


def targets(args):
    w = args.workdir
    fifo = os.path.join(w, "fifo")
    os.mkfifo(fifo)
    device = os.path.join(w, "device")
    try:  # a private node (as /dev/full), never one of /dev
        os.mknod(device, stat.S_IFCHR | 0o600, os.makedev(1, 7))
    except PermissionError:
        device = None
        print("mknod is not permitted here: the device case is left to the FIFO's")
    deck_copy = os.path.join(w, "deck_copy" + os.path.splitext(args.deck)[1])
    shutil.copy(args.deck, deck_copy)
    with open(deck_copy, encoding="utf-8") as f:
        deck_text = f.read()
    precious = os.path.join(w, "precious.txt")
    with open(precious, "w", encoding="utf-8") as f:
        f.write("not kpmap's\n")
    link = os.path.join(w, "link.json")
    os.symlink(precious, link)

    cases = [(fifo, "is a FIFO"), (link, "is a symbolic link"), (w, "is a directory"),
             (deck_copy, "is not a kpmap trace"), (precious, "is not a kpmap trace"),
             (os.path.join(w, "missing", "trace.json"), "does not exist")]
    if device:
        cases.append((device, "is a character device"))
    for i, (path, why) in enumerate(cases):
        run(args, ["--output", out_dir(args, f"t{i}"), "--trace", path], 2, contains=why)
    # A trace inside the output folder the run makes is fine.
    inside = os.path.join(out_dir(args, "new"), "trace.json")
    run(args, ["--output", out_dir(args, "new"), "--trace", inside], 0)
    if kind(inside) != "file":
        fail(f"no trace at {inside}")
    # The same through the environment, for any kpmap program.
    run(args, ["--output", out_dir(args, "env")], 2, contains="does not exist",
        env={"KPMAP_TRACE": os.path.join(w, "nowhere", "x.json")})
    if os.path.exists(os.path.join(w, "missing")) or os.path.exists(os.path.join(w, "nowhere")):
        fail("a folder was created for a trace that was refused")

    # Output files: a FIFO where the result goes, a link where the table goes,
    # a FIFO named like a checkpoint, the deck where the resolved deck goes.
    for name, make, why in ((RESULT, os.mkfifo, "is a FIFO"),
                            (RESOLVED_DECK + ".tmp", os.mkfifo, "is a FIFO"),
                            (TABLE, lambda p: os.symlink(precious, p), "is a symbolic link"),
                            ("checkpoint_000001.h5", os.mkfifo, "is a FIFO")):
        out = out_dir(args, "o_" + name)
        os.makedirs(out)
        make(os.path.join(out, name))
        run(args, ["--output", out], 2, contains=why)
        if kind(os.path.join(out, name)) == "file":
            fail(f"{out}/{name} was replaced by a regular file")
    out = out_dir(args, "o_deck")
    os.makedirs(out)
    inside = os.path.join(out, RESOLVED_DECK)
    shutil.copy(args.deck, inside)
    p = command(args, ["--output", out])
    p[p.index(args.deck)] = inside
    print("$ " + " ".join(p), flush=True)
    r = subprocess.run(p, capture_output=True, text=True)
    if r.returncode != 2 or "is this run's input" not in r.stdout + r.stderr:
        print((r.stdout + r.stderr)[-2000:])
        fail(f"a run whose deck is {inside}: exit {r.returncode}, expected 2 naming the input")

    # Nothing that was there changed.
    expect = {fifo: "fifo", link: "link", precious: "file", deck_copy: "file"}
    if device:
        expect[device] = "chr"
    for path, k in expect.items():
        if kind(path) != k:
            fail(f"{path} is now a {kind(path)}, was a {k}")
    with open(precious, encoding="utf-8") as f:
        if f.read() != "not kpmap's\n":
            fail(f"{precious} was written")
    with open(deck_copy, encoding="utf-8") as f:
        if f.read() != deck_text:
            fail(f"{deck_copy} (an input deck) was written")


def lowest_priority():
    """In the busy run's child, before exec: give way to everything else.

    The busy run only has to hold its lock. At 3 ranks x 2 OpenMP threads on
    2 cores its threads wake and sleep thousands of times a second, and a
    kernel that favours waking tasks then starves new processes: on a 2-core
    Linux 6.18 machine `python3 -c 1` took 130 s beside it and the second run
    ran past its limit. Its own session is its own autogroup (where the kernel
    has them), so the group's nice value is what counts there; os.nice covers
    a kernel without.
    """
    os.nice(19)
    try:
        with open("/proc/self/autogroup", "w", encoding="ascii") as f:
            f.write("19")
    except OSError:
        pass


def lock(args):
    out = out_dir(args, "busy")
    long_run = command(args, ["--output", out] + args.long)
    print("$ " + " ".join(long_run) + " &", flush=True)
    first = subprocess.Popen(long_run, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True, preexec_fn=lowest_priority)
    try:
        lock_file = os.path.join(out, ".kpmap-lock")
        deadline = time.time() + 60
        while time.time() < deadline and not (os.path.exists(lock_file) and os.path.getsize(lock_file)):
            time.sleep(0.05)
        if first.poll() is not None:
            fail("the first run ended before the second started: lengthen it")
        text = run(args, ["--output", out], 2, contains="another run is writing to it (pid ")
        if text is not None and "on host " not in text:
            fail("the refusal does not name the host")
    finally:
        # SIGTERM to the launcher, which passes it on: the run stops with a
        # checkpoint (a signal to every process at once would reach each rank
        # twice).
        first.send_signal(signal.SIGTERM)
        try:
            first.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
            fail("the first run did not stop within 60 s of SIGTERM")
    # A lock file left by a run that was killed: its lock died with it.
    stale = out_dir(args, "stale")
    os.makedirs(stale)
    with open(os.path.join(stale, ".kpmap-lock"), "w", encoding="utf-8") as f:
        f.write("pid 999999 on host gone\n")
    run(args, ["--output", stale], 0)
    if os.path.exists(os.path.join(stale, ".kpmap-lock")):
        fail("the lock file outlived the run")


def first_column(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    return rows[0], [int(r[0]) for r in rows[1:]]


def restart_table(args):
    out = out_dir(args, "rt")
    run(args, ["--output", out], 0)
    table = os.path.join(out, TABLE)
    header, before = first_column(table)
    checkpoints = sorted(n for n in os.listdir(out) if n.startswith("checkpoint_") and n.endswith(".h5"))
    if len(checkpoints) < 2:
        fail(f"{out}: {checkpoints}: the deck must leave two checkpoints")
        return
    run(args, ["--output", out, "--restart", os.path.join(out, checkpoints[0])], 0)
    header_after, after = first_column(table)
    if header_after != header:
        fail(f"{table}: header {header_after}, was {header}")
    if after != before:
        fail(f"{table}: steps {after} after the restart into the folder, expected {before}")


def non_ascii(args):
    out = out_dir(args, "résultats 日本")
    run(args, ["--output", out], 0)
    if not os.path.isfile(os.path.join(out, RESULT)):
        fail(f"no {RESULT} in {out}")
    again = command(args, ["--output", out_dir(args, "again")])
    again[again.index(args.deck)] = os.path.join(out, RESOLVED_DECK)
    print("$ " + " ".join(again), flush=True)
    r = subprocess.run(again, capture_output=True, text=True)
    if r.returncode != 0:
        print((r.stdout + r.stderr)[-2000:])
        fail(f"the resolved deck of {out} does not read back: exit {r.returncode}")


def links(args):
    victim = os.path.join(args.workdir, "victim.txt")
    words = "a file of someone else's\n"

    def fresh_victim():
        with open(victim, "w", encoding="utf-8") as f:
            f.write(words)

    def victim_intact(what):
        with open(victim, encoding="utf-8") as f:
            if f.read() != words:
                fail(f"{what}: the file it links to was written")

    # Outputs that are hard links to a file elsewhere: replaced, the file untouched.
    for name in (TABLE, RESULT, RESOLVED_DECK):
        out = out_dir(args, "hard_" + name.replace(".", "_"))
        os.makedirs(out)
        fresh_victim()
        os.link(victim, os.path.join(out, name))
        run(args, ["--output", out], 0)
        victim_intact(name)
        os.remove(os.path.join(out, name))
    # A lock that is a hard link, a FIFO or a folder: refused and left as it was.
    for what in ("hard link", "fifo"):
        out = out_dir(args, "lock_" + what.replace(" ", "_"))
        os.makedirs(out)
        lock_file = os.path.join(out, ".kpmap-lock")
        fresh_victim()
        if what == "fifo":
            os.mkfifo(lock_file)
        else:
            os.link(victim, lock_file)
        run(args, ["--output", out], 2, contains="kpmap locks only a file of its own", timeout=60)
        if what == "fifo" and kind(lock_file) != "fifo":
            fail("the FIFO lock was removed or replaced")
        victim_intact("the lock")
        if os.path.exists(os.path.join(out, RESULT)):
            fail(f"a run with a refused lock wrote {RESULT}")
        os.remove(lock_file)
    if "heat" in os.path.basename(args.app):
        out = out_dir(args, "fields_link")
        elsewhere = out_dir(args, "elsewhere")
        os.makedirs(out)
        os.makedirs(elsewhere)
        os.symlink(elsewhere, os.path.join(out, "fields"))
        run(args, ["--output", out, "--set", "output.fields_every=1"], 2,
            contains="fields': it is a symbolic link")
        if os.listdir(elsewhere):
            fail(f"fields were written through the link: {os.listdir(elsewhere)}")


def other_app(args):
    out = out_dir(args, "other")
    first = shlex.split(args.launcher.format(n=args.ranks)) + [args.other_app, args.other_deck,
                                                              "--output", out, "--set",
                                                              "output.checkpoint_every=1"]
    print("$ " + " ".join(first), flush=True)
    r = subprocess.run(first, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        print((r.stdout + r.stderr)[-2000:])
        fail(f"the other application's run failed: exit {r.returncode}")
        return
    before = {f: os.stat(os.path.join(out, f)).st_mtime_ns for f in os.listdir(out)}
    other = os.path.basename(args.other_app)
    run(args, ["--output", out, "--set", "output.keep_last=1", "--set", "output.checkpoint_every=1"],
        2, contains=f"holds a {other} run")
    after = {f: os.stat(os.path.join(out, f)).st_mtime_ns for f in os.listdir(out)}
    if after != before:
        fail(f"the other application's folder changed: {sorted(before)} -> {sorted(after)}")


def trace_target(args):
    out = out_dir(args, "traced")
    names = ["checkpoint_000003.h5", RESULT, RESOLVED_DECK, TABLE, "checkpoint_000001.xmf"]
    if "heat" in os.path.basename(args.app):
        names.append("fields/fields_000002.h5")
    for name in names:
        run(args, ["--output", out, "--trace", os.path.join(out, name)], 2,
            contains="which the trace would replace")
        if os.path.exists(os.path.join(out, name)):
            fail(f"--trace {name}: the file was written")
    run(args, ["--output", out], 2, env={"KPMAP_TRACE": os.path.join(out, RESULT)},
        contains="KPMAP_TRACE ")
    if os.path.exists(os.path.join(out, RESULT)):
        fail(f"KPMAP_TRACE={RESULT}: the file was written")
    # Beside the run's files, under a name of its own, a trace is welcome.
    run(args, ["--output", out, "--trace", os.path.join(out, "trace.json")], 0)
    if kind(os.path.join(out, "trace.json")) != "file":
        fail("a trace beside the run's files was not written")
    for value in ("1e3", "5000001"):
        run(args, ["--output", out_dir(args, "max_events")], 2,
            env={"KPMAP_TRACE_MAX_EVENTS": value}, contains="KPMAP_TRACE_MAX_EVENTS")


def folder_of_length(args, name, length):
    """A folder under the workdir whose absolute path is `length` characters."""
    base = os.path.abspath(out_dir(args, name))
    parts, left = [], length - len(base)
    while left > 0:
        part = min(left - 1, 100)  # "/" and the name
        if part < 1:  # fold a lone slash into the previous name
            parts[-1] += "p"
            break
        parts.append("p" * part)
        left -= part + 1
    path = os.path.join(base, *parts)
    assert len(path) == length, (len(path), length)
    return path


def long_path(args):
    for length in (240, 400):
        out = folder_of_length(args, f"len{length}", length)
        run(args, ["--output", out, "--set", "output.checkpoint_every=1"], 0)
        written = os.listdir(out) if os.path.isdir(out) else []
        if not any(f.startswith("checkpoint_") and f.endswith(".h5") for f in written):
            fail(f"a folder of {length} characters holds no checkpoint: {sorted(written)}")
    refused = [(out_dir(args, "name") + "/" + "n" * 256, "a file system takes names of at most 255"),
               (out_dir(args, "path") + "/" + "/".join(["d" * 200] * 20), "a path may have")]
    for out, says in refused:
        run(args, ["--output", out], 2, contains=says)
        top = out[: out.index("/", len(args.workdir) + 1)]
        if os.path.exists(top):
            fail(f"a refused folder was created in part: {top}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("case", choices=["targets", "lock", "restart-table", "non-ascii", "links", "other-app",
                                      "trace-target", "long-path"])
    p.add_argument("--launcher", required=True)
    p.add_argument("--app", required=True)
    p.add_argument("--deck", required=True)
    p.add_argument("--ranks", type=int, default=1)
    p.add_argument("--workdir", required=True)
    p.add_argument("--other-app", help="the other application (other-app)")
    p.add_argument("--other-deck", help="a deck of the other application (other-app)")
    p.add_argument("--long", nargs="*", default=[], help="--set arguments of a run that lasts")
    args = p.parse_args()
    args.long = [a for s in args.long for a in ("--set", s)]
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    {"targets": targets, "lock": lock, "restart-table": restart_table, "non-ascii": non_ascii,
     "links": links, "other-app": other_app,
     "trace-target": trace_target, "long-path": long_path}[args.case](args)
    if failures:
        sys.exit(1)
    print(f"{args.case}: as promised")


if __name__ == "__main__":
    main()
