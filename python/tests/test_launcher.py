#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""kpmap.launcher (kpmap-run): its hosts, its launch line, the restart it adds,
what it reads in a job's lines, and its refusals; without MPI."""
import os
import subprocess
import sys
import time
import unittest
from unittest import mock

import support  # noqa: F401  (the package on the path)

from kpmap import launcher
from kpmap.launcher import Host, UsageError


class Hosts(unittest.TestCase):
    def test_host_spec(self):
        self.assertEqual(launcher.parse_host_spec("nodeA:2,nodeB"),
                         [Host("nodeA", 2), Host("nodeB", 1)])
        for bad in ("nodeA:x", ":2", "nodeA:0", "nodeA,,nodeB"):
            with self.assertRaises(UsageError, msg=bad):
                launcher.parse_host_spec(bad)

    def test_hostfile(self):
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"kpmap-run-hosts-{os.getpid()}")
        try:
            with open(path, "w") as f:
                f.write("# the cluster\nnodeA slots=4 max_slots=4\n\nnodeB\n")
            self.assertEqual(launcher.read_hostfile(path), [Host("nodeA", 4), Host("nodeB", 1)])
            with open(path, "w") as f:
                f.write("nodeA slots=four\n")
            with self.assertRaisesRegex(UsageError, "line 1: 'slots=four': slots takes"):
                launcher.read_hostfile(path)
        finally:
            os.remove(path)
        with self.assertRaisesRegex(UsageError, "cannot be read"):
            launcher.read_hostfile("/nonexistent/hosts")


class Commands(unittest.TestCase):
    def test_mpirun_line(self):
        cmd = launcher.launch_command([Host("a", 2), Host("b", 2)], 4, ["app", "deck"], False, [])
        self.assertEqual(cmd[:3], ["mpirun", "-n", "4"])
        self.assertIn("oob_tcp_keepalive_time", cmd)
        self.assertEqual(cmd[-4:], ["--host", "a:2,b:2", "app", "deck"])
        self.assertNotIn("--oversubscribe", cmd)
        cmd = launcher.launch_command(None, 4, ["app"], True, ["nodeB"])
        self.assertEqual(cmd, ["srun", "-n", "4", "--kill-on-bad-exit=1", "--exclude=nodeB", "app"])

    def test_restart_replaced(self):
        self.assertEqual(launcher.with_restart(["app", "d", "--restart", "old.h5", "-x"], "new.h5"),
                         ["app", "d", "-x", "--restart", "new.h5"])
        self.assertEqual(launcher.with_restart(["app", "--restart=old.h5"], "n.h5"),
                         ["app", "--restart", "n.h5"])

    def test_job_lines(self):
        text = ("kpmap: rank 0: host nodeB (ranks 2-3) stopped answering in step 9: no word ...; "
                "the last good checkpoint is out/checkpoint_000005.h5 (continue with --restart "
                "out/checkpoint_000005.h5)\n"
                "kpmap: rank 0: rank 2 on host nodeC (rank 2) ended without a word in step 3: ...\n")
        self.assertEqual(sorted({a or b for a, b in launcher.LOST_HOST.findall(text)}),
                         ["nodeB", "nodeC"])
        self.assertEqual(launcher.CONTINUE.findall(text), ["out/checkpoint_000005.h5"])
        self.assertIsNotNone(launcher.JOB_ENDED.search(text))
        # A rank's own error names no lost host: nothing to relaunch on fewer hosts.
        self.assertEqual(launcher.LOST_HOST.findall("kpmap: rank 3: injected error at step 5\n"),
                         [])


class CommandLine(unittest.TestCase):
    def run_kpmap_run(self, *args, env=None):
        script = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "kpmap-run")
        return subprocess.run([sys.executable, script, *args], capture_output=True, text=True,
                              timeout=60, env=env)

    def test_refusals(self):
        p = self.run_kpmap_run("--host", "localhost:1", "-n", "2", "--", "true")
        self.assertEqual(p.returncode, 2)
        self.assertIn("kpmap-run: error: 2 ranks but --host localhost:1 holds 1 slots", p.stderr)
        p = self.run_kpmap_run("--host", "no-such-host.invalid:2", "--", "true")
        self.assertEqual(p.returncode, 2)
        self.assertIn("host 'no-such-host.invalid' is not known here", p.stderr)
        p = self.run_kpmap_run()
        self.assertEqual(p.returncode, 2)
        self.assertIn("no program given", p.stderr)

    def test_program_exit_code_passes_through(self):
        # A "launcher" that is this Python: kpmap-run passes its exit code on.
        env = dict(os.environ)
        env.pop("SLURM_JOB_ID", None)
        env.pop("KPMAP_SIM_HOSTFILE", None)
        with mock.patch.object(launcher, "launch_command",
                               lambda hosts, ranks, program, slurm, exclude: program):
            code = launcher.main(["--", sys.executable, "-c", "import sys; sys.exit(3)"])
        self.assertEqual(code, 3)

    def test_launcher_that_outlives_the_job_is_ended(self):
        # A job whose rank said it failed, and a launcher that then waits on
        # (for a daemon that never answers): ended --grace seconds later.
        program = [sys.executable, "-c",
                   "import sys, time; print('kpmap: rank 1: injected error at step 3', "
                   "flush=True); time.sleep(120)"]
        with mock.patch.object(launcher, "launch_command",
                               lambda hosts, ranks, prog, slurm, exclude: prog):
            started = time.monotonic()
            code = launcher.main(["--grace", "1", "--"] + program)
        self.assertEqual(code, 1)
        self.assertLess(time.monotonic() - started, 30)


if __name__ == "__main__":
    unittest.main()
