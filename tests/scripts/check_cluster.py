#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""kpmap across simulated hosts: checks run inside scripts/sim-cluster.

    sim-cluster --hosts SPEC -- check_cluster.py CASE --bin DIR --work DIR [options]

CASE is one of
    info        kpmap-info reports each rank's host and local rank as SPEC places them
    same-heat   kpmap-heat --deck across the hosts and on one host at the same rank
                count: the final checkpoints are equal bit for bit
    same-train  kpmap-train --deck likewise
    program     a test program (--program, Catch2 over MPI) across the hosts passes
    restart     a kpmap-heat checkpoint written across the hosts continues on one
                host at 3 ranks, and one written on one host at 3 ranks continues
                across the hosts: both end where an uninterrupted run ends (1e-12)
    lost        --app (kpmap-heat or kpmap-train) across the hosts; once a checkpoint
                exists the last host is lost (--how link-down: its link goes down;
                kill: SIGKILL to every process on it). The job must end within
                --within seconds with one line naming that host, its ranks, the step
                and the last good checkpoint. That checkpoint equals an uninterrupted
                run's of the same step bit for bit, and the run continued from it on
                the remaining hosts ends as the uninterrupted run continued from its
                own at the same rank count on one host, bit for bit (kpmap-heat: and
                within 1e-12 of the uninterrupted run itself)
    scale       kpmap-scale's strong and weak studies of kpmap-heat --deck at 1 rank per
                host, from the cluster's hostfile: the node column says 1, 2, 3, ...
    slow        kpmap-heat across the hosts; once a checkpoint exists the last host's
                link is limited to --rate (tc tbf): a host that only slows down is not
                lost, and the run ends as on one host, bit for bit
    fails       --app across the hosts with KPMAP_FAULT_INJECT=--inject (a rank that
                raises an error, exits or is killed while its host stays up; --map
                passes mpirun --map-by): the job ends within --within seconds, its
                output holds every --expect and never says a host stopped answering
    relaunch    --app through kpmap-run --relaunch 1 (its hosts: the cluster's
                hostfile); once a checkpoint exists the last host is lost (--how). The
                job is relaunched on the hosts left from the checkpoint it named, within
                60 s of the fault to its first step, and ends 0 where the uninterrupted
                run continued from the same checkpoint at the same ranks ends, bit for
                bit (kpmap-heat: and within 1e-12 of the uninterrupted run itself)
    stop-cut    --app across the hosts; once a checkpoint exists, SIGUSR1 to mpirun
                and at once the last host's link down: the job ends within --within
                seconds, one line naming the host and the last good checkpoint, which
                reads back whole
    stop-flap   --app across the hosts; once a checkpoint exists the last host's link
                goes down, SIGUSR1 goes to mpirun a second later, and the link comes
                back after --flap seconds (less than KPMAP_HOST_TIMEOUT): the run stops
                as asked (exit 4, its checkpoint of the step it names), no host is lost

The launch line across the hosts is docs/cluster.md's (Open MPI's keepalive
settings included); "one host" is mpirun -n N on the cluster's head. Each case
writes only its own folders under --work, which it replaces.
"""
import argparse
import csv
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time

import h5py
import numpy as np

# What docs/cluster.md and kpmap-scale give Open MPI to find a silent host.
KEEPALIVE = ["--mca", "oob_tcp_keepalive_time", "10", "--mca", "oob_tcp_keepalive_intvl", "5",
             "--mca", "oob_tcp_keepalive_probes", "3"]


def fail(msg):
    print("FAILED: " + msg, flush=True)
    sys.exit(1)


def hosts_spec():
    spec = os.environ.get("KPMAP_SIM_HOSTS")
    if not spec:
        fail("KPMAP_SIM_HOSTS is unset: run this inside scripts/sim-cluster")
    return [(h, int(s)) for h, s in (part.split(":") for part in spec.split(","))]


def across(hosts=None):
    """The launch line across the cluster's hosts (all of them, or `hosts`)."""
    spec = hosts or hosts_spec()
    total = sum(s for _, s in spec)
    host_arg = ",".join(f"{h}:{s}" for h, s in spec)
    return ["mpirun", "--host", host_arg, "-n", str(total)] + KEEPALIVE


