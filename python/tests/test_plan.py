#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""kpmap.scale.plan: rank lists, scale keys, decks and the order of the runs."""
import unittest
from pathlib import Path

from support import Decks

from kpmap.scale import UsageError
from kpmap.scale.launch import check_template
from kpmap.scale.plan import (KINDS, Point, ScaleKey, Study, detect_kind, is_tea_deck,
                              parse_ranks, parse_scale_key, parse_set, scaled, schedule,
                              tea_deck_value, tea_deck_with, toml_text)


class Arguments(unittest.TestCase):
    def test_ranks(self):
        self.assertEqual(parse_ranks("4,1, 2"), [1, 2, 4])
        for bad in ("1,,2", "0", "1,x", "1,1", "-1", ""):
            with self.assertRaises(UsageError, msg=bad):
                parse_ranks(bad)

    def test_scale_key(self):
        k = parse_scale_key("mesh.cells[1]")
        self.assertEqual((k.key, k.index, str(k)), ("mesh.cells", 1, "mesh.cells[1]"))
        self.assertIsNone(parse_scale_key("data.samples").index)
        for bad in ("mesh.cells[", "a b", "x[-1]"):
            with self.assertRaises(UsageError):
                parse_scale_key(bad)

    def test_set(self):
        self.assertEqual(parse_set(" train.epochs = 10 "), ("train.epochs", "10"))
        self.assertEqual(parse_set("mesh.cells=[2,3]"), ("mesh.cells", "[2,3]"))
        for bad in ("novalue", "=3", "key="):
            with self.assertRaises(UsageError, msg=bad):
                parse_set(bad)

    def test_kind(self):
        self.assertEqual(detect_kind("/opt/kpmap/bin/kpmap-train", None).name, "train")
        self.assertEqual(detect_kind("kpmap-heat", None).result, "result.json")
        self.assertEqual(detect_kind("kpmap-bench-collectives", None).name, "bench")
        self.assertEqual(detect_kind("a.out", "heat").name, "heat")
        with self.assertRaises(UsageError):
            detect_kind("a.out", None)


class DeckValues(unittest.TestCase):
    def test_scaled(self):
        key = parse_scale_key
        self.assertEqual(scaled(100, key("n"), 4), 400)
        self.assertEqual(scaled([10, 20, 30], key("c[0]"), 3), [30, 20, 30])
        self.assertEqual(toml_text([30, 20]), "[30,20]")
        for base, k in ((1.5, "n"), ([1, 2], "n"), ([1, 2], "n[2]"), (["a"], "n[0]"),
                        (True, "n")):
            with self.assertRaises(UsageError):
                scaled(base, key(k), 2)

    def test_tea_deck(self):
        for line in ("x_cells=10", "x_cells 10", "  X_CELLS = 10  ! comment"):
            text = f"*tea\n{line}\ny_cells=5\n*endtea\n"
            self.assertEqual(tea_deck_value(text, "x_cells", Path("d")), 10)
            changed = tea_deck_with(text, "x_cells", 40)
            self.assertEqual(tea_deck_value(changed, "x_cells", Path("d")), 40)
            self.assertEqual(changed.replace("40", "10"), text)
        with self.assertRaises(UsageError):
            tea_deck_value("*tea\ny_cells=5\n", "x_cells", Path("d"))


class Studies(Decks, unittest.TestCase):
    def make(self, deck, keys, sets=(), mode="weak"):
        return Study(app=Path("/bin/true"), kind=KINDS["heat"], deck=deck, mode=mode,
                     ranks=[1, 2, 3], repeat=2, out=self.out,
                     launcher=check_template("mpiexec -n {ranks}", None),
                     launcher_text="mpiexec -n {ranks}", ranks_per_node=None,
                     sets=list(sets), extra_args=[], scale_keys=keys,
                     tea=is_tea_deck(deck), result_name="result.json", timeout=None)

    def test_is_tea_deck(self):
        self.assertTrue(is_tea_deck(self.tea))
        self.assertFalse(is_tea_deck(self.heat))
        self.assertFalse(is_tea_deck(self.dir / "missing.in"))

    def test_scaled_values(self):
        # Two elements of one list scale together; the last --set wins over the deck.
        s = self.make(self.heat, [ScaleKey("mesh.cells", 0), ScaleKey("mesh.cells", 1)],
                      sets=[("mesh.cells", "[1, 1]"), ("mesh.cells", "[7, 5]")])
        self.assertEqual(s.scaled_values(3), {"mesh.cells": [21, 15]})
        s = self.make(self.heat, [ScaleKey("mesh.cells", 1)])
        self.assertEqual(s.scaled_values(2), {"mesh.cells": [300, 400]})
        s = self.make(self.tea, [ScaleKey("x_cells")])
        self.assertEqual(s.scaled_values(4), {"x_cells": 400})

    def test_commands(self):
        s = self.make(self.heat, [ScaleKey("mesh.cells", 0)], sets=[("time.end_step", "5")])
        p = Point(2, scaled=s.scaled_values(2))
        self.assertEqual(s.app_command(p, self.out / "r"),
                         ["/bin/true", str(self.heat), "--set", "time.end_step=5",
                          "--set", "mesh.cells=[600,200]", "--output", str(self.out / "r")])
        # A TeaLeaf deck is not --set: each point reads its scaled copy.
        s = self.make(self.tea, [ScaleKey("x_cells")])
        p = Point(4, scaled=s.scaled_values(4))
        self.assertEqual(s.app_command(p, self.out / "r")[1],
                         str(self.out / "ranks-4" / "tea.in"))

    def test_schedule(self):
        a, b = Point(1), Point(2)
        self.assertEqual([(p.ranks, r) for p, r in schedule([a, b], 2, False)],
                         [(1, 1), (1, 2), (2, 1), (2, 2)])
        self.assertEqual([(p.ranks, r) for p, r in schedule([a, b], 2, True)],
                         [(1, 1), (2, 1), (1, 2), (2, 2)])


if __name__ == "__main__":
    unittest.main()
