# SPDX-License-Identifier: BSD-3-Clause
"""Launching N ranks: the launcher template, and where the ranks run.

A template is a command line with placeholders, e.g. 'mpiexec -n {ranks}' or,
under Slurm, 'srun -N {nodes} -n {ranks} --gpus-per-task=1': {ranks} is the rank
count, {nodes} = ceil(ranks / ranks-per-node), {app} the program's command line
(appended when the template has no {app}). Inside a batch job (Slurm, PBS, LSF,
Cobalt, Flux) the ranks run on the job's nodes, not on this machine's cores.
"""
from __future__ import annotations

import math
import os
import re
import shlex
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from kpmap.scale import UsageError

DEFAULT_LAUNCHER = "mpiexec -n {ranks}"
PLACEHOLDERS = ("ranks", "nodes", "app")
# The environment of a run tells a wrapper or a test program where it is.
ENV_RANKS = "KPMAP_SCALE_RANKS"
ENV_REPETITION = "KPMAP_SCALE_REPETITION"
KEEPALIVE = {"OMPI_MCA_oob_tcp_keepalive_time": "10", "OMPI_MCA_oob_tcp_keepalive_intvl": "5",
             "OMPI_MCA_oob_tcp_keepalive_probes": "3"}
BATCH_JOB_VARIABLES = ("SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "COBALT_JOBID", "FLUX_JOB_ID")


def check_template(template: str, ranks_per_node: Optional[int]) -> List[str]:
    try:
        words = shlex.split(template)
    except ValueError as e:
        raise UsageError(f"--launcher {template!r}: {e}") from None
    for name in re.findall(r"\{([^{}]*)\}", template):
        if name not in PLACEHOLDERS:
            raise UsageError(f"--launcher {template!r}: unknown placeholder {{{name}}} "
                             "(known: {ranks}, {nodes}, {app})")
    # What is left once the placeholders are out holds no brace: an unclosed
    # '{ranks' would reach the launcher as it is, and fail only at run time.
    rest = re.sub(r"\{[^{}]*\}", "", template)
    for brace in "{}":
        if brace in rest:
            raise UsageError(f"--launcher {template!r}: an unmatched '{brace}' "
                             f"(a placeholder is {{ranks}}, {{nodes}} or {{app}})")
    if "{nodes}" in template and ranks_per_node is None:
        raise UsageError("--launcher uses {nodes}: give --ranks-per-node too")
    if any("{app}" in w and w != "{app}" for w in words):
        raise UsageError(f"--launcher {template!r}: {{app}} must be a word of its own")
    return words


def launcher_command(words: Sequence[str], ranks: int, ranks_per_node: Optional[int],
                     app_command: Sequence[str]) -> List[str]:
    nodes = math.ceil(ranks / ranks_per_node) if ranks_per_node else 1
    out: List[str] = []
    for w in words:
        if w == "{app}":
            out.extend(app_command)
        else:
            out.append(w.replace("{ranks}", str(ranks)).replace("{nodes}", str(nodes)))
    if "{app}" not in words:
        out.extend(app_command)
    return out


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def in_batch_job() -> bool:
    return any(v in os.environ for v in BATCH_JOB_VARIABLES)


def run_environment(ranks: int, repetition: int, oversubscribed: bool) -> Dict[str, str]:
    """Variables added to a run's environment (values already set are kept)."""
    extra = {ENV_RANKS: str(ranks), ENV_REPETITION: str(repetition)}
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        extra["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        extra["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    if oversubscribed:
        extra["OMPI_MCA_rmaps_base_oversubscribe"] = "1"
    # Open MPI's mpirun gives up on a node that stops answering within about 25 s
    # (docs/reliability.md, "A lost host"); other launchers ignore these.
    extra.update(KEEPALIVE)
    return {k: v for k, v in extra.items() if k not in os.environ or k.startswith("KPMAP_")}


@dataclass
class Hosts:
    """The hosts a launcher template names (Open MPI's --hostfile or --host)."""
    source: str            # "hostfile hosts.txt" or "--host nodeA:2,nodeB:2"
    slots: Optional[int]   # their slots, or None where a host's count is left to Open MPI


HOSTFILE_OPTIONS = ("--hostfile", "-hostfile", "--machinefile", "-machinefile",
                    "--default-hostfile", "-default-hostfile")
HOST_OPTIONS = ("--host", "-host", "-H")


def known_host(name: str) -> bool:
    try:
        socket.getaddrinfo(name, None)
        return True
    except (socket.gaierror, UnicodeError):
        return False


def named_hosts(words: Sequence[str]) -> Optional[Hosts]:
    """The hosts and slots of a template's --hostfile FILE or --host LIST (else None).
    Raises UsageError for a hostfile that cannot be read, a line it cannot use, or a
    host this machine cannot resolve, naming the file, the line and the host."""
    for i, w in enumerate(words):
        option, _, value = w.partition("=")
        if option not in HOSTFILE_OPTIONS + HOST_OPTIONS:
            continue
        if not value:
            if i + 1 >= len(words):
                raise UsageError(f"--launcher: {option} is not followed by its value")
            value = words[i + 1]
        if option in HOST_OPTIONS:
            slots = 0
            for item in value.split(","):
                host, _, count = item.partition(":")
                if not host or (count and not count.isdigit()):
                    raise UsageError(f"--launcher: {option} {value}: {item!r} is not HOST or "
                                     "HOST:SLOTS")
                if not known_host(host):
                    raise UsageError(f"--launcher: {option} {value}: host {host!r} is not known "
                                     "here (no address for it)")
                slots += int(count) if count else 1
            return Hosts(f"{option} {value}", slots)
        path = Path(value)
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as e:
            raise UsageError(f"--launcher: hostfile {path}: cannot be read "
                             f"({getattr(e, 'strerror', None) or e})") from None
        total: Optional[int] = 0
        hosts = 0
        for number, line in enumerate(lines, 1):
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            host, rest = fields[0], fields[1:]
            if not known_host(host):
                raise UsageError(f"--launcher: hostfile {path}, line {number}: host {host!r} is "
                                 "not known here (no address for it)")
            hosts += 1
            count = None
            for f in rest:
                key, _, v = f.partition("=")
                if key in ("slots", "max_slots", "max-slots") and not v.isdigit():
                    raise UsageError(f"--launcher: hostfile {path}, line {number}: {f!r}: "
                                     f"{key} takes a whole number")
                if key == "slots":
                    count = int(v)
            # Without slots= Open MPI counts the host's cores, which only it knows.
            total = None if total is None or count is None else total + count
        if hosts == 0:
            raise UsageError(f"--launcher: hostfile {path} names no host")
        return Hosts(f"hostfile {path}", total)
    return None


def local_launcher(words: Sequence[str]) -> bool:
    """True when the ranks run on this machine, so cores here are what they get."""
    first = Path(words[0]).name if words else ""
    return (first in ("mpiexec", "mpirun", "{app}") and not in_batch_job()
            and named_hosts(words) is None)
