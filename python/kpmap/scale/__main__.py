# SPDX-License-Identifier: BSD-3-Clause
"""python3 -m kpmap.scale: the same as the kpmap-scale command."""
import sys

from kpmap.scale.cli import entry

sys.exit(entry(sys.argv[1:]))
