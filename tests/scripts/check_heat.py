#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks of kpmap-heat's outputs with independent tools (json, numpy, h5py).

    check_heat.py compare A/result.json B/result.json ... [--rtol R] [--iterations-within F]
        the field summaries (volume, mass, density, energy, U) agree to R, and
        with F each run's total solver iterations are within F (a fraction) of A's
    check_heat.py checkpoint FILE.h5 SUMMARY.json
        reads the checkpoint with h5py: attributes, u = density x energy,
        and TeaLeaf's summary recomputed from the fields equals result.json;
        its XDMF sidecar names the datasets with the right shapes
    check_heat.py fields DIR
        every field dump DIR/fields/fields_NNNNNN.h5 holds its step, u = density x
        energy, and the conserved energy of DIR/result.json
    check_heat.py restart --launcher T --app APP --deck DECK --ranks N --restart-ranks M
                          --steps S --split K --work DIR [--rtol R] [--set KEY=VALUE ...]
        S steps straight against K steps + a restart (at M ranks) to S: the
        final checkpoints agree bit for bit (R = 0) or to relative R

T is a launcher template such as "mpiexec -n {n}".
"""
import argparse
import os
import xml.etree.ElementTree as ET

import h5py
import numpy as np

from app_checks import fail, load, rel, run

SUMMARY_KEYS = ("volume", "mass", "density", "energy", "u")


def cmd_compare(args):
    ref = load(args.results[0])
    for other in args.results[1:]:
        r = load(other)
        if r["step"] != ref["step"]:
            fail(f"{other} ends at step {r['step']}, {args.results[0]} at {ref['step']}")
        worst = max(rel(r[k], ref[k]) for k in SUMMARY_KEYS)
        print(f"{other} ({r['ranks']} ranks) vs {args.results[0]} ({ref['ranks']} ranks): "
              f"largest relative difference {worst:.3e}")
        if not worst <= args.rtol:
            fail(f"summaries differ by {worst:.3e} > {args.rtol:g}")
        if args.iterations_within is not None:
            mine, theirs = r["total_iterations"], ref["total_iterations"]
            off = abs(mine - theirs) / theirs
            print(f"  {r['solver']}: {mine} iterations, {ref['solver']}: {theirs} ({off:.2%} apart)")
            if not off <= args.iterations_within:
                fail(f"{mine} iterations against {theirs}: {off:.2%} apart, more than "
                     f"{args.iterations_within:.0%}")
    print("OK: the same summary" + (" and iteration counts" if args.iterations_within is not None
                                     else "") + " at every rank count")


def cmd_checkpoint(args):
    s = load(args.summary)
    with h5py.File(args.file, "r") as f:
        a = f.attrs
        app = a["app"].decode() if isinstance(a["app"], bytes) else a["app"]
        if app != "kpmap-heat":
            fail(f"app attribute is {app!r}")
        if int(a["step"]) != s["step"]:
            fail(f"checkpoint step {int(a['step'])}, summary step {s['step']}")
        rho = f["fields/density"][...]
        e = f["fields/energy"][...]
        u = f["fields/u"][...]
    shape = tuple(reversed(s["cells"]))
    if rho.shape != shape or e.shape != shape or u.shape != shape:
        fail(f"dataset shapes {rho.shape}, {e.shape}, {u.shape}; expected {shape}")
    # energy = u / density after every step, so u = density x energy to rounding.
    if not np.allclose(u, rho * e, rtol=1e-14, atol=0):
        fail("u differs from density x energy")
    # TeaLeaf's summary from the fields, with the cell volume from the deck.
    deck = load_deck_cells(os.path.join(os.path.dirname(args.file), "deck.toml"))
    vol = np.prod([(hi - lo) / n for lo, hi, n in zip(deck["lower"], deck["upper"], s["cells"])])
    mass = vol * rho
    mine = {"volume": vol * rho.size, "mass": mass.sum(), "energy": (mass * e).sum(),
            "u": (mass * u).sum()}
    mine["density"] = mine["mass"] / mine["volume"]
    for k in SUMMARY_KEYS:
        if not rel(mine[k], s[k]) <= 1e-12:
            fail(f"{k}: {mine[k]!r} from the fields, {s[k]!r} in result.json")
    xmf = args.file[:-3] + ".xmf"
    root = ET.parse(xmf).getroot()
    items = {d.text.strip().split(":")[1]: d.get("Dimensions")
             for d in root.iter("DataItem") if d.get("Format") == "HDF"}
    want = " ".join(str(n) for n in shape)
    for name in ("/fields/density", "/fields/energy", "/fields/u"):
        if items.get(name) != want:
            fail(f"XDMF sidecar: {name} has dimensions {items.get(name)}, expected {want}")
    print(f"OK: {args.file} holds step {s['step']}; its fields give result.json's summary "
          f"(h5py {h5py.__version__})")


def cmd_fields(args):
    s = load(os.path.join(args.dir, "result.json"))
    deck = load_deck_cells(os.path.join(args.dir, "deck.toml"))
    vol = np.prod([(hi - lo) / n for lo, hi, n in zip(deck["lower"], deck["upper"], s["cells"])])
    names = sorted(f for f in os.listdir(os.path.join(args.dir, "fields")) if f.endswith(".h5"))
    if not names:
        fail(f"no field dumps in {args.dir}/fields")
    for name in names:
        step = int(name[len("fields_"):-3])
        with h5py.File(os.path.join(args.dir, "fields", name), "r") as f:
            if int(f.attrs["step"]) != step:
                fail(f"{name} holds step {int(f.attrs['step'])}")
            rho, e, u = (f[k][...] for k in ("fields/density", "fields/energy", "fields/u"))
        if not np.allclose(u, rho * e, rtol=1e-14, atol=0):
            fail(f"{name}: u differs from density x energy")
        energy = (vol * rho * e).sum()
        if not rel(energy, s["energy"]) <= 1e-12:
            fail(f"{name}: energy {energy!r}, {s['energy']!r} at the end: not conserved")
        if not os.path.exists(os.path.join(args.dir, "fields", name[:-3] + ".xmf")):
            fail(f"{name} has no XDMF sidecar")
    print(f"OK: {len(names)} field dumps, each with u = density x energy and the same energy")


def load_deck_cells(path):
    """The mesh of a resolved kpmap-heat deck (the [mesh] table of deck.toml)."""
    try:
        import tomllib  # Python 3.11
    except ImportError:  # pragma: no cover
        import tomli as tomllib
    with open(path, "rb") as f:
        d = tomllib.load(f)
    m = d["mesh"]
    lower = m["lower"] if m["lower"] else [0.0] * len(m["cells"])
    return {"lower": lower, "upper": m["upper"]}


def cmd_restart(args):
    w = args.work
    os.makedirs(w, exist_ok=True)
    base = [args.app, args.deck, "--set", "output.checkpoint_every=0",
            "--set", "output.progress_every=0"]
    for kv in args.set:
        base += ["--set", kv]
    straight = os.path.join(w, "straight")
    first = os.path.join(w, "first")
    second = os.path.join(w, "second")
    run(args.launcher, args.ranks,
        base + ["--set", f"time.end_step={args.steps}", "--output", straight])
    run(args.launcher, args.ranks,
        base + ["--set", f"time.end_step={args.split}", "--output", first])
    ck = os.path.join(first, f"checkpoint_{args.split:06d}.h5")
    run(args.launcher, args.restart_ranks,
        base + ["--set", f"time.end_step={args.steps}", "--output", second, "--restart", ck])
    name = f"checkpoint_{args.steps:06d}.h5"
    worst = 0.0
    with h5py.File(os.path.join(straight, name)) as a, h5py.File(os.path.join(second, name)) as b:
        for ds in ("fields/energy", "fields/u", "fields/density"):
            x, y = a[ds][...], b[ds][...]
            if args.rtol == 0:
                if not np.array_equal(x, y):
                    fail(f"{ds}: {np.count_nonzero(x != y)} of {x.size} values differ")
            else:
                worst = max(worst, float(np.max(np.abs(x - y) / np.maximum(np.abs(y), 1e-300))))
        if a.attrs["time"] != b.attrs["time"]:
            fail(f"time {a.attrs['time']!r} straight, {b.attrs['time']!r} after the restart")
    if worst > args.rtol:
        fail(f"fields differ by {worst:.3e} > {args.rtol:g}")
    s1, s2 = load(os.path.join(straight, "result.json")), load(os.path.join(second, "result.json"))
    if args.rtol == 0:
        if s1["u"] != s2["u"] or s1["energy"] != s2["energy"]:
            fail(f"summary U {s1['u']!r} straight, {s2['u']!r} after the restart")
        f1 = load(os.path.join(first, "result.json"))
        if s1["total_iterations"] != f1["total_iterations"] + s2["total_iterations"]:
            fail("the restarted run took other iterations than the straight one")
    print(f"OK: {args.split} steps + restart ({args.restart_ranks} ranks) to {args.steps} = "
          f"{args.steps} steps straight ({args.ranks} ranks), "
          + ("bit for bit" if args.rtol == 0 else f"largest relative difference {worst:.3e}"))


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compare")
    c.add_argument("results", nargs="+")
    c.add_argument("--rtol", type=float, default=1e-12)
    c.add_argument("--iterations-within", type=float, default=None)
    k = sub.add_parser("checkpoint")
    k.add_argument("file")
    k.add_argument("summary")
    fd = sub.add_parser("fields")
    fd.add_argument("dir")
    r = sub.add_parser("restart")
    for opt in ("--launcher", "--app", "--deck", "--work"):
        r.add_argument(opt, required=True)
    for opt in ("--ranks", "--restart-ranks", "--steps", "--split"):
        r.add_argument(opt, type=int, required=True)
    r.add_argument("--rtol", type=float, default=0.0)
    r.add_argument("--set", action="append", default=[], help="extra deck overrides")
    a = p.parse_args()
    {"compare": cmd_compare, "checkpoint": cmd_checkpoint, "fields": cmd_fields,
     "restart": cmd_restart}[a.cmd](a)


if __name__ == "__main__":
    main()
