#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Run one unittest module for ctest, with skips made loud.

usage: run_unittest.py MODULE

Exit code 0 when every test ran and passed, 1 when any failed, and 77 (the
tests' SKIP_RETURN_CODE, which ctest reports as skipped) when all passed but
some were skipped (e.g. matplotlib missing): python -m unittest exits 0 then,
and a skip would pass unseen.
"""
import os
import sys
import unittest


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    sys.path.insert(0, os.getcwd())  # as python -m unittest: modules from the working folder
    suite = unittest.defaultTestLoader.loadTestsFromName(sys.argv[1])
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    if not result.wasSuccessful():
        return 1
    if result.skipped:
        for test, reason in result.skipped:
            print(f"SKIPPED: {test.id()}: {reason}")
        return 77
    return 0


if __name__ == "__main__":
    sys.exit(main())
