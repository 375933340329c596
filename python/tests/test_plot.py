#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""kpmap.plot: the pictures of a training run, a heat run and a scaling study, from
files written here by hand; and that a missing matplotlib or file is a notice, not
a failure."""
import json
import os
import subprocess
import sys
import unittest

from support import HAVE_MATPLOTLIB, PACKAGE_DIR, Decks

from kpmap import plot


def png_size(path):
    """(width, height) from a PNG's header."""
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def command(*args):
    env = dict(os.environ, PYTHONPATH=str(PACKAGE_DIR))
    return subprocess.run([sys.executable, "-m", "kpmap.plot", *args], capture_output=True,
                          text=True, env=env, timeout=120)


class ErrorBars(unittest.TestCase):
    def test_never_negative(self):
        # One repetition: median = min = max, and v - v * t / t is negative
        # for these v and t (-3.6e-15 for the efficiency in percent), which once
        # made matplotlib refuse the plot.
        t = 0.025
        row = {"efficiency": 0.25935401432800764, "speedup": 1.7310544739578912, "wall_s": t,
               "wall_min_s": t, "wall_max_s": t}
        for key in ("efficiency", "speedup"):
            for bar in plot.error_bars([row], key, 100):
                self.assertTrue(0.0 <= bar[0] < 1e-12, f"{key}: {bar}")
        row.update(wall_min_s=t / 2, wall_max_s=2 * t)
        below, above = plot.error_bars([row], "speedup")
        self.assertAlmostEqual(below[0], 1.7310544739578912 / 2)
        self.assertAlmostEqual(above[0], 1.7310544739578912)


@unittest.skipUnless(HAVE_MATPLOTLIB, "matplotlib is not installed for this interpreter")
class Pictures(Decks, unittest.TestCase):
    def test_train(self):
        self.write("history.csv", "epoch,train_loss,val_loss,accuracy\n1,2.0,2.5,0.3\n"
                                  "2,1.0,1.4,0.6\n3,0.5,0.9,0.8\n")
        p = command("train", str(self.dir))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(f"plot written to {self.dir / 'loss.png'}", p.stdout)
        self.assertEqual(png_size(self.dir / "loss.png"), (770, 495))  # 7 x 4.5 in at 110 dpi

    def test_heat(self):
        import h5py
        import numpy as np
        with h5py.File(self.dir / "checkpoint_000004.h5", "w") as f:
            f["fields/u"] = np.arange(12.0).reshape(3, 4)
            f.attrs["step"] = 4
        self.write("history.csv", "step,u,error\n0,1.0,0\n1,1.0,1e-9\n2,1.0,2e-9\n")
        p = command("heat", str(self.dir))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(png_size(self.dir / "field.png"), (1210, 495))

    def test_heat_field_larger_than_drawn(self):
        # A field wider than DRAWN_CELLS is read with a stride; the axes still
        # count the grid's cells and the title says which cells are drawn.
        import h5py
        import numpy as np
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        with h5py.File(self.dir / "checkpoint_000002.h5", "w") as f:
            f["fields/u"] = np.arange(60.0 * 100).reshape(60, 100) + 1
            f.attrs["step"] = 2
        self.write("history.csv", "step,u,error\n0,1.0,0\n1,1.0,1e-9\n2,1.0,2e-9\n")
        saved = plot.DRAWN_CELLS
        plot.DRAWN_CELLS = 25
        try:
            fig, _ = plot.heat_figure(str(self.dir), plt)
        finally:
            plot.DRAWN_CELLS = saved
        left = fig.axes[0]
        # ceil(100 / 25) = 4 and ceil(60 / 25) = 3: every 4th cell in x, 3rd in y.
        self.assertEqual(left.get_xlim(), (-0.5, 99.5))
        self.assertEqual(left.get_ylim(), (-0.5, 59.5))
        image = left.get_images()[0]
        self.assertEqual(image.get_array().shape, (20, 25))
        self.assertEqual(tuple(image.get_extent()), (-0.5, 99.5, -0.5, 59.5))
        self.assertEqual(left.get_title(),
                         "u at step 2\n100 x 60 cells, every 4th cell in x, 3rd in y drawn")
        self.assertEqual(left.get_xlabel(), "x cell")
        plt.close(fig)

    def test_run_kind(self):
        # Both apps write history.csv: a row an epoch (train) or a step (heat).
        self.assertIsNone(plot.run_kind(str(self.dir)))
        self.write("history.csv", "epoch,train_loss\n1,2.0\n")
        self.assertEqual(plot.run_kind(str(self.dir)), "train")
        self.write("history.csv", "step,u,error\n0,1.0,0\n")
        self.assertEqual(plot.run_kind(str(self.dir)), "heat")
        self.write("history.csv", "")
        self.assertIsNone(plot.run_kind(str(self.dir)))
        # A kpmap-heat folder written before kpmap 0.2 has summary.csv instead.
        os.remove(self.dir / "history.csv")
        self.write("summary.csv", "step,u,error\n0,1.0,0\n1,1.0,1e-9\n")
        self.assertEqual(plot.run_kind(str(self.dir)), "heat")
        p = command(str(self.dir))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(png_size(self.dir / "field.png"), (1210, 495))

    def test_scaling(self):
        rows = [{"ranks": n, "status": "ok", "oversubscribed": n > 2, "wall_s": 8.0 / n,
                 "wall_min_s": 7.0 / n, "wall_max_s": 9.0 / n, "speedup": float(n),
                 "ideal_speedup": float(n), "efficiency": 1.0, "compute_s": 6.0 / n,
                 "halo_s": None, "collectives_s": 1.0 / n, "io_s": None, "checkpoint_s": None}
                for n in (1, 2, 4)]
        rows.append({"ranks": 8, "status": "failed"})
        written = plot.scaling(str(self.dir), rows, "strong scaling of x", "strong", 3)
        self.assertEqual(written, ["speedup.png", "efficiency.png", "phases.png"])
        self.assertEqual(png_size(self.dir / "speedup.png"), (500, 360))
        self.assertEqual(plot.scaling(str(self.dir), rows[3:], "t", "strong", 1), [])


