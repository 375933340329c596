#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Run a command with a small, nearly full file system at hand.

usage: on_full_disk.py --size SIZE -- command...

Mounts a tmpfs of SIZE (e.g. 200k) on a fresh folder, replaces "{disk}" in
every argument of the command with that folder, runs the command, unmounts,
removes the folder, and exits with the command's exit code. Mounting needs root (CAP_SYS_ADMIN);
where it is refused the test is skipped, loudly, with exit code 77 (the
tests set SKIP_RETURN_CODE 77).
"""
import argparse
import os
import subprocess
import sys
import tempfile

SKIP = 77


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--size", required=True)
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd:
        p.error("no command given")
    disk = tempfile.mkdtemp(prefix="kpmap-full-disk-")
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={a.size}", "tmpfs", disk],
                           capture_output=True, text=True)
    if mount.returncode != 0:
        os.rmdir(disk)
        print(f"SKIPPED: cannot mount a {a.size} tmpfs on {disk} (this test needs root): "
              f"{mount.stderr.strip()}")
        return SKIP
    try:
        print(f"a {a.size} tmpfs on {disk}", flush=True)
        return subprocess.run([arg.replace("{disk}", disk) for arg in cmd]).returncode
    finally:
        # The mount point goes too: a lazy unmount detaches at once, and the
        # folder is empty again (rmdir never removes what a command left).
        if subprocess.run(["umount", "-l", disk]).returncode == 0:
            os.rmdir(disk)


if __name__ == "__main__":
    sys.exit(main())
