# SPDX-License-Identifier: BSD-3-Clause
"""kpmap's Python side: the plots a run leaves, the scaling harness and the launcher.

    kpmap.plot     loss.png, field.png and the scaling study's plots (matplotlib)
    kpmap.scale    kpmap-scale: strong and weak scaling studies (docs/scaling.md)
    kpmap.launcher kpmap-run: the ranks on a cluster's hosts, relaunched on those left
                   when one is lost (docs/cluster.md)

Standard library only, plus matplotlib (and numpy, h5py for field.png) for pictures.
"""

# The phases every application times (the "timing" object of result.json:
# <phase>_s, with wall_s), in the order tables and plots show them.
PHASES = ("compute_s", "halo_s", "collectives_s", "io_s", "checkpoint_s")
PHASE_LABELS = {"compute_s": "compute", "halo_s": "halo", "collectives_s": "collectives",
                "io_s": "I/O", "checkpoint_s": "checkpoint"}