def one_host(n):
    return ["mpirun", "--oversubscribe", "-n", str(n)]


def run(cmd):
    print("$ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        print(p.stdout[-4000:])
        print(p.stderr[-4000:])
        fail(f"exit code {p.returncode}")
    return p


def fresh(a, name):
    """A folder of this case's under --work, emptied."""
    path = os.path.join(a.work, name)
    shutil.rmtree(path, ignore_errors=True)
    return path


def float_datasets(path):
    """A checkpoint's floating-point datasets, by name (checksum tables, which
    follow the decomposition, are integers)."""
    out = {}

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset) and obj.dtype.kind == "f":
            out[name] = np.asarray(obj[()], dtype=float)

    with h5py.File(path, "r") as f:
        f.visititems(visit)
    return out


def newest_checkpoint(folder):
    names = sorted(n for n in os.listdir(folder) if re.fullmatch(r"checkpoint_[0-9_]+\.h5", n))
    if not names:
        fail(f"no checkpoint in {folder}")
    return os.path.join(folder, names[-1])


def compare(a, b, rtol, what):
    """Two checkpoints' floating-point datasets: equal (rtol 0) or within rtol."""
    da, db = float_datasets(a), float_datasets(b)
    if not da or sorted(da) != sorted(db):
        fail(f"{what}: {a} and {b} hold other datasets ({sorted(da)} against {sorted(db)})")
    worst = 0.0
    for n in sorted(da):
        x, y = da[n], db[n]
        if x.shape != y.shape:
            fail(f"{what}: dataset {n} is {x.shape} in one and {y.shape} in the other")
        if rtol == 0 and not np.array_equal(x, y):
            fail(f"{what}: dataset {n} differs in {int(np.count_nonzero(x != y))} of {x.size}")
        worst = max(worst, float(np.linalg.norm(x - y) / max(np.linalg.norm(y), 1e-300)))
    if worst > rtol:
        fail(f"{what}: largest relative difference {worst:.3e} > {rtol:g}")
    print(f"OK: {what}: {len(da)} datasets " +
          ("equal bit for bit" if rtol == 0 else f"within {worst:.2e} (<= {rtol:g})"), flush=True)


def case_info(a):
    spec = hosts_spec()
    total = sum(s for _, s in spec)
    out = run(across() + [os.path.join(a.bin, "kpmap-info")]).stdout
    want = f"ranks: {total} on {len(spec)} node(s)"
    if want not in out:
        fail(f"kpmap-info does not say '{want}':\n{out}")
    # Open MPI fills each host's slots in turn: ranks 0..s0-1 on the first host ...
    rank = 0
    for node, (host, slots) in enumerate(spec):
        for local in range(slots):
            line = f"rank {rank}: host {host}, node {node} local rank {local}/{slots},"
            if line not in out:
                fail(f"kpmap-info has no line '{line}':\n{out}")
            rank += 1
    print(f"OK: {total} ranks on {len(spec)} hosts, each with its host and local rank")


def app_cmd(launch, a, app, out, extra=()):
    return [*launch, os.path.join(a.bin, app), a.deck, "--output", out,
            *[f"--set={s}" for s in a.set], *extra]


def case_same(a, app):
    total = sum(s for _, s in hosts_spec())
    finals = []
    for where, launch in (("hosts", across()), ("one-host", one_host(total))):
        out = fresh(a, where)
        run(app_cmd(launch, a, app, out))
        finals.append(newest_checkpoint(out))
    if os.path.basename(finals[0]) != os.path.basename(finals[1]):
        fail(f"the runs end in {finals[0]} and {finals[1]}")
    compare(finals[0], finals[1], 0,
            f"{app} {os.path.basename(a.deck)} on {total} ranks, across the hosts and on one")