def trace_doc():
    """Two ranks; rank 0's step holds a solve holding two iterations, rank 1 one
    step; a psum on each rank's communication track."""
    meta = [{"name": "process_name", "ph": "M", "pid": r, "args": {"name": f"rank {r}"}}
            for r in (0, 1)]
    x = [("kpmap::sim::step", 0, 0, 100.0, 50.0), ("kpmap::sim::solve", 0, 0, 101.0, 40.0),
         ("kpmap::sim::cg::iteration", 0, 0, 102.0, 10.0),
         ("kpmap::sim::cg::iteration", 0, 0, 112.0, 10.0),
         ("kpmap::psum[blocks]", 0, 1, 111.0, 1.0), ("kpmap::sim::step", 1, 0, 98.0, 55.0)]
    return {"traceEvents": meta + [{"name": n, "ph": "X", "pid": p, "tid": tid, "ts": ts,
                                    "dur": dur} for n, p, tid, ts, dur in x]}


class Timeline(Decks, unittest.TestCase):
    def test_nesting(self):
        slices = plot.trace_slices(trace_doc()["traceEvents"])
        self.assertEqual(sorted(slices), [(0, 0), (0, 1), (1, 0)])
        self.assertEqual([(s[2], s[3]) for s in slices[(0, 0)]],
                         [(0, "kpmap::sim::step"), (1, "kpmap::sim::solve"),
                          (2, "kpmap::sim::cg::iteration"), (2, "kpmap::sim::cg::iteration")])
        self.assertEqual(slices[(0, 1)], [(111.0, 1.0, 0, "kpmap::psum[blocks]")])

    @unittest.skipUnless(HAVE_MATPLOTLIB, "matplotlib is not installed for this interpreter")
    def test_picture(self):
        trace = self.write("t.json", json.dumps(trace_doc()))
        p = command("trace", str(trace), "--window", "0:0.06")
        self.assertEqual(p.returncode, 0, p.stderr)
        width, height = png_size(self.dir / "t.png")
        self.assertEqual(width, 1320)  # 12 in at 110 dpi; the height grows with the tracks
        p = command("trace", str(trace), "--window", "5:1")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--window takes START_MS:END_MS", p.stderr)


class Notices(Decks, unittest.TestCase):
    def test_nothing_to_plot_is_not_a_failure(self):
        p = command("heat", str(self.dir / "missing"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"^kpmap: no plot")

    def test_usage(self):
        p = command("scaling", str(self.dir))
        self.assertEqual(p.returncode, 2)
        self.assertIn("kpmap-plot train DIR", p.stderr)


if __name__ == "__main__":
    unittest.main()
