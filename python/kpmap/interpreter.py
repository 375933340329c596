# SPDX-License-Identifier: BSD-3-Clause
"""The Python that kpmap's commands draw with.

kpmap-plot and kpmap-scale start under whichever `python3` comes first on the PATH (or the
one their first line names, written at install: the one CMake found with matplotlib, numpy
and h5py). On a cluster that is often a module's, a conda or a pyenv Python without
matplotlib, while the system's has it. So a command that finds no plotting libraries
in its own interpreter runs itself again under the first that has them, of:
$KPMAP_PYTHON, every python3 and python3.N on the PATH, /usr/bin/python3 and
/usr/local/bin/python3. Where none has them, it goes on and says how to install them.

    from kpmap.interpreter import use_plotting_python
    use_plotting_python([__file__] + sys.argv[1:])   # may not return (os.execve)
"""
import glob
import importlib.util
import os
import subprocess
import sys

PLOTTING = ("matplotlib", "numpy", "h5py")
# Set in the environment of the command run again, so that it searches once.
SEARCHED = "KPMAP_PYTHON_SEARCHED"


def has_plotting():
    """Whether this interpreter can import matplotlib, numpy and h5py."""
    try:
        return all(importlib.util.find_spec(m) is not None for m in PLOTTING)
    except (ImportError, ValueError):
        return False


def candidates():
    """The interpreters to try, in order, each once (by resolved path and name)."""
    names = []
    if os.environ.get("KPMAP_PYTHON"):
        names.append(os.environ["KPMAP_PYTHON"])
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if folder:
            names.append(os.path.join(folder, "python3"))
            names.extend(sorted(glob.glob(os.path.join(folder, "python3.[0-9]*")), reverse=True))
    names += ["/usr/bin/python3", "/usr/local/bin/python3"]
    seen, out = set(), []
    for n in names:
        if n.endswith("-config") or not (os.path.isfile(n) and os.access(n, os.X_OK)):
            continue
        key = (os.path.realpath(n), os.path.basename(n))
        if key not in seen:
            seen.add(key)
            out.append(n)
    return out


def plotting_python():
    """The first candidate that imports matplotlib, numpy and h5py, or None."""
    probe = "import " + ", ".join(PLOTTING)
    for python in candidates():
        try:
            ok = subprocess.run([python, "-c", probe], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, timeout=60).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        if ok:
            return python
    return None


def use_plotting_python(command):
    """Runs this program again, as `python COMMAND...` (a script and its
    arguments, or -m and a module's), under a Python that has the plotting
    libraries where this one lacks them and another has them; else returns.
    The package's folder goes first on PYTHONPATH, wherever it was found."""
    if has_plotting() or os.environ.get(SEARCHED):
        return
    python = plotting_python()
    if python is None:
        os.environ[SEARCHED] = "none"
        return
    package_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = dict(os.environ, **{SEARCHED: python,
                              "PYTHONPATH": os.pathsep.join([package_dir] + path)})
    sys.stdout.flush()
    os.execve(python, [python] + list(command), env)


def how_to_install():
    """What the notice of a command without plotting libraries says to do."""
    searched = os.environ.get(SEARCHED) == "none"
    return (f"matplotlib, numpy or h5py is not installed for {sys.executable}"
            + (", nor for any python3 on the PATH" if searched else "")
            + f"; install them ({sys.executable} -m pip install matplotlib numpy h5py, or "
            "Debian's python3-matplotlib python3-h5py), or set KPMAP_PYTHON to a Python "
            "that has them")