def case_program(a):
    out = run(across() + [a.program] + a.args).stdout
    plain = re.sub(r"\x1b\[[0-9;]*m", "", out)
    # Catch2's last word: every case passed, or some passed and some skipped
    # (a case that needs another rank count), none failed.
    summary = [line for line in plain.splitlines()
               if "All tests passed" in line or
               (line.startswith("test cases:") and "passed" in line and "failed" not in line)]
    if not summary:
        fail(f"{a.program} did not say that its tests passed:\n{out[-2000:]}")
    print(f"OK: {os.path.basename(a.program)} across the hosts: {summary[-1].strip()}")


def case_restart(a):
    total = sum(s for _, s in hosts_spec())
    split = [f"--set=time.end_step={a.split}"]
    ref = fresh(a, "uninterrupted")
    run(app_cmd(one_host(total), a, "kpmap-heat", ref))
    reference = newest_checkpoint(ref)
    first = fresh(a, "hosts-then-one")
    run(app_cmd(across(), a, "kpmap-heat", first, split))
    run(app_cmd(one_host(3), a, "kpmap-heat", first, ["--restart", newest_checkpoint(first)]))
    compare(newest_checkpoint(first), reference, 1e-12,
            f"written across the hosts at {total} ranks, continued on one host at 3")
    second = fresh(a, "one-then-hosts")
    run(app_cmd(one_host(3), a, "kpmap-heat", second, split))
    run(app_cmd(across(), a, "kpmap-heat", second, ["--restart", newest_checkpoint(second)]))
    compare(newest_checkpoint(second), reference, 1e-12,
            f"written on one host at 3 ranks, continued across the hosts at {total}")


def run_with_fault(a, out, fault, then=()):
    """--app across the hosts into `out`; once it has written a checkpoint,
    `fault` (a sim-cluster subcommand) on the last host, then each of `then`,
    (seconds after the fault, what) in order: "usr1" (SIGUSR1 to mpirun) or a
    subcommand. Returns the exit code and the run's output."""
    victim = hosts_spec()[-1][0]
    cmd = app_cmd(across(), a, a.app, out)
    print("$ " + " ".join(cmd), flush=True)
    log_path = os.path.join(a.work, "run.log")
    with open(log_path, "w") as log:
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + 120
        while not (os.path.isdir(out) and any(n.endswith(".h5") for n in os.listdir(out))):
            if p.poll() is not None or time.time() > deadline:
                p.kill()
                fail(f"no checkpoint before the run ended or in 120 s:\n{open(log_path).read()}")
            time.sleep(0.05)
        tool = os.environ.get("KPMAP_SIM_TOOL", "sim-cluster")

        def act(what):
            if what == ["usr1"]:
                p.send_signal(signal.SIGUSR1)
                print("SIGUSR1 to mpirun", flush=True)
            else:
                subprocess.run([tool, what[0], victim, *what[1:]], check=True)
                print(f"{' '.join(what)} on {victim}", flush=True)

        act(fault)
        at = time.time()
        for after, what in then:
            time.sleep(max(0.0, at + after - time.time()))
            act(what)
        try:
            code = p.wait(timeout=a.within)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            fail(f"the job still ran {a.within:g} s after {' '.join(fault)} on {victim}:\n"
                 f"{open(log_path).read()[-3000:]}")
    took = time.time() - at
    text = open(log_path).read()
    print("\n".join(line for line in text.splitlines() if not line.startswith(("step ", " "))))
    print(f"the job ended {took:.1f} s after {' '.join(fault)} on {victim}, exit code {code}",
          flush=True)
    return code, text


def case_slow(a):
    total = sum(s for _, s in hosts_spec())
    out = fresh(a, "run")
    code, _ = run_with_fault(a, out, ["limit", a.rate])
    if code != 0:
        fail(f"a host whose link was only slowed to {a.rate} ended the job (exit code {code})")
    ref = fresh(a, "one-host")
    run(app_cmd(one_host(total), a, "kpmap-heat", ref))
    compare(newest_checkpoint(out), newest_checkpoint(ref), 0,
            f"with the last host's link limited to {a.rate} mid-run, against one host")


