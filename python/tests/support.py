# SPDX-License-Identifier: BSD-3-Clause
"""What the tests of the kpmap Python package share: the package on the path, the
kpmap-scale command, and a stand-in application (fake_app.py) with known times."""
import csv
import importlib.util
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE_DIR = HERE.parent  # python/, holding kpmap/
sys.path.insert(0, str(PACKAGE_DIR))
sys.path.insert(0, str(HERE))

import fake_app as fake  # noqa: E402

SCRIPT = PACKAGE_DIR.parent / "scripts" / "kpmap-scale"
FAKE = HERE / "fake_app.py"
HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
# kpmap-scale moves itself to /usr/bin/python3 for matplotlib where it must.
HAVE_PLOTS = HAVE_MATPLOTLIB or os.access("/usr/bin/python3", os.X_OK)

# The interpreter itself, not a shim that finds it: the fake starts faster.
LAUNCHER = f"{shlex.quote(sys.executable)} {{app}}"


def run(*args, launcher=LAUNCHER):
    """kpmap-scale ARGS (with the fake's launcher unless launcher is None)."""
    cmd = [sys.executable, str(SCRIPT), *args]
    if launcher is not None:
        cmd += ["--launcher", launcher]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def rows(out):
    with open(Path(out) / "scaling.csv", newline="") as f:
        return list(csv.DictReader(f))


def median_wall(work, ranks, mesh=False):
    # Repetitions 1, 2, 3 scale the times by 1.0, 1.5, 0.9: the median is repetition 1.
    return fake.times(work, ranks, 1, mesh)


class Decks:
    """A temporary folder with a kpmap-train deck, a kpmap-heat deck and a TeaLeaf deck."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        self.out = self.dir / "out"
        self.train = self.write("train.toml", "[data]\nsamples = 200000\nfeatures = 5\n")
        self.heat = self.write("heat.toml", "[mesh]\ncells = [300, 200]\n")
        self.tea = self.write("tea.in", "! a TeaLeaf deck\n*tea\nstate 1 density=100.0 "
                              "energy=0.0001\nx_cells = 100\ny_cells=50\nend_step 10\n*endtea\n")

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, text):
        p = self.dir / name
        p.write_text(text)
        return p

    def study(self, *args, kind="train", deck=None, launcher=LAUNCHER, plots=False):
        deck = deck or (self.train if kind == "train" else self.heat)
        extra = ["--deck", str(deck)] if kind != "bench" else []
        extra += [] if plots else ["--no-plots"]
        return run("--app", str(FAKE), "--kind", kind, *extra, "--out", str(self.out), *args,
                   launcher=None if "--launcher" in args else launcher)

    def assertClean(self, proc):
        self.assertNotIn("Traceback", proc.stderr)
