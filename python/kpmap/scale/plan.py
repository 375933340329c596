# SPDX-License-Identifier: BSD-3-Clause
"""Planning a study: its rank counts, the deck, and the keys weak scaling multiplies.

A study is a list of points (one per rank count), each run --repeat times. In
weak mode every point gets its own deck values: the scale keys' per-rank values
multiplied by the point's rank count (a --set for a TOML deck, a scaled copy of
a TeaLeaf deck).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from kpmap.scale import UsageError
from kpmap.scale.launch import Hosts, usable_cores


@dataclass
class Sample:
    """The timings of one run, in seconds (collect reads them, a Point keeps them)."""

    wall_s: float
    phases: Dict[str, Optional[float]]
    directory: str
    nodes: Optional[int] = None  # the hosts the ranks ran on, as the program reports them


@dataclass(frozen=True)
class Kind:
    name: str
    result: str  # file the program writes into its output folder
    scale_key: Optional[str]  # default weak-scaling key of a TOML deck
    tea_scale_key: Optional[str]  # ... of a TeaLeaf deck
    needs_deck: bool


KINDS: Dict[str, Kind] = {
    "train": Kind("train", "result.json", "data.samples", None, True),
    "heat": Kind("heat", "result.json", "mesh.cells[0]", "x_cells", True),
    "bench": Kind("bench", "benchmark.json", None, None, False),
}


@dataclass
class ScaleKey:
    key: str
    index: Optional[int] = None

    def __str__(self) -> str:
        return self.key if self.index is None else f"{self.key}[{self.index}]"


@dataclass
class Point:
    ranks: int
    scaled: Dict[str, Any] = field(default_factory=dict)  # deck key -> value, weak mode
    oversubscribed: bool = False
    samples: List[Sample] = field(default_factory=list)
    failure: Optional[str] = None
    commands: List[List[str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.failure is None and bool(self.samples)


# ---- arguments ----------------------------------------------------------------------


def parse_ranks(text: str) -> List[int]:
    """'1,2,4' -> [1, 2, 4] (sorted); anything else is a UsageError."""
    ranks = []
    for item in text.split(","):
        item = item.strip()
        if not re.fullmatch(r"[0-9]+", item) or int(item) < 1:
            raise UsageError(f"--ranks {text!r}: {item!r} is not a positive integer "
                             "(give a comma-separated list such as 1,2,4)")
        ranks.append(int(item))
    if len(set(ranks)) != len(ranks):
        raise UsageError(f"--ranks {text!r}: a rank count appears twice")
    return sorted(ranks)


def parse_scale_key(text: str) -> ScaleKey:
    m = re.fullmatch(r"([A-Za-z0-9_.-]+)(?:\[([0-9]+)\])?", text.strip())
    if not m:
        raise UsageError(f"--scale-key {text!r}: expected KEY or KEY[INDEX], "
                         "e.g. data.samples or mesh.cells[0]")
    return ScaleKey(m.group(1), None if m.group(2) is None else int(m.group(2)))


def parse_set(text: str) -> Tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip() or not value.strip():
        raise UsageError(f"--set {text!r}: expected KEY=VALUE, e.g. --set train.epochs=10")
    return key.strip(), value.strip()


def detect_kind(app: str, explicit: Optional[str]) -> Kind:
    if explicit:
        return KINDS[explicit]
    name = Path(app).name
    if "bench" in name:
        return KINDS["bench"]
    for kind in ("train", "heat"):
        if kind in name:
            return KINDS[kind]
    raise UsageError(f"cannot tell from its name what kind of program {name!r} is; "
                     "pass --kind train, heat or bench")


# ---- decks --------------------------------------------------------------------------


def is_tea_deck(path: Path) -> bool:
    """A TeaLeaf deck's first meaningful line is *tea."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.split("!", 1)[0].strip()
                if line:
                    return line.lower() == "*tea"
    except OSError:
        return False
    return False


def toml_literal(text: str, what: str) -> Any:
    """Parses one TOML value as written on a --set."""
    tomllib = import_tomllib(what)
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        # --set also takes bare strings; a string cannot be scaled anyway.
        return text


def import_tomllib(what: str):
    try:
        import tomllib  # Python 3.11
    except ImportError:
        raise UsageError(f"reading {what} needs Python 3.11 or later (tomllib); give the "
                         "1-rank value of the scale key with --set KEY=VALUE") from None
    return tomllib