def case_scale(a):
    spec = hosts_spec()
    counts = ",".join(str(n) for n in range(1, len(spec) + 1))
    scale = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                         "kpmap-scale")
    launcher = f"mpirun --hostfile {os.environ['KPMAP_SIM_HOSTFILE']} -n {{ranks}}"
    for mode in ("strong", "weak"):
        out = fresh(a, mode)
        run([sys.executable, scale, "--app", os.path.join(a.bin, "kpmap-heat"), "--deck", a.deck,
             "--ranks", counts, "--mode", mode, "--repeat", "1", "--out", out,
             "--launcher", launcher, *[f"--set={x}" for x in a.set]])
        with open(os.path.join(out, "scaling.csv"), newline="") as f:
            rows = list(csv.DictReader(f))
        got = [(r["ranks"], r["nodes"], r["status"]) for r in rows]
        want = [(str(n), str(n), "ok") for n in range(1, len(spec) + 1)]
        if got != want:
            fail(f"{mode} study: (ranks, nodes, status) {got}, expected {want}")
        pictures = [n for n in ("speedup.png", "efficiency.png", "phases.png")
                    if os.path.isfile(os.path.join(out, n))]
        print(f"OK: {mode} study at {counts} ranks on {counts} hosts, the node column says so; "
              f"pictures: {', '.join(pictures) or 'none (no matplotlib)'}", flush=True)


