# SPDX-License-Identifier: BSD-3-Clause
"""Running one repetition of a point: the program, its environment, its failures.

A run gets a folder of its own (ranks-N/rep-K/) for its output, stdout.txt and
stderr.txt. It runs in a session of its own, so that a timeout or Ctrl-C stops
every process the launcher started; a run that fails records why (the end of
its stderr) in its point, and the study goes on with the other points.
"""
from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

from kpmap.interpreter import SEARCHED
from kpmap.scale import RunFailed
from kpmap.scale.collect import (COMM_PHASES, fmt_pct, fmt_time, read_app_json,
                                 read_benchmark_json)
from kpmap.scale.launch import launcher_command, run_environment
from kpmap.scale.plan import Point, Study

STDERR_TAIL_LINES = 15


def repo_root() -> Path:
    """The checkout this package lies in (python/kpmap/scale/run.py)."""
    return Path(__file__).resolve().parents[3]


def resolve_app(app: str) -> Optional[Path]:
    """The program's absolute path: a path as given, else PATH, else this
    checkout's build/default/{apps,bench}."""
    if "/" in app:
        p = Path(app)
        return p.resolve() if p.is_file() and os.access(p, os.X_OK) else None
    found = shutil.which(app)
    if found:
        return Path(found).resolve()
    for sub in ("apps", "bench"):
        p = repo_root() / "build" / "default" / sub / app
        if p.is_file() and os.access(p, os.X_OK):
            return p
    return None


def tail(text: str, lines: int = STDERR_TAIL_LINES) -> str:
    kept = text.rstrip().splitlines()[-lines:]
    return "\n".join("    | " + line for line in kept)


def run_once(command: List[str], env_extra: Dict[str, str], directory: Path,
             timeout: Optional[float]) -> None:
    """Runs command with its output in directory; raises RunFailed."""
    env = dict(os.environ)
    env.pop(SEARCHED, None)  # a program it runs searches for itself
    env.update(env_extra)
    with open(directory / "stdout.txt", "wb") as out, open(directory / "stderr.txt", "wb") as err:
        try:
            proc = subprocess.Popen(command, stdout=out, stderr=err, env=env,
                                    start_new_session=True)
        except OSError as e:
            raise RunFailed(f"cannot start `{shlex.join(command)}`: {e.strerror}") from None
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop(proc)
            raise RunFailed(f"`{shlex.join(command)}` was still running after {timeout:g} s "
                            f"and was stopped (see {directory}/stderr.txt)") from None
        except BaseException:
            stop(proc)  # Ctrl-C reaches only us: the run has its own session.
            raise
    if code != 0:
        stderr = (directory / "stderr.txt").read_text(errors="replace")
        stdout = (directory / "stdout.txt").read_text(errors="replace")
        how = f"exited with code {code}" if code > 0 else f"was killed by signal {-code}"
        msg = f"`{shlex.join(command)}` {how}"
        if stderr.strip():
            msg += f"; the end of its stderr:\n{tail(stderr)}"
        elif stdout.strip():
            msg += f"; its stderr is empty, the end of its stdout:\n{tail(stdout)}"
        else:
            msg += " and printed nothing"
        raise RunFailed(msg)


def stop(proc: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_repetition(study: Study, point: Point, rep: int, dry_run: bool, say) -> None:
    """One run of a point; a failure is recorded in point.failure."""
    run_dir = study.point_dir(point.ranks) / f"rep-{rep}"
    cmd = launcher_command(study.launcher, point.ranks, study.ranks_per_node,
                           study.app_command(point, run_dir))
    env = run_environment(point.ranks, rep, point.oversubscribed)
    point.commands.append(cmd)
    if dry_run:
        shown = {k: v for k, v in env.items() if not k.startswith("KPMAP_SCALE_")}
        say(" ".join(f"{k}={v}" for k, v in shown.items()) + (" " if shown else "")
            + shlex.join(cmd))
        return
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    t0 = time.monotonic()
    try:
        run_once(cmd, env, run_dir, study.timeout)
        result = run_dir / study.result_name
        if study.kind.name == "bench":
            sample = read_benchmark_json(result, cmd)
        else:
            sample = read_app_json(result, point.ranks, cmd)
    except RunFailed as e:
        point.failure = f"ranks {point.ranks}, repetition {rep}: {e}"
        print(f"kpmap-scale: point failed: {point.failure}", file=sys.stderr, flush=True)
        return
    point.samples.append(sample)
    comm = [sample.phases[ph] for ph in COMM_PHASES if sample.phases[ph] is not None]
    say(f"  ranks {point.ranks:>4}  repetition {rep}/{study.repeat}: wall "
        f"{fmt_time(sample.wall_s)} s" +
        (f" (communication {fmt_pct(sum(comm) / sample.wall_s)})" if comm else "") +
        f"  [{time.monotonic() - t0:.1f} s]")
