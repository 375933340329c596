# SPDX-License-Identifier: BSD-3-Clause
"""What the runs measured: reading their JSON, and the study's results from it.

A run's time is the wall time its program reports (the slowest rank's), never a
time taken from outside: an application's "timing" object (result.json)
or a Google Benchmark JSON. A point's time is the median of its
repetitions; speedup is against the smallest rank count measured (scaled by the
work in weak mode), efficiency = speedup / ideal. The results are written as
scaling.csv, scaling.json and scaling.md after every run.
"""
from __future__ import annotations

import csv
import json
import math
import shlex
import socket
import statistics
from pathlib import Path
from typing import Any, Dict, List, Optional

from kpmap import PHASES
from kpmap.scale import RunFailed
from kpmap.scale.launch import usable_cores
from kpmap.scale.plan import Sample, Study, started, toml_text

# Communication: the share of the wall time a weak or strong study watches grow.
COMM_PHASES = ("halo_s", "collectives_s")


def number(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def load_result(path: Path, command: List[str]) -> Any:
    """The JSON a successful run left in path; RunFailed if it is missing or broken."""
    if not path.is_file():
        raise RunFailed(f"`{shlex.join(command)}` exited 0 but wrote no {path}")
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise RunFailed(f"{path} is not valid JSON: {e}") from None
    return data


def read_app_json(path: Path, ranks: int, command: List[str]) -> Sample:
    """wall and phase times from an application's result.json."""
    data = load_result(path, command)
    timing = data.get("timing") if isinstance(data, dict) else None
    if not isinstance(timing, dict):
        raise RunFailed(f"{path} has no \"timing\" object (wall_s, compute_s, halo_s, "
                        "collectives_s, io_s): kpmap-scale needs the program's timings")
    wall = number(timing.get("wall_s"))
    if wall is None or wall <= 0:
        raise RunFailed(f"{path}: timing.wall_s is {timing.get('wall_s')!r}, expected a "
                        "positive number of seconds")
    reported = data.get("ranks")
    if reported is not None and reported != ranks:
        raise RunFailed(f"{path} says ranks: {reported}, but {ranks} were asked for: does "
                        f"the launcher start one MPI job of {ranks} ranks? (an mpiexec from "
                        "another MPI library starts independent 1-rank jobs)")
    phases = {p: number(timing.get(p)) for p in PHASES}
    nodes = data.get("nodes")
    nodes = nodes if isinstance(nodes, int) and not isinstance(nodes, bool) and nodes > 0 else None
    return Sample(wall, phases, str(path.parent), nodes)


TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def read_benchmark_json(path: Path, command: List[str]) -> Sample:
    """The real time of the one benchmark a Google Benchmark run reported."""
    data = load_result(path, command)
    if not isinstance(data, dict):
        raise RunFailed(f"{path} is not a Google Benchmark JSON file (no \"benchmarks\" list)")
    runs = [b for b in data.get("benchmarks", []) if b.get("run_type", "iteration") == "iteration"]
    names = sorted({b.get("run_name", b.get("name")) for b in runs})
    if len(names) != 1:
        listed = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
        raise RunFailed(f"{path} holds {len(names)} benchmarks ({listed or 'none'}); "
                        "kpmap-scale measures one: select it after --, e.g. "
                        "-- --benchmark_filter='BM_psum/1024$'")
    times = [b["real_time"] * TIME_UNITS[b.get("time_unit", "ns")] for b in runs]
    return Sample(statistics.median(times), {p: None for p in PHASES}, str(path.parent))


# ---- the study ----------------------------------------------------------------------


def summarise(study: Study) -> List[Dict[str, Any]]:
    """One row per started point: medians, speedup, efficiency, communication share."""
    rows = []
    good = [p for p in started(study) if p.ok]
    base = min(good, key=lambda p: p.ranks) if good else None
    base_t = statistics.median(s.wall_s for s in base.samples) if base else None
    for p in started(study):
        nodes = {s.nodes for s in p.samples if s.nodes is not None}
        row: Dict[str, Any] = {"ranks": p.ranks, "nodes": max(nodes) if nodes else None,
                               "status": "ok" if p.ok else "failed",
                               "repetitions": len(p.samples), "scaled": p.scaled,
                               "oversubscribed": p.oversubscribed}
        if p.ok:
            walls = [s.wall_s for s in p.samples]
            row["wall_s"] = statistics.median(walls)
            row["wall_min_s"] = min(walls)
            row["wall_max_s"] = max(walls)
            for ph in PHASES:
                vals = [s.phases[ph] for s in p.samples]
                row[ph] = statistics.median(vals) if all(v is not None for v in vals) else None
            shares = []
            for s in p.samples:
                comm = [s.phases[ph] for ph in COMM_PHASES if s.phases[ph] is not None]
                if comm:
                    shares.append(sum(comm) / s.wall_s)
            row["comm_share"] = statistics.median(shares) if len(shares) == len(walls) else None
            assert base is not None and base_t is not None
            ideal = p.ranks / base.ranks
            # Strong: the same work in less time. Weak: ideal/ranks as much work
            # in (ideally) the same time, so the scaled speedup is ideal * t1/tN.
            time_ratio = base_t / row["wall_s"]
            row["speedup"] = time_ratio if study.mode == "strong" else ideal * time_ratio
            row["ideal_speedup"] = ideal
            row["efficiency"] = row["speedup"] / ideal
        else:
            for k in ("wall_s", "wall_min_s", "wall_max_s", *PHASES, "comm_share", "speedup",
                      "ideal_speedup", "efficiency"):
                row[k] = None
            row["failure"] = p.failure
        rows.append(row)
    return rows


CSV_COLUMNS = ["ranks", "nodes", "status", "repetitions", "wall_s", "wall_min_s", "wall_max_s",
               *PHASES, "comm_share", "speedup", "ideal_speedup", "efficiency",
               "oversubscribed"]


def fmt_time(v: Optional[float]) -> str:
    if v is None:
        return "–"
    return f"{v:.4g}" if v >= 1e-3 else f"{v:.3g}"


def fmt_ratio(v: float) -> str:
    return f"{v:.2f}" if v >= 0.1 else f"{v:.2g}"


def fmt_pct(v: Optional[float]) -> str:
    return "–" if v is None else f"{100 * v:.0f} %"


def scaled_keys(study: Study) -> List[str]:
    return list(dict.fromkeys(k.key for k in study.scale_keys))


def study_title(study: Study) -> str:
    what = study.app.name + (f" {study.deck.name}" if study.deck else "")
    return f"{study.mode} scaling of {what}"


def markdown(study: Study, rows: List[Dict[str, Any]]) -> str:
    lines = [f"# {study_title(study)}", ""]
    desc = [f"- ranks: {', '.join(map(str, study.ranks))}; {study.repeat} "
            f"repetition{'s' if study.repeat > 1 else ''} per point, median shown",
            f"- launcher: `{study.launcher_text}`"]
    if study.scale_keys:
        desc.append(f"- weak scaling: {', '.join(map(str, study.scale_keys))} multiplied by "
                    "the rank count")
    if study.sets:
        desc.append("- " + " ".join(f"`--set {k}={v}`" for k, v in study.sets))
    desc.append(f"- host {socket.gethostname()}, {usable_cores()} cores, {study.started}")
    lines += desc + [""]
    header = ["ranks", "nodes", "time (s)", "speedup", "efficiency", "communication",
              "compute (s)", "halo (s)", "collectives (s)", "I/O (s)", "checkpoint (s)"]
    keys = scaled_keys(study)
    header[2:2] = keys
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join("---:" for _ in header) + "|")
    notes = set()
    for r in rows:
        ranks = str(r["ranks"])
        if r["oversubscribed"]:
            ranks += " †"
            notes.add("† more ranks than cores: ranks share cores, so this point measures "
                      "the oversubscription more than the code's scaling.")
        if r["status"] == "ok" and r["repetitions"] < study.repeat:
            ranks += " ‡"
            notes.add(f"‡ fewer than {study.repeat} repetitions (the study was interrupted or "
                      "is still running): see the repetitions column of scaling.csv.")
        cells = [ranks, "–" if r["nodes"] is None else str(r["nodes"])]
        cells += [toml_text(r["scaled"].get(k, "–")) for k in keys]
        if r["status"] != "ok":
            cells += ["failed"] + ["–"] * (len(header) - len(cells) - 1)
        else:
            cells += [fmt_time(r["wall_s"]), fmt_ratio(r["speedup"]),
                      fmt_pct(r["efficiency"]), fmt_pct(r["comm_share"])]
            cells += [fmt_time(r[ph]) for ph in PHASES]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    weak = study.mode == "weak"
    eff = "t(base) / t(N)" if weak else "speedup / ideal speedup"
    lines.append("Time: wall time of the slowest rank, median of the repetitions. Speedup "
                 f"against the smallest rank count{' (scaled by the work)' if weak else ''}; "
                 f"efficiency = {eff}; communication = (halo + collectives) / wall.")
    for n in sorted(notes):
        lines += ["", n]
    return "\n".join(lines) + "\n"