def case_fails(a):
    out = fresh(a, "run")
    cmd = across()
    if a.map:
        cmd += ["--map-by", a.map]
    cmd = ["mpirun", "-x", f"KPMAP_FAULT_INJECT={a.inject}"] + cmd[1:]
    cmd = app_cmd(cmd, a, a.app, out)
    print("$ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    start = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.within)
    except subprocess.TimeoutExpired:
        fail(f"the job still ran {a.within:g} s after it started")
    text = p.stdout + p.stderr
    print("\n".join(line for line in text.splitlines() if line.startswith("kpmap")))
    print(f"the job ended after {time.time() - start:.1f} s, exit code {p.returncode}")
    if p.returncode == 0:
        fail("the job ended with exit code 0")
    if "stopped answering" in text:
        fail("a host that stayed up was reported as having stopped answering")
    for e in a.expect:
        if e not in text:
            fail(f"the output lacks {e!r}")
    print(f"OK: KPMAP_FAULT_INJECT={a.inject}{' --map-by ' + a.map if a.map else ''}: "
          f"named as it is, no host reported lost")


def against_uninterrupted_continued(a, out, ref, same_step, left, what):
    """The run in `out`, continued from a checkpoint at `left` ranks, ends as the
    uninterrupted run's checkpoint of the same step (`same_step`) continued on
    one host at `left` ranks, bit for bit; kpmap-heat's also within 1e-12 of
    the uninterrupted run's end (`ref`, another rank count)."""
    ref_continued = fresh(a, "uninterrupted-continued")
    run(app_cmd(one_host(left), a, a.app, ref_continued, ["--restart", same_step]))
    compare(newest_checkpoint(out), newest_checkpoint(ref_continued), 0,
            f"{what}, against the uninterrupted run's checkpoint continued at {left} ranks")
    if a.app == "kpmap-heat":
        compare(newest_checkpoint(out), newest_checkpoint(ref), 1e-12,
                "the same against the uninterrupted run's end (another rank count)")


def case_relaunch(a):
    spec = hosts_spec()
    victim = spec[-1][0]
    remaining = spec[:-1]
    left = sum(s for _, s in remaining)
    total = sum(s for _, s in spec)
    out = fresh(a, "run")
    kpmap_run = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                             "kpmap-run")
    # Every checkpoint kept: the one relaunched from is compared afterwards.
    cmd = [sys.executable, kpmap_run, "--relaunch", "1", "--"] + app_cmd(
        [], a, a.app, out, ["--set=output.keep_last=1000"])
    print("$ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    lines = []  # (time, line)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def read():
        for line in p.stdout:
            lines.append((time.time(), line))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.time() + 120
    while not (os.path.isdir(out) and any(n.endswith(".h5") for n in os.listdir(out))):
        if p.poll() is not None or time.time() > deadline:
            p.kill()
            fail("no checkpoint before the run ended or in 120 s")
        time.sleep(0.05)
    tool = os.environ.get("KPMAP_SIM_TOOL", "sim-cluster")
    subprocess.run([tool, a.how, victim], check=True)
    at = time.time()
    print(f"{a.how} on {victim}", flush=True)
    try:
        code = p.wait(timeout=a.within)
    except subprocess.TimeoutExpired:
        p.kill()
        fail(f"kpmap-run still ran {a.within:g} s after {a.how} on {victim}")
    reader.join(timeout=10)
    text = "".join(line for _, line in lines)
    print("\n".join(line for line in text.splitlines() if line.startswith("kpmap")))
    if code != 0:
        fail(f"kpmap-run ended with exit code {code}")
    said = re.search(rf"kpmap-run: host {victim} lost; relaunch 1 of 1 on "
                     rf"{re.escape(','.join(f'{h}:{s}' for h, s in remaining))} \({left} ranks\) "
                     r"from (\S+)", text)
    if not said:
        fail(f"no line says {victim} was lost and the job relaunched on the hosts left")
    last_good = said.group(1)
    relaunched = next(t for t, line in lines if line.startswith("kpmap-run: host "))
    first_step = next((t for t, line in lines
                       if t >= relaunched and re.match(r"(step|epoch) \d+", line)), None)
    if first_step is None:
        fail("the relaunched run printed no step")
    print(f"OK: relaunched from {last_good}; its first step {first_step - at:.1f} s after the "
          f"fault", flush=True)
    if first_step - at > 60:
        fail(f"the relaunched run's first step came {first_step - at:.1f} s after the fault (> 60)")
    ref = fresh(a, "uninterrupted")
    run(app_cmd(one_host(total), a, a.app, ref, ["--set=output.keep_last=1000"]))
    same_step = os.path.join(ref, os.path.basename(last_good))
    compare(last_good, same_step, 0, "the checkpoint relaunched from against the uninterrupted run's")
    against_uninterrupted_continued(a, out, ref, same_step, left, "the relaunched run's end")


def case_stop_cut(a):
    spec = hosts_spec()
    victim = spec[-1][0]
    out = fresh(a, "run")
    code, text = run_with_fault(a, out, ["usr1"], then=[(0.05, ["link-down"])])
    if code in (0, 4):
        fail(f"the job ended with exit code {code}, as if its stop had completed")
    line = re.search(rf"kpmap: rank \d+: host {victim} \(ranks? [-0-9]+\) stopped answering in "
                     r"step \d+: [^\n]*the last good checkpoint is (\S+) ", text)
    if not line:
        fail(f"no line names host {victim} and the last good checkpoint")
    with h5py.File(line.group(1), "r") as f:
        step = int(f.attrs["step"])
    print(f"OK: the job ended, naming {victim} and {line.group(1)} (step {step}, reads back)")


def case_stop_flap(a):
    out = fresh(a, "run")
    code, text = run_with_fault(a, out, ["link-down"],
                                then=[(1.0, ["usr1"]), (a.flap, ["link-up"])])
    if "stopped answering" in text:
        fail(f"a host was reported lost during a {a.flap:g} s flap")
    if code != 4:
        fail(f"exit code {code}, expected 4 (stopped by SIGUSR1)")
    stop = re.search(r"SIGUSR1 received: stopped after step (\d+) of \d+; continue with "
                     r"--restart (\S+)", text)
    if not stop:
        fail("no line says the run stopped on SIGUSR1 and names its checkpoint")
    with h5py.File(stop.group(2), "r") as f:
        if int(f.attrs["step"]) != int(stop.group(1)):
            fail(f"{stop.group(2)} holds step {int(f.attrs['step'])}, not {stop.group(1)}")
    print(f"OK: stopped after step {stop.group(1)} with its checkpoint, no host lost")


def case_lost(a):
    spec = hosts_spec()
    total = sum(s for _, s in spec)
    victim, victim_slots = spec[-1]
    first_rank = total - victim_slots
    ranks = str(first_rank) if victim_slots == 1 else f"{first_rank}-{total - 1}"
    out = fresh(a, "run")
    code, text = run_with_fault(a, out, [a.how])
    if code == 0:
        fail("the job ended with exit code 0")
    # A host whose link is down stopped answering; one whose processes were
    # killed still answers (its kernel closes the connection): its first rank
    # ended without a word.
    said = (rf"host {victim} \(ranks? {ranks}\) stopped answering" if a.how == "link-down" else
            rf"rank {first_rank} on host {victim} \(ranks? {ranks}\) ended without a word")
    line = re.search(rf"kpmap: rank \d+: {said} in "
                     r"step (\d+): [^\n]*the last good checkpoint is (\S+) "
                     r"\(continue with --restart \S+\)", text)
    if not line:
        fail(f"no line says {said!r} with the step and the last good checkpoint")
    step, last_good = int(line.group(1)), line.group(2)
    print(f"OK: a line names {victim} (ranks {ranks}), step {step} and {last_good}")
    if not os.path.isfile(last_good):
        fail(f"the last good checkpoint {last_good} does not exist")
    # The uninterrupted run on one host, every checkpoint kept: the lost run's
    # last good one is its state at that step, exactly.
    ref = fresh(a, "uninterrupted")
    run(app_cmd(one_host(total), a, a.app, ref, ["--set=output.keep_last=1000"]))
    same_step = os.path.join(ref, os.path.basename(last_good))
    compare(last_good, same_step, 0, "the last good checkpoint against the uninterrupted run's")
    # Continue on the hosts that remain, at their rank count (the restart reads
    # and verifies the checkpoint: checksums, values), and the uninterrupted
    # run from its own checkpoint on one host at the same rank count.
    remaining = spec[:-1]
    left = sum(s for _, s in remaining)
    run(app_cmd(across(hosts=remaining), a, a.app, out, ["--restart", last_good]))
    against_uninterrupted_continued(
        a, out, ref, same_step, left,
        f"continued on {', '.join(h for h, _ in remaining)} after {victim} was lost")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("case", choices=["info", "same-heat", "same-train", "program", "restart",
                                    "lost", "slow", "scale", "stop-cut", "stop-flap", "fails", "relaunch"])
    p.add_argument("--bin", required=True, help="the folder of kpmap-heat, -train and -info")
    p.add_argument("--work", required=True, help="where the case's run folders go")
    p.add_argument("--deck")
    p.add_argument("--set", action="append", default=[])
    p.add_argument("--program")
    p.add_argument("--split", type=int, default=3)
    p.add_argument("--how", choices=["link-down", "kill"], default="link-down")
    p.add_argument("--app", choices=["kpmap-heat", "kpmap-train"], default="kpmap-heat")
    p.add_argument("--within", type=float, default=120)
    p.add_argument("--rate", default="10mbit")
    p.add_argument("--flap", type=float, default=8)
    p.add_argument("--inject")
    p.add_argument("--map")
    p.add_argument("--expect", action="append", default=[])
    p.add_argument("args", nargs="*")
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    cases = {"info": case_info, "same-heat": lambda a: case_same(a, "kpmap-heat"),
             "same-train": lambda a: case_same(a, "kpmap-train"), "program": case_program,
             "restart": case_restart, "lost": case_lost, "slow": case_slow,
             "scale": case_scale, "stop-cut": case_stop_cut, "stop-flap": case_stop_flap,
             "fails": case_fails, "relaunch": case_relaunch}
    cases[a.case](a)


if __name__ == "__main__":
    main()
