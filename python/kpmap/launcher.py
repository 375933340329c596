# SPDX-License-Identifier: BSD-3-Clause
"""kpmap-run: start a kpmap program on a cluster's hosts, end with the job, and
relaunch it on the hosts left when one is lost (docs/cluster.md).

    kpmap-run [--hostfile FILE | --host SPEC] [-n RANKS] [--relaunch N] -- PROGRAM ARGS...

The hosts come from --hostfile or --host, else from Slurm's allocation (the
ranks start with srun), else from a simulated cluster (scripts/sim-cluster's
KPMAP_SIM_HOSTFILE), else this machine. Open MPI's mpirun starts the ranks with
the keepalive settings that let it give up on a silent host within about 25 s,
one rank a slot (never more ranks than slots on named hosts). When the job has
ended, by a rank's error or a lost host, and the launcher is still running
--grace seconds later (a launcher waiting for a daemon that will never answer),
kpmap-run ends it. With --relaunch N, a job that ended because a host was lost
starts again on the hosts left, at the ranks they hold, from the last good
checkpoint the job named (--restart), up to N times.

Exit code: the program's (the last run's), 2 for a command line kpmap-run
cannot use.
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

KEEPALIVE = ["--mca", "oob_tcp_keepalive_time", "10", "--mca", "oob_tcp_keepalive_intvl", "5",
             "--mca", "oob_tcp_keepalive_probes", "3"]
EXIT_USAGE = 2
# Exit codes after which a relaunch would only repeat the end: success, bad
# input, a failed solve or check, a stop that was asked for.
FINAL_CODES = (0, 2, 3, 4, 5)

# What the job's lines say (docs/reliability.md): the end of a rank's run, a
# host lost, and the checkpoint to continue from.
JOB_ENDED = re.compile(r"^kpmap: (rank \d+: |error: )|^Primary job +terminated|"
                       r"^ORTE has lost communication|^mpirun noticed that process", re.M)
# A host that stopped answering, or whose first rank ended without a word
# (killed with its host's processes: a node that reboots, the OOM killer).
LOST_HOST = re.compile(r"^kpmap: rank \d+: (?:host (\S+) \(ranks? [^)]*\) stopped answering|"
                       r"rank \d+ on host (\S+) \(ranks? [^)]*\) ended without a word)", re.M)
CONTINUE = re.compile(r"continue with --restart (\S+?)\)?$", re.M)


class UsageError(Exception):
    pass


@dataclass
class Host:
    name: str
    slots: int


def parse_host_spec(spec: str) -> List[Host]:
    hosts = []
    for item in spec.split(","):
        name, _, count = item.partition(":")
        if not name or (count and not count.isdigit()) or count == "0":
            raise UsageError(f"--host {spec}: {item!r} is not HOST or HOST:SLOTS (SLOTS >= 1)")
        hosts.append(Host(name, int(count) if count else 1))
    return hosts


def read_hostfile(path: str) -> List[Host]:
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"hostfile {path}: cannot be read ({getattr(e, 'strerror', None) or e})")
    hosts = []
    for number, line in enumerate(lines, 1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        slots = 1
        for f in fields[1:]:
            key, _, value = f.partition("=")
            if key == "slots":
                if not value.isdigit() or int(value) < 1:
                    raise UsageError(f"hostfile {path}, line {number}: {f!r}: slots takes a whole "
                                     "number of at least 1")
                slots = int(value)
        hosts.append(Host(fields[0], slots))
    if not hosts:
        raise UsageError(f"hostfile {path} names no host")
    return hosts


def check_known(hosts: Sequence[Host], source: str) -> None:
    for h in hosts:
        try:
            socket.getaddrinfo(h.name, None)
        except (socket.gaierror, UnicodeError):
            raise UsageError(f"{source}: host {h.name!r} is not known here (no address for it)")


def host_arg(hosts: Sequence[Host]) -> str:
    return ",".join(f"{h.name}:{h.slots}" for h in hosts)


def launch_command(hosts: Optional[List[Host]], ranks: int, program: List[str],
                   slurm: bool, exclude: Sequence[str]) -> List[str]:
    if slurm:
        cmd = ["srun", "-n", str(ranks), "--kill-on-bad-exit=1"]
        if exclude:
            cmd.append("--exclude=" + ",".join(exclude))
        return cmd + program
    cmd = ["mpirun", "-n", str(ranks)] + KEEPALIVE
    if hosts is not None:
        cmd += ["--host", host_arg(hosts)]
    elif ranks > (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                  else os.cpu_count() or 1):
        cmd.append("--oversubscribe")  # this machine only: its cores are what the ranks get
    return cmd + program


def with_restart(program: List[str], checkpoint: str) -> List[str]:
    """The program's arguments with --restart CHECKPOINT in place of any earlier one."""
    out: List[str] = []
    skip = False
    for w in program:
        if skip:
            skip = False
            continue
        if w == "--restart":
            skip = True
            continue
        if w.startswith("--restart="):
            continue
        out.append(w)
    return out + ["--restart", checkpoint]


