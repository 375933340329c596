# SPDX-License-Identifier: BSD-3-Clause
"""kpmap-scale: strong and weak scaling studies of the kpmap applications.

Runs an application (kpmap-train, kpmap-heat) or a Google Benchmark executable
over a list of rank counts, several times per rank count, reads the timings the
program writes as JSON (never its log), and writes a table, a CSV, a JSON and
plots into one folder. See docs/scaling.md.

    plan.py     the study: rank counts, decks and the keys weak scaling multiplies
    launch.py   launcher templates (mpiexec, srun under Slurm), batch jobs, cores
    run.py      running one repetition: the program, its environment, its failures
    collect.py  reading what a run wrote; medians, speedup, efficiency; CSV, JSON, table
    cli.py      the command line (kpmap-scale --help)

The plots come from kpmap.plot, as every other kpmap picture does.
"""

EXIT_OK = 0
EXIT_POINT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class UsageError(Exception):
    """A mistake in the command line or the deck: message, exit code 2."""


class RunFailed(Exception):
    """One run of the program did not give a usable result."""
