#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""kpmap-scale end to end, without MPI: the stand-in application (fake_app.py),
started through the launcher template "{app}", writes the JSON a real one would,
with times from a known model, so that the medians, speedup and efficiency, the
failure handling and the argument checks of the whole command can be checked
exactly. The command line must behave as docs/scaling.md says."""
import json
import os
import re
import signal
import subprocess
import sys
import time
import unittest
from pathlib import Path

from support import (FAKE, HAVE_PLOTS, LAUNCHER, PACKAGE_DIR, SCRIPT, Decks, fake, median_wall,
                     rows, run)


class Studies(Decks, unittest.TestCase):
    def test_strong(self):
        p = self.study("--ranks", "1,2,4", "--mode", "strong", "--repeat", "3", plots=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertClean(p)
        r = rows(self.out)
        self.assertEqual([x["ranks"] for x in r], ["1", "2", "4"])
        t1 = median_wall(200000, 1)["wall_s"]
        for x in r:
            n = int(x["ranks"])
            want = median_wall(200000, n)
            self.assertEqual(x["status"], "ok")
            self.assertEqual(x["repetitions"], "3")
            self.assertAlmostEqual(float(x["wall_s"]), want["wall_s"], places=12)
            self.assertAlmostEqual(float(x["wall_min_s"]), 0.9 * want["wall_s"], places=12)
            self.assertAlmostEqual(float(x["wall_max_s"]), 1.5 * want["wall_s"], places=12)
            self.assertAlmostEqual(float(x["compute_s"]), want["compute_s"], places=12)
            self.assertAlmostEqual(float(x["speedup"]), t1 / want["wall_s"], places=12)
            self.assertAlmostEqual(float(x["efficiency"]), t1 / want["wall_s"] / n, places=12)
            self.assertAlmostEqual(float(x["comm_share"]),
                                   want["collectives_s"] / want["wall_s"], places=12)
        self.assertEqual(float(r[0]["speedup"]), 1.0)
        for name in ("scaling.csv", "scaling.json", "scaling.md"):
            self.assertTrue((self.out / name).is_file(), name)
        if HAVE_PLOTS:
            for name in ("speedup.png", "efficiency.png", "phases.png"):
                self.assertEqual((self.out / name).read_bytes()[:4], b"\x89PNG", name)
        doc = json.loads((self.out / "scaling.json").read_text())
        self.assertEqual(doc["study"]["mode"], "strong")
        self.assertEqual([len(pt["runs"]) for pt in doc["points"]], [3, 3, 3])
        table = (self.out / "scaling.md").read_text()
        self.assertIn("| ranks | nodes | time (s) | speedup | efficiency | communication |",
                      table)
        self.assertIn("| 1 | 1 | ", table)
        last = p.stdout.strip().splitlines()[-1]
        self.assertRegex(last, r"^kpmap-scale: strong scaling of .* 1→4 ranks.*speedup "
                               r"[0-9.]+x of 4, efficiency [0-9]+ %")
        for n in (1, 2, 4):
            for rep in (1, 2, 3):
                self.assertTrue((self.out / f"ranks-{n}/rep-{rep}/result.json").is_file())

    def test_weak_train(self):
        p = self.study("--ranks", "1,2,3", "--mode", "weak", "--repeat", "1",
                       "--set", "data.samples=50000", "--set", "train.epochs=2")
        self.assertEqual(p.returncode, 0, p.stderr)
        r = rows(self.out)
        t1 = fake.times(50000, 1, 1, False)["wall_s"]
        for x in r:
            n = int(x["ranks"])
            # The --set value, not the deck's, is the 1-rank size.
            self.assertEqual(x["data.samples"], str(50000 * n))
            got = json.loads((self.out / f"ranks-{n}/rep-1/result.json").read_text())
            self.assertEqual(got["work"], 50000 * n)
            tn = fake.times(50000 * n, n, 1, False)["wall_s"]
            self.assertAlmostEqual(float(x["efficiency"]), t1 / tn, places=12)
            self.assertAlmostEqual(float(x["speedup"]), n * t1 / tn, places=12)
            self.assertEqual(float(x["ideal_speedup"]), n)

    def test_weak_heat_list_element(self):
        p = self.study("--ranks", "1,2", "--mode", "weak", "--repeat", "1", kind="heat")
        self.assertEqual(p.returncode, 0, p.stderr)
        for n in (1, 2):
            got = json.loads((self.out / f"ranks-{n}/rep-1/result.json").read_text())
            self.assertEqual(got["scaled"], [300 * n, 200])
        self.assertIn("| 2 | 1 | [600,200] |", (self.out / "scaling.md").read_text())
        p = self.study("--ranks", "1,2", "--mode", "weak", "--repeat", "1",
                       "--scale-key", "mesh.cells[1]", kind="heat")
        self.assertEqual(p.returncode, 0, p.stderr)
        got = json.loads((self.out / "ranks-2/rep-1/result.json").read_text())
        self.assertEqual(got["scaled"], [300, 400])

    def test_weak_several_keys(self):
        p = self.study("--ranks", "1,3", "--mode", "weak", "--repeat", "1", "--scale-key",
                       "mesh.cells[0]", "--scale-key", "mesh.cells[1]", kind="heat")
        self.assertEqual(p.returncode, 0, p.stderr)
        got = json.loads((self.out / "ranks-3/rep-1/result.json").read_text())
        self.assertEqual(got["scaled"], [900, 600])
        self.assertEqual(rows(self.out)[1]["mesh.cells"], "[900,600]")
        p = self.study("--ranks", "1,2", "--mode", "weak", "--repeat", "1", "--dry-run",
                       "--set", "train.batch_size=64", "--scale-key", "data.samples",
                       "--scale-key", "train.batch_size")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("--set data.samples=400000 --set train.batch_size=128 --output",
                      p.stdout)

    def test_weak_tealeaf_deck(self):
        p = self.study("--ranks", "1,4", "--mode", "weak", "--repeat", "1", kind="heat",
                       deck=self.tea)
        self.assertEqual(p.returncode, 0, p.stderr)
        copy = (self.out / "ranks-4" / "tea.in").read_text()
        self.assertEqual(copy, self.tea.read_text().replace("x_cells = 100", "x_cells = 400"))
        got = json.loads((self.out / "ranks-4/rep-1/result.json").read_text())
        self.assertEqual(got["work"], 400 * 50)

    def test_failing_point_keeps_the_others(self):
        p = self.study("--ranks", "1,2,4", "--mode", "strong", "--repeat", "2",
                       "--set", "fake.fail_ranks=2")
        self.assertEqual(p.returncode, 1)
        self.assertClean(p)
        self.assertIn("ranks 2, repetition 1", p.stderr)
        self.assertIn("exited with code 3", p.stderr)
        self.assertIn("injected failure at 2 ranks", p.stderr)
        self.assertIn(f"{FAKE} {self.train} --set fake.fail_ranks=2 --output", p.stderr)
        r = rows(self.out)
        self.assertEqual([(x["ranks"], x["status"]) for x in r],
                         [("1", "ok"), ("2", "failed"), ("4", "ok")])
        self.assertEqual(r[1]["wall_s"], "")
        self.assertIn("| 2 | – | failed |", (self.out / "scaling.md").read_text())
        self.assertIn("FAILED at 2 ranks", p.stdout)
        doc = json.loads((self.out / "scaling.json").read_text())
        self.assertIn("exited with code 3", doc["points"][1]["failure"])

    def test_hostfile_with_fewer_slots_than_ranks(self):
        # The ranks would share the hosts' cores: that point is refused, the
        # others measured, and the fit and the table leave it out.
        hostfile = self.out.parent / "hosts"
        hostfile.write_text("# two slots\nlocalhost slots=2 max_slots=2\n")
        p = self.study("--ranks", "1,2,4", "--mode", "strong", "--repeat", "1",
                       "--launcher", f"{LAUNCHER} --hostfile {hostfile}")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(f"point refused: ranks 4: the launcher's hostfile {hostfile} holds 2 slots, "
                      "fewer than the ranks: they would be oversubscribed; not run", p.stderr)
        r = rows(self.out)
        self.assertEqual([(x["ranks"], x["status"]) for x in r],
                         [("1", "ok"), ("2", "ok"), ("4", "failed")])
        self.assertEqual(r[2]["speedup"], "")
        self.assertFalse((self.out / "ranks-4").exists())
        self.assertIn("FAILED at 4 ranks", p.stdout)
        # The same with --host: one slot a host unless it says how many.
        p = self.study("--ranks", "1,2", "--mode", "strong", "--repeat", "1",
                       "--launcher", f"{LAUNCHER} --host localhost")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("point refused: ranks 2: the launcher's --host localhost holds 1 slot,",
                      p.stderr)

    def test_hostfile_naming_an_unknown_host(self):
        hostfile = self.out.parent / "hosts"
        hostfile.write_text("localhost slots=1\nno-such-host.invalid slots=2\n")
        p = self.study("--ranks", "1,2", "--mode", "strong",
                       "--launcher", f"{LAUNCHER} --hostfile {hostfile}")
        self.assertEqual(p.returncode, 2)
        self.assertIn(f"kpmap-scale: error: --launcher: hostfile {hostfile}, line 2: host "
                      "'no-such-host.invalid' is not known here (no address for it)", p.stderr)
        hostfile.write_text("localhost slots=two\n")
        p = self.study("--ranks", "1", "--mode", "strong",
                       "--launcher", f"{LAUNCHER} --hostfile {hostfile}")
        self.assertEqual(p.returncode, 2)
        self.assertIn("line 1: 'slots=two': slots takes a whole number", p.stderr)

    def test_failing_baseline(self):
        p = self.study("--ranks", "1,2,4", "--mode", "strong", "--repeat", "1",
                       "--set", "fake.fail_ranks=1")
        self.assertEqual(p.returncode, 1)
        r = rows(self.out)
        # The smallest rank count measured becomes the reference.
        self.assertEqual(float(r[1]["speedup"]), 1.0)
        self.assertEqual(float(r[2]["ideal_speedup"]), 2.0)

    def test_bad_results(self):
        cases = (("fake.no_timing=1", 'no "timing" object'),
                 ("fake.report_ranks=7", "says ranks: 7, but 1 were asked for"))
        for setting, message in cases:
            p = self.study("--ranks", "1", "--mode", "strong", "--repeat", "1", "--set", setting)
            self.assertEqual(p.returncode, 1, setting)
            self.assertIn(message, p.stderr)
            self.assertClean(p)

    def test_timeout(self):
        p = self.study("--ranks", "1", "--mode", "strong", "--repeat", "1",
                       "--set", "fake.sleep=30", "--timeout", "0.5")
        self.assertEqual(p.returncode, 1)
        self.assertIn("still running after 0.5 s", p.stderr)

    def test_dry_run(self):
        p = self.study("--ranks", "1,2,4", "--mode", "weak", "--repeat", "2", "--dry-run",
                       launcher=None)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertFalse(self.out.exists())
        lines = [x for x in p.stdout.splitlines() if not x.startswith("#")]
        self.assertEqual(len(lines), 6)
        self.assertRegex(lines[5], rf"mpiexec -n 4 {FAKE} {self.train} --set "
                                   rf"data.samples=800000 --output {self.out}/ranks-4/rep-2$")

    def test_interleave(self):
        p = self.study("--ranks", "1,2", "--mode", "strong", "--repeat", "2", "--interleave",
                       "--dry-run")
        self.assertEqual(p.returncode, 0, p.stderr)
        runs = re.findall(r"ranks-(\d)/rep-(\d)", p.stdout)
        self.assertEqual(runs, [("1", "1"), ("2", "1"), ("1", "2"), ("2", "2")])
        p = self.study("--ranks", "1,2", "--mode", "strong", "--repeat", "3", "--interleave",
                       "--set", "fake.fail_ranks=2")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr.count("point failed"), 1)  # not retried in later rounds
        r = rows(self.out)
        self.assertEqual([(x["ranks"], x["status"], x["repetitions"]) for x in r],
                         [("1", "ok", "3"), ("2", "failed", "0")])

    def test_interrupt_keeps_finished_repetitions(self):
        cmd = [sys.executable, str(SCRIPT), "--app", str(FAKE), "--kind", "train", "--deck",
               str(self.train), "--out", str(self.out), "--ranks", "1,2", "--mode", "strong",
               "--repeat", "5", "--no-plots", "--launcher", LAUNCHER, "--set", "fake.sleep=0.3"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 60
        while not (self.out / "ranks-1/rep-2/result.json").exists():
            self.assertLess(time.monotonic(), deadline, "the second run never finished")
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 130, err)
        self.assertIn("interrupted; keeping the repetitions measured so far", err)
        self.assertNotIn("Traceback", err)
        r = rows(self.out)
        self.assertEqual([x["ranks"] for x in r], ["1"])
        self.assertEqual(r[0]["status"], "ok")
        # rep-2's result.json may exist before the harness has read it: 1 to 3 kept.
        self.assertIn(int(r[0]["repetitions"]), (1, 2, 3))
        self.assertIn("| 1 ‡ |", (self.out / "scaling.md").read_text())

    def test_benchmark(self):
        p = self.study("--ranks", "1,2", "--mode", "strong", "--repeat", "1", "--",
                       "--benchmark_filter=BM_fake/1024$", kind="bench")
        self.assertEqual(p.returncode, 0, p.stderr)
        r = rows(self.out)
        self.assertAlmostEqual(float(r[0]["wall_s"]), 1e-3)
        self.assertAlmostEqual(float(r[1]["speedup"]), 2.0)
        self.assertEqual(r[1]["comm_share"], "")
        p = self.study("--ranks", "1", "--mode", "strong", "--repeat", "1", kind="bench")
        self.assertEqual(p.returncode, 1)
        self.assertIn("holds 2 benchmarks (BM_fake/1024, BM_fake/2048)", p.stderr)


class BadArguments(Decks, unittest.TestCase):
    def check(self, args, message, kind="train", deck=None):
        p = self.study(*args, kind=kind, deck=deck)
        self.assertEqual(p.returncode, 2, f"{args}: {p.stdout} {p.stderr}")
        self.assertIn(message, p.stderr, args)
        self.assertClean(p)
        self.assertFalse((self.out / "scaling.csv").exists())

    def test_bad_arguments(self):
        strong = ["--mode", "strong"]
        self.check(["--ranks", "1,x", *strong], "'x' is not a positive integer")
        self.check(["--ranks", "0", *strong], "'0' is not a positive integer")
        self.check(["--ranks", "1", "--repeat", "0", *strong], "needs at least 1 repetition")
        self.check(["--ranks", "1", "--mode", "medium"], "invalid choice: 'medium'")
        self.check(["--ranks", "1", *strong, "--set", "novalue"], "expected KEY=VALUE")
        self.check(["--ranks", "1", *strong, "--launcher", "mpiexec -n {rank}"],
                   "unknown placeholder {rank}")
        self.check(["--ranks", "1", *strong, "--launcher", "mpiexec -n {ranks"],
                   "an unmatched '{'")
        self.check(["--ranks", "1", *strong, "--launcher", "mpiexec -n ranks}"],
                   "an unmatched '}'")
        self.check(["--ranks", "1", *strong, "--launcher", "srun -N {nodes} -n {ranks}"],
                   "give --ranks-per-node too")
        self.check(["--ranks", "1", *strong, "--timeout", "0"], "positive number of seconds")

    def test_bad_decks(self):
        weak = ["--ranks", "1,2", "--mode", "weak"]
        self.check(weak, "does not set data.samples", deck=self.heat)
        self.check(weak + ["--scale-key", "mesh.cells[", ], "expected KEY or KEY[INDEX]",
                   kind="heat")
        self.check(weak + ["--scale-key", "mesh.cells"], "a list: scale one element",
                   kind="heat")
        self.check(weak + ["--scale-key", "mesh.cells[2]"], "has no element 2", kind="heat")
        self.check(weak, "not a valid TOML deck", deck=self.write("bad.toml", "[data\n"))
        self.check(weak, "--deck /nonexistent.toml: no such file",
                   deck=Path("/nonexistent.toml"))
        self.check(weak, "does not set x_cells",
                   deck=self.write("t.in", "*tea\ny_cells=5\n*endtea\n"), kind="heat")

    def test_bad_programs(self):
        p = run("--app", "/nonexistent/kpmap-train", "--deck", str(self.train), "--ranks", "1",
                "--mode", "strong", "--out", str(self.out))
        self.assertEqual(p.returncode, 2)
        self.assertIn("no such executable program", p.stderr)
        p = run("--app", str(FAKE), "--deck", str(self.train), "--ranks", "1", "--mode",
                "strong", "--out", str(self.out))
        self.assertEqual(p.returncode, 2)
        self.assertIn("pass --kind train, heat or bench", p.stderr)
        p = run("--app", str(FAKE), "--kind", "train", "--ranks", "1", "--mode", "strong",
                "--out", str(self.out))
        self.assertEqual(p.returncode, 2)
        self.assertIn("--deck is required", p.stderr)

    def test_help(self):
        p = run("--help", launcher=None)
        self.assertEqual(p.returncode, 0)
        for text in ("examples:", "srun -N {nodes} -n {ranks}", "--mode weak", "data.samples",
                     "mesh.cells[0]", "exit status"):
            self.assertIn(text, p.stdout)
        # python3 -m kpmap.scale is the same command.
        module = subprocess.run([sys.executable, "-m", "kpmap.scale", "--help"],
                                capture_output=True, text=True, timeout=60,
                                env=dict(os.environ, PYTHONPATH=str(PACKAGE_DIR)))
        self.assertEqual((module.returncode, module.stdout), (0, p.stdout))


if __name__ == "__main__":
    unittest.main()
