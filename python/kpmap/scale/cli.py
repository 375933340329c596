# SPDX-License-Identifier: BSD-3-Clause
"""The kpmap-scale command line: arguments, the study's progress, exit codes.

    kpmap-scale --app APP [--deck DECK] --ranks LIST --mode {strong,weak} --out DIR ...

Exit status: 0 all points measured, 1 a point failed (the others are kept), 2 bad
arguments, 130 interrupted.
"""
from __future__ import annotations

import argparse
import datetime
import importlib.util
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from kpmap import plot
from kpmap.interpreter import how_to_install, use_plotting_python
from kpmap.scale import (EXIT_INTERRUPTED, EXIT_OK, EXIT_POINT_FAILED, EXIT_USAGE,
                         UsageError)
from kpmap.scale.collect import one_line, study_title, write_results
from kpmap.scale.launch import (DEFAULT_LAUNCHER, check_template, local_launcher, named_hosts,
                                usable_cores)
from kpmap.scale.plan import (KINDS, Study, detect_kind, is_tea_deck, parse_ranks,
                              parse_scale_key, parse_set, prepare_point, schedule, toml_text,
                              write_point_deck)
from kpmap.scale.run import repo_root, resolve_app, run_repetition

EPILOG = """\
examples:
  # strong scaling: the same deck at 1, 2 and 4 ranks, median of 3 runs each
  kpmap-scale --app kpmap-train --deck inputs/train_linear.toml \\
      --ranks 1,2,4 --mode strong --repeat 3 --out scaling/train-strong

  # weak scaling: data.samples grows with the rank count (the default key for
  # kpmap-train); for kpmap-heat mesh.cells[0] (x cells) grows instead
  kpmap-scale --app kpmap-heat --deck inputs/heat2d.toml --ranks 1,2,4,8 \\
      --mode weak --repeat 3 --out scaling/heat-weak --set time.end_step=50

  # under Slurm, one rank per GPU, packed 4 to a node
  kpmap-scale --app kpmap-heat --deck inputs/heat3d.toml --ranks 1,2,4,8,16 \\
      --mode strong --repeat 3 --out heat-strong --ranks-per-node 4 \\
      --launcher 'srun -N {nodes} -n {ranks} --gpus-per-task=1 --cpu-bind=cores --kill-on-bad-exit=1'

  # a benchmark, selected by the arguments after -- (weak: the message size
  # per rank is fixed)
  kpmap-scale --app build/default/bench/kpmap-bench-collectives --ranks 1,2 \\
      --mode weak --repeat 3 --out psum -- --benchmark_filter='BM_psum/1048576$'

  # print the commands without running anything
  kpmap-scale --app kpmap-train --deck d.toml --ranks 1,2,4 --mode weak \\
      --out s --dry-run

launcher template:
  {ranks} is the rank count, {nodes} = ceil(ranks / --ranks-per-node), and
  {app} the application's whole command line (appended at the end when the
  template has no {app}). Default: 'mpiexec -n {ranks}'. As root, and with more
  ranks than cores on this machine, the Open MPI variables that allow it are
  set in the runs' environment (other MPI libraries ignore them). Each run also
  sees KPMAP_SCALE_RANKS and KPMAP_SCALE_REPETITION.

weak scaling:
  The scale key's value in the deck (or in a --set of the same key) is the
  size per rank; it is multiplied by the rank count and passed to the program
  as --set KEY=VALUE. KEY[I] scales element I of an integer list; give
  --scale-key several times to scale several keys (e.g. data.samples and
  train.batch_size). Defaults: data.samples for kpmap-train, mesh.cells[0] for
  kpmap-heat, x_cells for a TeaLeaf deck (of which a scaled copy is written for
  each rank count). Benchmarks are run unchanged: choose the mode that matches
  how the benchmark sizes its problem.

output (in --out):
  scaling.md, scaling.csv, scaling.json, speedup.png, efficiency.png,
  phases.png, and ranks-N/rep-K/ with each run's JSON, stdout and stderr.
  Time is the median over the repetitions of the wall time the program reports
  (slowest rank). Speedup is against the smallest rank count measured, scaled
  by the work in weak mode; efficiency = speedup / ideal (weak: t1 / tN).

  The files are rewritten after every run: after a failure or Ctrl-C they hold
  everything measured so far.

exit status: 0 all points measured, 1 a point failed (the others are kept),
  2 bad arguments, 130 interrupted.
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="kpmap-scale", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run a strong or weak scaling study of a kpmap application or benchmark "
                    "and write a table, CSV, JSON and plots.",
        epilog=EPILOG,
        usage="kpmap-scale --app APP [--deck DECK] --ranks LIST --mode {strong,weak} "
              "--out DIR [options] [-- APP_ARGS...]")
    p.add_argument("--app", required=True,
                   help="the program: a path, a name on PATH, or a name in this checkout's "
                        "build/default/apps or bench")
    p.add_argument("--deck", help="the input deck (TOML or TeaLeaf); not for benchmarks")
    p.add_argument("--ranks", required=True, metavar="LIST",
                   help="comma-separated rank counts, e.g. 1,2,4,8")
    p.add_argument("--mode", required=True, choices=("strong", "weak"),
                   help="strong: the same global problem at every rank count; weak: the "
                        "scale key grows with the rank count")
    p.add_argument("--repeat", type=int, default=3, metavar="N",
                   help="runs per rank count; the median is reported (default 3)")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="output folder (created; earlier results in it are replaced)")
    p.add_argument("--launcher", default=DEFAULT_LAUNCHER, metavar="TEMPLATE",
                   help="how to start N ranks, with {ranks}, {nodes}, {app} "
                        f"(default: '{DEFAULT_LAUNCHER}'; e.g. 'srun -n {{ranks}}')")
    p.add_argument("--ranks-per-node", type=int, metavar="R",
                   help="ranks per node, for the {nodes} placeholder")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="passed to the program as --set KEY=VALUE (repeatable)")
    p.add_argument("--scale-key", action="append", default=[], metavar="KEY[INDEX]",
                   help="deck key multiplied by the rank count in weak mode, repeatable "
                        "(default: data.samples for kpmap-train, mesh.cells[0] for "
                        "kpmap-heat, x_cells for a TeaLeaf deck)")
    p.add_argument("--kind", choices=sorted(KINDS),
                   help="what the program is, when its name does not say: train and heat "
                        "write DIR/result.json, bench is a Google "
                        "Benchmark executable")
    p.add_argument("--result", metavar="NAME",
                   help="the JSON file the program writes in --output DIR (default by kind)")
    p.add_argument("--timeout", type=float, metavar="SECONDS",
                   help="stop a run that takes longer, and count it as failed")
    p.add_argument("--interleave", action="store_true",
                   help="run repetition 1 of every rank count, then repetition 2, ...: on a "
                        "shared machine, slow spells then hit every point alike")
    p.add_argument("--no-plots", action="store_true",
                   help="write the table, CSV and JSON only (no matplotlib needed)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the commands and run nothing")
    return p


def parse_study(argv: List[str]) -> Tuple[Study, argparse.Namespace]:
    extra: List[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    a = build_parser().parse_args(argv)
    ranks = parse_ranks(a.ranks)
    if a.repeat < 1:
        raise UsageError(f"--repeat {a.repeat}: needs at least 1 repetition")
    if a.ranks_per_node is not None and a.ranks_per_node < 1:
        raise UsageError(f"--ranks-per-node {a.ranks_per_node}: must be at least 1")
    if a.timeout is not None and not a.timeout > 0:
        raise UsageError(f"--timeout {a.timeout}: must be a positive number of seconds")
    launcher = check_template(a.launcher, a.ranks_per_node)
    if "{ranks}" not in a.launcher and len(ranks) > 1:
        print(f"kpmap-scale: warning: --launcher {a.launcher!r} has no {{ranks}}: every point "
              "runs as many ranks as the launcher chooses", file=sys.stderr)
    sets = [parse_set(s) for s in a.set]

    app = resolve_app(a.app)
    if app is None:
        hint = ("" if "/" in a.app else
                f" (not on PATH nor in {repo_root() / 'build/default'}/apps or bench; build it "
                "or give its path)")
        if not a.dry_run:
            raise UsageError(f"--app {a.app}: no such executable program{hint}")
        print(f"kpmap-scale: warning: --app {a.app}: no such executable program{hint}",
              file=sys.stderr)
        app = Path(a.app).absolute() if "/" in a.app else Path(a.app)
    kind = detect_kind(a.app, a.kind)

    deck = None
    if a.deck is not None:
        deck = Path(a.deck).absolute()
        if not deck.is_file():
            raise UsageError(f"--deck {a.deck}: no such file")
    if kind.needs_deck and deck is None:
        raise UsageError(f"--deck is required for {app.name} ({kind.name})")
    if kind.name == "bench":
        if deck is not None:
            raise UsageError("--deck: a benchmark takes no deck (pass its options after --)")
        if sets:
            raise UsageError("--set: a benchmark takes no deck keys (pass its options after --)")
    tea = deck is not None and is_tea_deck(deck)

    scale_keys = [parse_scale_key(k) for k in a.scale_key]
    if scale_keys:
        if a.mode == "strong":
            print("kpmap-scale: warning: --scale-key has no effect in strong mode",
                  file=sys.stderr)
        if kind.name == "bench":
            raise UsageError("--scale-key: benchmarks are run unchanged (no deck to scale)")
        for sk in scale_keys:
            if tea and sk.index is not None:
                raise UsageError(f"--scale-key {sk}: TeaLeaf deck keys are plain integers "
                                 "(x_cells, y_cells, z_cells)")
    elif a.mode == "weak" and kind.name != "bench":
        default = kind.tea_scale_key if tea else kind.scale_key
        if default is None:
            raise UsageError(f"weak mode: {app.name} has no default key to scale; "
                             "name one with --scale-key KEY or KEY[INDEX]")
        scale_keys = [parse_scale_key(default)]

    study = Study(app=app, kind=kind, deck=deck, mode=a.mode, ranks=ranks, repeat=a.repeat,
                  out=Path(a.out).absolute(), launcher=launcher, launcher_text=a.launcher,
                  ranks_per_node=a.ranks_per_node, sets=sets, extra_args=extra,
                  scale_keys=scale_keys if a.mode == "weak" else [], tea=tea,
                  result_name=a.result or kind.result, timeout=a.timeout,
                  started=datetime.datetime.now().astimezone().isoformat(timespec="seconds"))
    return study, a


def maybe_reexec_for_matplotlib(argv: List[str]) -> None:
    """Where this Python lacks matplotlib (a pyenv, conda or module Python), rerun
    under the first that has it (kpmap.interpreter)."""
    use_plotting_python(["-m", "kpmap.scale", *argv])


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        study, options = parse_study(argv)
        dry_run = options.dry_run
        local = local_launcher(study.launcher)
        hosts = named_hosts(study.launcher)
        points = [prepare_point(study, n, local, hosts) for n in study.ranks]
    except UsageError as e:
        print(f"kpmap-scale: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    study.points = points

    def say(msg: str) -> None:
        print(msg, flush=True)

    runs = schedule(points, study.repeat, options.interleave)
    if dry_run:
        for p, rep in runs:
            if rep == 1:
                say(f"# ranks {p.ranks}" + (" (oversubscribed)" if p.oversubscribed else "") +
                    "".join(f", {k} = {toml_text(v)}" for k, v in p.scaled.items()))
                write_point_deck(study, p, True, say)
            run_repetition(study, p, rep, True, say)
        return EXIT_OK

    try:
        study.out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        print(f"kpmap-scale: error: cannot create --out {study.out}: {e.strerror}",
              file=sys.stderr)
        return EXIT_USAGE
    say(f"kpmap-scale: {study_title(study)} at {', '.join(map(str, study.ranks))} ranks, "
        f"{study.repeat} repetition{'s' if study.repeat > 1 else ''} each, into {study.out}/")
    for p in points:
        if p.failure:
            print(f"kpmap-scale: point refused: {p.failure}", file=sys.stderr, flush=True)
        if p.oversubscribed:
            say(f"  note: {p.ranks} ranks on {usable_cores()} cores: oversubscribed, ranks "
                "share cores")
    interrupted = False
    rows: List[Dict[str, Any]] = []
    try:
        for p, rep in runs:
            if p.failure:
                continue
            if rep == 1:
                write_point_deck(study, p, False, say)
            run_repetition(study, p, rep, False, say)
            # After every run, so that whatever happens next the results so far are kept.
            rows = write_results(study)
    except KeyboardInterrupt:
        # The run under way is lost; the repetitions finished before it are kept.
        interrupted = True
        print("kpmap-scale: interrupted; keeping the repetitions measured so far",
              file=sys.stderr)
        rows = write_results(study)
    plots: List[str] = []
    if options.no_plots:
        pass
    elif importlib.util.find_spec("matplotlib") is None:
        print(f"kpmap-scale: warning: no plots ({how_to_install()})", file=sys.stderr)
    else:
        plots = plot.scaling(study.out, rows, study_title(study), study.mode, study.repeat)
    say(one_line(study, rows, plots))
    if interrupted:
        return EXIT_INTERRUPTED
    return EXIT_POINT_FAILED if any(not p.ok for p in study.points) else EXIT_OK


def entry(argv: List[str]) -> int:
    """The kpmap-scale command: main(), first moved to an interpreter with matplotlib
    when plots are wanted."""
    own = argv[:argv.index("--")] if "--" in argv else argv
    if not {"--dry-run", "--no-plots", "-h", "--help"} & set(own):
        maybe_reexec_for_matplotlib(argv)
    return main(argv)
