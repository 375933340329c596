#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""kpmap.scale.run: a run's failures are reported with the end of its output, and a
run that outlives its timeout is stopped with everything it started."""
import sys
import time
import unittest

from support import Decks

from kpmap.scale import RunFailed
from kpmap.scale.run import resolve_app, run_once, tail


def alive(pid):
    """Running (a zombie nobody has reaped yet counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


class Runs(Decks, unittest.TestCase):
    def python(self, code):
        return [sys.executable, "-c", code]

    def test_success_keeps_output(self):
        run_once(self.python("print('out'); import os; print(os.environ['X'])"), {"X": "42"},
                 self.dir, None)
        self.assertEqual((self.dir / "stdout.txt").read_text(), "out\n42\n")

    def test_exit_code(self):
        code = "import sys\nfor i in range(40): print('line', i, file=sys.stderr)\nsys.exit(3)"
        with self.assertRaises(RunFailed) as e:
            run_once(self.python(code), {}, self.dir, None)
        message = str(e.exception)
        self.assertIn("exited with code 3; the end of its stderr", message)
        self.assertIn("    | line 39", message)
        self.assertNotIn("line 24\n", message)  # the last 15 lines only
        self.assertEqual(message.count("    | "), 15)

    def test_signal_and_silence(self):
        with self.assertRaisesRegex(RunFailed, "was killed by signal 9 and printed nothing"):
            run_once(self.python("import os, signal; os.kill(os.getpid(), signal.SIGKILL)"),
                     {}, self.dir, None)
        with self.assertRaisesRegex(RunFailed, "its stderr is empty, the end of its stdout"):
            run_once(self.python("print('why'); raise SystemExit(1)"), {}, self.dir, None)

    def test_timeout_stops_the_whole_session(self):
        # The child starts a grandchild and both sleep; both must be gone.
        pid_file = self.dir / "grandchild.pid"
        code = ("import subprocess, sys, time\n"
                "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
                f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
                "time.sleep(60)\n")
        t0 = time.monotonic()
        with self.assertRaisesRegex(RunFailed, "still running after 1 s and was stopped"):
            run_once(self.python(code), {}, self.dir, 1.0)
        self.assertLess(time.monotonic() - t0, 30)
        grandchild = int(pid_file.read_text())
        for _ in range(100):
            if not alive(grandchild):
                break
            time.sleep(0.05)
        else:
            self.fail("the launcher's child outlived the timeout")

    def test_resolve_app(self):
        self.assertIsNotNone(resolve_app("python3"))
        self.assertIsNone(resolve_app("/nonexistent/kpmap-train"))
        self.assertIsNone(resolve_app(str(self.train)))  # a file, but not executable

    def test_tail(self):
        self.assertEqual(tail("a\nb\nc\n\n", 2), "    | b\n    | c")


if __name__ == "__main__":
    unittest.main()