def toml_deck_value(deck: Path, key: str) -> Any:
    tomllib = import_tomllib(f"the deck {deck}")
    try:
        with open(deck, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise UsageError(f"cannot read the deck {deck}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{deck}: not a valid TOML deck: {e}") from None
    node: Any = data
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise UsageError(f"{deck} does not set {key}, which weak scaling multiplies by "
                             "the rank count: set it in the deck or with --set, or choose "
                             "another key with --scale-key")
        node = node[part]
    return node


TEA_LINE = r"(?im)^(\s*{key}(?:\s*=\s*|\s+))([0-9]+)\b"


def tea_deck_value(text: str, key: str, deck: Path) -> int:
    m = re.search(TEA_LINE.format(key=re.escape(key)), text)
    if not m:
        raise UsageError(f"{deck} does not set {key} (an integer), which weak scaling "
                         "multiplies by the rank count; choose another with --scale-key")
    return int(m.group(2))


def tea_deck_with(text: str, key: str, value: int) -> str:
    return re.sub(TEA_LINE.format(key=re.escape(key)), lambda m: f"{m.group(1)}{value}", text,
                  count=1)


def scaled(base: Any, key: ScaleKey, factor: int) -> Any:
    """base with the scaled element multiplied by factor; integers only."""
    if key.index is None:
        if isinstance(base, bool) or not isinstance(base, int):
            raise UsageError(f"weak scaling multiplies {key} by the rank count, but its value "
                             f"{base!r} is not an integer" +
                             (" (a list: scale one element, e.g. "
                              f"--scale-key {key.key}[0])" if isinstance(base, list) else ""))
        return base * factor
    if not isinstance(base, list) or key.index >= len(base):
        raise UsageError(f"--scale-key {key}: {key.key} = {base!r} has no element {key.index}")
    element = base[key.index]
    if isinstance(element, bool) or not isinstance(element, int):
        raise UsageError(f"weak scaling multiplies {key} by the rank count, but it is "
                         f"{element!r}, not an integer")
    out = list(base)
    out[key.index] = element * factor
    return out


def toml_text(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ",".join(toml_text(v) for v in value) + "]"
    return str(value)
# ---- the study ----------------------------------------------------------------------


@dataclass
class Study:
    app: Path
    kind: Kind
    deck: Optional[Path]
    mode: str
    ranks: List[int]
    repeat: int
    out: Path
    launcher: List[str]
    launcher_text: str
    ranks_per_node: Optional[int]
    sets: List[Tuple[str, str]]
    extra_args: List[str]
    scale_keys: List[ScaleKey]
    tea: bool
    result_name: str
    timeout: Optional[float]
    points: List[Point] = field(default_factory=list)
    started: str = ""

    def scale_base(self, key: str) -> Any:
        """The per-rank value of a key that weak scaling multiplies."""
        assert self.deck is not None
        if self.tea:
            return tea_deck_value(self.deck.read_text(errors="replace"), key, self.deck)
        for k, v in reversed(self.sets):
            if k == key:
                return toml_literal(v, f"--set {k}={v}")
        return toml_deck_value(self.deck, key)

    def scaled_values(self, ranks: int) -> Dict[str, Any]:
        """Each scaled deck key's value at a rank count (weak mode)."""
        values: Dict[str, Any] = {}
        for sk in self.scale_keys:
            if sk.key not in values:
                values[sk.key] = self.scale_base(sk.key)
            values[sk.key] = scaled(values[sk.key], sk, ranks)
        return values

    def point_dir(self, ranks: int) -> Path:
        return self.out / f"ranks-{ranks}"

    def app_command(self, point: Point, run_dir: Path) -> List[str]:
        cmd = [str(self.app)]
        if self.kind.name == "bench":
            cmd += self.extra_args
            cmd += [f"--benchmark_out={run_dir / self.result_name}",
                    "--benchmark_out_format=json"]
            return cmd
        assert self.deck is not None
        deck = self.deck
        if self.mode == "weak" and self.tea:
            deck = self.point_dir(point.ranks) / self.deck.name
        cmd.append(str(deck))
        passed = {} if self.tea else point.scaled
        for k, v in self.sets:
            if k not in passed:
                cmd += ["--set", f"{k}={v}"]
        for k, v in passed.items():
            cmd += ["--set", f"{k}={toml_text(v)}"]
        cmd += ["--output", str(run_dir)]
        return cmd + self.extra_args


def started(study: Study) -> List[Point]:
    """The points with a result so far: measured (some repetitions) or failed."""
    return [p for p in study.points if p.samples or p.failure]


def prepare_point(study: Study, ranks: int, local: bool, hosts: Optional[Hosts] = None) -> Point:
    p = Point(ranks)
    p.oversubscribed = local and ranks > usable_cores()
    # On named hosts, more ranks than slots would share cores there: a time that
    # measures the sharing, not the code. The point is refused (out of the fit
    # and the plots), saying so.
    if hosts is not None and hosts.slots is not None and ranks > hosts.slots:
        p.failure = (f"ranks {ranks}: the launcher's {hosts.source} holds {hosts.slots} slot"
                     f"{'s' if hosts.slots != 1 else ''}, fewer than the ranks: they would be "
                     "oversubscribed; not run (give more hosts or slots, or fewer ranks)")
    if study.scale_keys:
        p.scaled = study.scaled_values(ranks)
    return p


def write_point_deck(study: Study, point: Point, dry_run: bool, say) -> None:
    """Weak scaling of a TeaLeaf deck: the scaled copy the point's runs read."""
    pdir = study.point_dir(point.ranks)
    if study.tea and point.scaled:
        assert study.deck is not None
        text = study.deck.read_text(errors="replace")
        for k, v in point.scaled.items():
            text = tea_deck_with(text, k, v)
        if dry_run:
            say(f"# {pdir / study.deck.name}: a copy of {study.deck} with " +
                ", ".join(f"{k} = {v}" for k, v in point.scaled.items()))
        else:
            pdir.mkdir(parents=True, exist_ok=True)
            (pdir / study.deck.name).write_text(text)


def schedule(points: List[Point], repeat: int, interleave: bool) -> List[Tuple[Point, int]]:
    """The runs in order: point by point, or round by round with --interleave."""
    if interleave:
        return [(p, r) for r in range(1, repeat + 1) for p in points]
    return [(p, r) for p in points for r in range(1, repeat + 1)]