def write_results(study: Study) -> List[Dict[str, Any]]:
    """Writes scaling.csv, scaling.json and scaling.md from the points so far."""
    rows = summarise(study)
    keys = scaled_keys(study)
    tmp = study.out / ".scaling.csv.tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS + keys)
        for r in rows:
            w.writerow(["" if r.get(k) is None else r[k] for k in CSV_COLUMNS] +
                       [toml_text(r["scaled"][k]) if k in r["scaled"] else "" for k in keys])
    tmp.replace(study.out / "scaling.csv")
    doc = {
        "study": {
            "app": str(study.app), "kind": study.kind.name,
            "deck": str(study.deck) if study.deck else None, "mode": study.mode,
            "ranks": study.ranks, "repeat": study.repeat, "launcher": study.launcher_text,
            "ranks_per_node": study.ranks_per_node,
            "scale_keys": [str(k) for k in study.scale_keys],
            "set": [f"{k}={v}" for k, v in study.sets], "extra_args": study.extra_args,
            "host": socket.gethostname(), "cores": usable_cores(), "started": study.started,
        },
        "points": [dict(r, runs=[{"wall_s": s.wall_s, **s.phases, "nodes": s.nodes,
                                  "dir": s.directory}
                                 for s in p.samples],
                        commands=[shlex.join(c) for c in p.commands])
                   for r, p in zip(rows, started(study))],
    }
    tmp = study.out / ".scaling.json.tmp"
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    tmp.replace(study.out / "scaling.json")
    (study.out / "scaling.md").write_text(markdown(study, rows))
    return rows


def one_line(study: Study, rows: List[Dict[str, Any]], plots: List[str]) -> str:
    ok = [r for r in rows if r["status"] == "ok"]
    failed = [r["ranks"] for r in rows if r["status"] != "ok"]
    where = f"results in {study.out}/ (scaling.md, .csv, .json" + \
        (f", {len(plots)} plots)" if plots else ")")
    if not ok:
        return f"kpmap-scale: no point measured ({len(failed)} failed); {where}"
    last = ok[-1]
    first = ok[0]
    s = (f"kpmap-scale: {study_title(study)}: {first['ranks']}→{last['ranks']} ranks, "
         f"{fmt_time(first['wall_s'])} s → {fmt_time(last['wall_s'])} s, speedup "
         f"{fmt_ratio(last['speedup'])}x of {last['ideal_speedup']:g}, efficiency "
         f"{fmt_pct(last['efficiency'])}")
    if last["comm_share"] is not None:
        s += f", communication {fmt_pct(last['comm_share'])}"
    if failed:
        s += f"; FAILED at {', '.join(map(str, failed))} ranks"
    return s + f"; {where}"
