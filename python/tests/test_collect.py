#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""kpmap.scale.collect: reading a run's JSON, and the medians, speedup and
efficiency of a study, against values worked out by hand."""
import json
import unittest
from pathlib import Path

from support import Decks

from kpmap import PHASES
from kpmap.scale import RunFailed
from kpmap.scale.collect import (Sample, markdown, one_line, read_app_json,
                                 read_benchmark_json, summarise, write_results)
from kpmap.scale.launch import check_template
from kpmap.scale.plan import KINDS, Point, Study


def sample(wall, compute=None, collectives=None):
    phases = dict.fromkeys(PHASES)
    phases.update(compute_s=compute, collectives_s=collectives)
    return Sample(wall, phases, "d")


class Results(Decks, unittest.TestCase):
    def study(self, mode, points):
        s = Study(app=Path("/opt/kpmap-train"), kind=KINDS["train"], deck=self.train, mode=mode,
                  ranks=[p.ranks for p in points], repeat=3, out=self.out,
                  launcher=check_template("mpiexec -n {ranks}", None),
                  launcher_text="mpiexec -n {ranks}", ranks_per_node=None, sets=[],
                  extra_args=[], scale_keys=[], tea=False, result_name="result.json",
                  timeout=None)
        s.points = points
        return s

    def test_strong(self):
        # Medians 8 s (1 rank), 5 s (2 ranks), 3 s (4 ranks, one repetition short).
        one = Point(1, samples=[sample(8.0, 7.0, 1.0), sample(9.0, 8.0, 1.0),
                                sample(7.0, 6.0, 1.0)])
        two = Point(2, samples=[sample(5.0, 4.0, 1.0), sample(6.0, 4.5, 1.5),
                                sample(4.0, 3.0, 1.0)])
        four = Point(4, samples=[sample(2.0, 1.0, 1.0), sample(4.0, 2.0, 2.0)])
        rows = summarise(self.study("strong", [one, two, four]))
        self.assertEqual([r["wall_s"] for r in rows], [8.0, 5.0, 3.0])
        self.assertEqual([r["wall_min_s"] for r in rows], [7.0, 4.0, 2.0])
        self.assertEqual([r["speedup"] for r in rows], [1.0, 8 / 5, 8 / 3])
        self.assertEqual([r["efficiency"] for r in rows], [1.0, 8 / 10, 8 / 12])
        self.assertEqual(rows[1]["compute_s"], 4.0)
        # The median of each run's share: 1/8, 1/9, 1/7 -> 1/8.
        self.assertAlmostEqual(rows[0]["comm_share"], 1 / 8)
        self.assertAlmostEqual(rows[2]["comm_share"], (0.5 + 0.5) / 2)
        self.assertIsNone(rows[0]["io_s"])  # not reported by every run
        self.assertEqual([r["nodes"] for r in rows], [None, None, None])

    def test_nodes(self):
        # The node count each run reports is the row's, and the table's column.
        points = [Point(n, samples=[Sample(4.0 / n, dict.fromkeys(PHASES), "d", n)])
                  for n in (1, 2, 3)]
        study = self.study("strong", points)
        rows = summarise(study)
        self.assertEqual([r["nodes"] for r in rows], [1, 2, 3])
        self.assertIn("| 3 ‡ | 3 | 1.333 | 3.00 |", markdown(study, rows))

    def test_weak_and_failures(self):
        # The 1-rank point failed: 2 ranks is the reference. Weak: 4 ranks do twice
        # the work of 2 in 2.5 s against 2 s, so the scaled speedup is 2 * 2 / 2.5.
        failed = Point(1, failure="exit 3")
        two = Point(2, samples=[sample(2.0)])
        four = Point(4, samples=[sample(2.5)])
        study = self.study("weak", [failed, two, four])
        rows = summarise(study)
        self.assertEqual([r["status"] for r in rows], ["failed", "ok", "ok"])
        self.assertIsNone(rows[0]["speedup"])
        self.assertEqual((rows[2]["ideal_speedup"], rows[2]["speedup"]), (2.0, 1.6))
        self.assertEqual(rows[2]["efficiency"], 0.8)
        self.assertIsNone(rows[2]["comm_share"])
        table = markdown(study, rows)
        self.assertIn("| 1 | – | failed |", table)
        self.assertIn("| 4 ‡ | – | 2.5 | 1.60 | 80 % | – |", table)
        self.assertIn("efficiency = t(base) / t(N)", table)
        line = one_line(study, rows, [])
        self.assertIn("2→4 ranks, 2 s → 2.5 s, speedup 1.60x of 2, efficiency 80 %", line)
        self.assertIn("FAILED at 1 ranks", line)

    def test_files(self):
        study = self.study("strong", [Point(1, samples=[sample(4.0)]),
                                      Point(3, samples=[sample(2.0)])])
        self.out.mkdir()
        write_results(study)
        doc = json.loads((self.out / "scaling.json").read_text())
        self.assertEqual([p["speedup"] for p in doc["points"]], [1.0, 2.0])
        self.assertAlmostEqual(doc["points"][1]["efficiency"], 2 / 3)
        csv_lines = (self.out / "scaling.csv").read_text().splitlines()
        self.assertTrue(csv_lines[0].startswith("ranks,nodes,status,repetitions,wall_s"))
        self.assertTrue(csv_lines[2].startswith("3,,ok,1,2.0,"))
        self.assertEqual(sorted(p.name for p in self.out.iterdir()),
                         ["scaling.csv", "scaling.json", "scaling.md"])


class Reading(Decks, unittest.TestCase):
    def json_file(self, doc):
        p = self.dir / "r.json"
        p.write_text(json.dumps(doc))
        return p

    def test_app_json(self):
        p = self.json_file({"ranks": 2, "timing": {"wall_s": 3.5, "compute_s": 2,
                                                   "halo_s": -1, "io_s": "x"}})
        s = read_app_json(p, 2, ["app"])
        self.assertEqual((s.wall_s, s.phases["compute_s"]), (3.5, 2.0))
        self.assertIsNone(s.phases["halo_s"])  # negative: not a time
        self.assertIsNone(s.phases["io_s"])
        self.assertIsNone(s.nodes)  # a program that does not say
        for nodes, read in ((3, 3), (0, None), (True, None), ("2", None)):
            p = self.json_file({"ranks": 2, "nodes": nodes, "timing": {"wall_s": 1}})
            self.assertEqual(read_app_json(p, 2, ["app"]).nodes, read, nodes)
        cases = (({"timing": {"wall_s": 0}}, "expected a positive number"),
                 ({"ranks": 2}, 'no "timing" object'),
                 ({"ranks": 1, "timing": {"wall_s": 1}}, "says ranks: 1, but 2 were asked"))
        for doc, message in cases:
            with self.assertRaisesRegex(RunFailed, message):
                read_app_json(self.json_file(doc), 2, ["app"])
        (self.dir / "r.json").write_text("{")
        with self.assertRaisesRegex(RunFailed, "not valid JSON"):
            read_app_json(self.dir / "r.json", 2, ["app"])
        with self.assertRaisesRegex(RunFailed, "exited 0 but wrote no"):
            read_app_json(self.dir / "none.json", 2, ["app"])

    def test_benchmark_json(self):
        runs = [{"name": "BM_psum/8", "run_name": "BM_psum/8", "run_type": "iteration",
                 "real_time": t, "time_unit": "us"} for t in (3.0, 1.0, 2.0)]
        runs.append({"name": "BM_psum/8_mean", "run_name": "BM_psum/8",
                     "run_type": "aggregate", "real_time": 99.0, "time_unit": "us"})
        s = read_benchmark_json(self.json_file({"benchmarks": runs}), ["b"])
        self.assertAlmostEqual(s.wall_s, 2e-6)  # the median of the iterations, in seconds
        runs.append(dict(runs[0], name="BM_psum/16", run_name="BM_psum/16"))
        with self.assertRaisesRegex(RunFailed, "holds 2 benchmarks"):
            read_benchmark_json(self.json_file({"benchmarks": runs}), ["b"])


if __name__ == "__main__":
    unittest.main()
