#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""kpmap.scale.launch: launcher templates, batch jobs, a run's MPI environment."""
import os
import unittest
from unittest import mock

import support  # noqa: F401  (the package on the path)

from kpmap.scale import UsageError
from kpmap.scale.launch import (ENV_RANKS, ENV_REPETITION, check_template, launcher_command,
                                local_launcher, run_environment, usable_cores)


class Templates(unittest.TestCase):
    def test_launcher(self):
        app = ["app", "deck", "--output", "d"]
        words = check_template("mpiexec -n {ranks}", None)
        self.assertEqual(launcher_command(words, 4, None, app), ["mpiexec", "-n", "4", *app])
        words = check_template("srun -N {nodes} -n {ranks} {app} --extra", 4)
        self.assertEqual(launcher_command(words, 6, 4, app),
                         ["srun", "-N", "2", "-n", "6", *app, "--extra"])
        # ceil(ranks / ranks-per-node): 3 ranks, 1 per node is 3 nodes; 4 at 4 is 1.
        words = check_template("srun -N {nodes} -n {ranks}", 1)
        self.assertEqual(launcher_command(words, 3, 1, ["a"])[:3], ["srun", "-N", "3"])
        self.assertEqual(launcher_command(words, 4, 4, ["a"])[:3], ["srun", "-N", "1"])
        for bad in ("mpiexec -n {rank}", "srun -N {nodes}", "x {app}.sh", "mpiexec '"):
            with self.assertRaises(UsageError, msg=bad):
                check_template(bad, None)


class Where(unittest.TestCase):
    def test_local(self):
        clean = {k: v for k, v in os.environ.items() if not k.endswith(("JOB_ID", "JOBID"))}
        with mock.patch.dict(os.environ, clean, clear=True):
            self.assertTrue(local_launcher(["/usr/bin/mpiexec", "-n", "{ranks}"]))
            self.assertTrue(local_launcher(["{app}"]))
            self.assertFalse(local_launcher(["srun", "-n", "{ranks}"]))
        with mock.patch.dict(os.environ, {"SLURM_JOB_ID": "42"}):
            # mpiexec inside an allocation starts ranks on the job's nodes.
            self.assertFalse(local_launcher(["mpiexec", "-n", "{ranks}"]))

    def test_cores(self):
        self.assertEqual(usable_cores(), len(os.sched_getaffinity(0)))

    def test_environment(self):
        env = run_environment(3, 2, oversubscribed=True)
        self.assertEqual((env[ENV_RANKS], env[ENV_REPETITION]), ("3", "2"))
        with mock.patch.dict(os.environ, {"OMPI_MCA_rmaps_base_oversubscribe": "0"}):
            # A value the user set is kept.
            self.assertNotIn("OMPI_MCA_rmaps_base_oversubscribe", run_environment(3, 1, True))
        with mock.patch.dict(os.environ, clear=True):
            self.assertEqual(run_environment(3, 1, True)["OMPI_MCA_rmaps_base_oversubscribe"],
                             "1")
            self.assertNotIn("OMPI_MCA_rmaps_base_oversubscribe", run_environment(3, 1, False))
            self.assertEqual("OMPI_ALLOW_RUN_AS_ROOT" in run_environment(1, 1, False),
                             os.geteuid() == 0)


if __name__ == "__main__":
    unittest.main()