class Run:
    """One launch: its output passed through and read, the launcher ended
    `grace` seconds after the job has."""

    def __init__(self, cmd: List[str], grace: float, env: dict):
        self.text: List[str] = []
        self.ended_at: Optional[float] = None
        self.lock = threading.Lock()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env, start_new_session=True)
        self.grace = grace
        self.threads = [threading.Thread(target=self.pump, args=(s, o), daemon=True)
                        for s, o in ((self.proc.stdout, sys.stdout), (self.proc.stderr, sys.stderr))]
        for t in self.threads:
            t.start()

    def pump(self, stream, out) -> None:
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace")
            out.write(line)
            out.flush()
            with self.lock:
                self.text.append(line)
                if self.ended_at is None and JOB_ENDED.search(line):
                    self.ended_at = time.monotonic()

    def wait(self) -> Tuple[int, bool]:
        """The launcher's exit code, and whether kpmap-run had to end it."""
        ended_it = False
        while True:
            try:
                code = self.proc.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                pass
            with self.lock:
                since = None if self.ended_at is None else time.monotonic() - self.ended_at
            if since is not None and since > self.grace and not ended_it:
                print(f"kpmap-run: the job ended {since:.0f} s ago and its launcher is still "
                      "running (waiting for a host that does not answer): ending it",
                      file=sys.stderr, flush=True)
                ended_it = True
                self.signal_group(signal.SIGTERM)
                try:
                    code = self.proc.wait(timeout=5)
                    break
                except subprocess.TimeoutExpired:
                    self.signal_group(signal.SIGKILL)
        for t in self.threads:
            t.join(timeout=5)
        return code, ended_it

    def signal_group(self, sig) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def output(self) -> str:
        with self.lock:
            return "".join(self.text)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="kpmap-run", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Start a kpmap program on a cluster's hosts with the settings that end "
                    "it when a host is lost, and relaunch it on the hosts left.",
        epilog="examples:\n"
               "  kpmap-run --hostfile hosts -- kpmap-heat inputs/heat2d.toml\n"
               "  kpmap-run --relaunch 2 -- kpmap-train deck.toml --output run1   "
               "# in a Slurm job\n"
               "  kpmap-run --host nodeA:4,nodeB:4 -n 6 -- ./my_program\n\n"
               "The hosts: --hostfile or --host, else Slurm's allocation (srun), else "
               "KPMAP_SIM_HOSTFILE (scripts/sim-cluster), else this machine. docs/cluster.md.")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--hostfile", metavar="FILE", help="Open MPI's hostfile (HOST slots=N)")
    where.add_argument("--host", metavar="SPEC", help="HOST:SLOTS,... as mpirun --host takes")
    p.add_argument("-n", "--ranks", type=int, metavar="N",
                   help="ranks (default: every slot of the hosts)")
    p.add_argument("--relaunch", type=int, default=0, metavar="N",
                   help="after a lost host, start again on the hosts left from the last good "
                        "checkpoint, up to N times (default 0)")
    p.add_argument("--grace", type=float, default=30.0, metavar="S",
                   help="seconds the launcher may run on once the job has ended (default 30)")
    p.add_argument("program", nargs=argparse.REMAINDER, help="-- PROGRAM ARGS...")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    a = parser.parse_args(argv)
    program = a.program[1:] if a.program[:1] == ["--"] else a.program
    try:
        if not program:
            raise UsageError("no program given: kpmap-run [options] -- PROGRAM ARGS...")
        if a.relaunch < 0 or a.grace < 0 or (a.ranks is not None and a.ranks < 1):
            raise UsageError("--relaunch and --grace take 0 or more, -n 1 or more")
        slurm = False
        hosts: Optional[List[Host]] = None
        source = "this machine"
        if a.hostfile:
            hosts, source = read_hostfile(a.hostfile), f"hostfile {a.hostfile}"
        elif a.host:
            hosts, source = parse_host_spec(a.host), f"--host {a.host}"
        elif os.environ.get("SLURM_JOB_ID"):
            slurm, source = True, f"Slurm job {os.environ['SLURM_JOB_ID']}"
        elif os.environ.get("KPMAP_SIM_HOSTFILE"):
            path = os.environ["KPMAP_SIM_HOSTFILE"]
            hosts, source = read_hostfile(path), f"the simulated cluster's hostfile {path}"
        if hosts is not None:
            check_known(hosts, source)
        slots = sum(h.slots for h in hosts) if hosts is not None else None
        ranks = a.ranks or slots or 1
        if a.ranks is None and slurm:
            ranks = int(os.environ.get("SLURM_NTASKS", "1"))
        if slots is not None and ranks > slots:
            raise UsageError(f"{ranks} ranks but {source} holds {slots} slots: the ranks would "
                             "share cores; give more hosts or slots, or fewer ranks")
    except UsageError as e:
        print(f"kpmap-run: error: {e}", file=sys.stderr)
        return EXIT_USAGE

    env = dict(os.environ)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    excluded: List[str] = []
    attempt = 0
    while True:
        cmd = launch_command(hosts, ranks, program, slurm, excluded)
        print("kpmap-run: " + " ".join(shlex.quote(c) for c in cmd), flush=True)
        run = Run(cmd, a.grace, env)
        code, ended_it = run.wait()
        if ended_it and code <= 0:
            code = 1  # the job failed; its launcher only outlived it
        text = run.output()
        lost = sorted({a or b for a, b in LOST_HOST.findall(text)})
        if code in FINAL_CODES or not lost or attempt >= a.relaunch:
            if lost and code not in FINAL_CODES and attempt >= a.relaunch and a.relaunch > 0:
                print(f"kpmap-run: host {', '.join(lost)} lost after {attempt} relaunch"
                      f"{'es' if attempt != 1 else ''} (--relaunch {a.relaunch}): giving up",
                      file=sys.stderr, flush=True)
            return code
        attempt += 1
        checkpoints = CONTINUE.findall(text)
        if hosts is not None:
            hosts = [h for h in hosts if h.name not in lost]
            if not hosts:
                print(f"kpmap-run: no host left after {', '.join(lost)} was lost",
                      file=sys.stderr, flush=True)
                return code
            ranks = sum(h.slots for h in hosts)
        else:
            # Slurm: the same ranks a node on the nodes left.
            nodes = int(os.environ.get("SLURM_JOB_NUM_NODES", "0") or 0) - len(excluded)
            excluded += lost
            if nodes > len(lost):
                ranks -= ranks // nodes * len(lost)
        if checkpoints:
            program = with_restart(program, checkpoints[-1])
        where = host_arg(hosts) if hosts is not None else f"the allocation without {', '.join(excluded)}"
        print(f"kpmap-run: host {', '.join(lost)} lost; relaunch {attempt} of {a.relaunch} on "
              f"{where} ({ranks} ranks)" +
              (f" from {checkpoints[-1]}" if checkpoints else " from the start (no checkpoint "
               "was named)"), file=sys.stderr, flush=True)


def entry(argv: List[str]) -> int:
    return main(argv)
