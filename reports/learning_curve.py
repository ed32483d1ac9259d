"""The learning curve of a campaign: one row per generation, read from MLflow.

``curve_from_mlflow(tracking_uri, campaign)`` reads the campaign's run
through ``draw.load_campaign`` (the reports' own reader) and keeps, per
generation:

- ``generation`` and ``wall_min`` (the campaign's accumulated wall time,
  ``time/wall_s``, at the end of the generation, in minutes);
- optimizer steps, self-play games and positions, the material-assist weight;
- the self-play termination histogram (``selfplay/term_<name>``, games) and
  the non-decisive rate;
- training losses (total and per head);
- on evaluated generations, the ladder scores, material balances and ratings
  per mode and rung (``score/<mode>/<rung>``, ``material/...``, ``elo/...``);
- conversion metrics and joint ladder ratings when the campaign recorded them
  (``selfplay/conversion*``, ``conversion/<mode>/<rung>*``, ``elo_joint/*``):
  read if present, never filled in;
- progressive sizing when the recipe has stages (``progressive/stage``,
  ``candidate/*``, ``promotion/*``).

Columns are the MLflow metric keys themselves (``campaign.metrics`` owns the
names), so writer, curve and figure agree. ``curve.csv`` holds the rows;
an empty cell is a metric not recorded at that generation.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from chesszero.campaign import metrics as M

GENERATION = "generation"
WALL_MIN = "wall_min"

FIXED = (
    M.TRAIN_STEP,
    M.SELFPLAY_GAMES,
    M.SELFPLAY_POSITIONS,
    M.MATERIAL_ASSIST,
    *(M.termination_key(t) for t in M.TERMINATIONS),
    M.NON_DECISIVE,
    M.TRAIN_LOSS,
    *(M.loss_key(h) for h in M.TRAIN_LOSS_HEADS),
    M.TRAIN_LR,
)
"""Metrics kept for every generation, in column order."""

PREFIXES = ("score/", "material/", "elo/", "elo_joint/", "selfplay/conversion", "selfplay/odds_",
            "selfplay/random_opponent_", "conversion/", "progressive/", "candidate/", "promotion/", "publish/")
"""Metric families kept whenever present (evaluations, conversion, material-odds
games and games against a random mover, progressive sizing: the active stage, the candidate's training and
promotion matches; publication: the gate's figures and the fine-tuning steps run)."""

SELFPLAY_CONVERSION = "selfplay/conversion"
"""Self-play conversion rate (issue 10), when the campaign records it. This
and ``conversion_key`` spell the campaign's metric names here because older
``campaign.metrics`` versions lack them; the two must stay equal."""


def conversion_key(mode: str, rung: str) -> str:
    """Ladder conversion rate per mode and rung, when the campaign records it."""
    return f"conversion/{mode}/{rung}"


@dataclass(frozen=True)
class Curve:
    """Rows of per-generation values keyed by column; NaN where not recorded."""

    columns: tuple[str, ...]
    rows: tuple[dict[str, float], ...]

    def __post_init__(self) -> None:
        if self.columns[:2] != (GENERATION, WALL_MIN):
            raise ValueError(f"a curve starts with {GENERATION!r}, {WALL_MIN!r}; got {self.columns[:2]}")
        gens = [row[GENERATION] for row in self.rows]
        if gens != sorted(set(gens)):
            raise ValueError(f"generations must be unique and increasing, got {gens}")

    @property
    def generations(self) -> list[int]:
        return [int(row[GENERATION]) for row in self.rows]

    def column(self, key: str) -> list[float]:
        return [row.get(key, math.nan) for row in self.rows]

    def has(self, key: str) -> bool:
        """True when the column exists and holds at least one value."""
        return key in self.columns and any(not math.isnan(v) for v in self.column(key))

    def points(self, key: str, x: str = GENERATION) -> tuple[list[float], list[float]]:
        """(x, y) of the rows where ``key`` was recorded."""
        pairs = [(row[x], row[key]) for row in self.rows
                 if not math.isnan(row.get(key, math.nan)) and not math.isnan(row.get(x, math.nan))]
        return [p[0] for p in pairs], [p[1] for p in pairs]

    def last(self, key: str) -> float:
        """The value of ``key`` at the last generation that recorded it (NaN: never)."""
        ys = self.points(key)[1]
        return ys[-1] if ys else math.nan

    def rungs(self, mode: str) -> list[str]:
        """Rungs with a ladder score in ``mode``, in column order."""
        prefix = f"score/{mode}/"
        return [c.removeprefix(prefix) for c in self.columns if c.startswith(prefix) and self.has(c)]


def _columns(keys: Iterable[str]) -> tuple[str, ...]:
    keys = set(keys)
    fixed = [k for k in FIXED if k in keys]
    rest = sorted(k for k in keys if k.startswith(PREFIXES) and k not in fixed)
    return (GENERATION, WALL_MIN, *fixed, *rest)


def curve_from_series(series: dict[str, dict[int, float]]) -> Curve:
    """The curve of metric histories ``{key: {generation: value}}``.

    Rows are the generations that logged ``time/generation`` (every phase
    logs it, so every started generation has a row).
    """
    gens = sorted(series.get(M.GENERATION, {}))
    columns = _columns(series)
    wall = series.get(M.WALL_S, {})
    rows = []
    for g in gens:
        row = {GENERATION: float(g), WALL_MIN: wall[g] / 60.0 if g in wall else math.nan}
        for key in columns[2:]:
            row[key] = float(series.get(key, {}).get(g, math.nan))
        rows.append(row)
    return Curve(columns, tuple(rows))


def curve_from_mlflow(tracking_uri: str, campaign: str) -> Curve:
    """The learning curve of ``campaign`` from the MLflow store at ``tracking_uri``."""
    from draw import load_campaign  # reports/draw.py, next to this file

    return curve_from_series(load_campaign(tracking_uri, campaign).series)


def write_csv(curve: Curve, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(curve.columns)
        for row in curve.rows:
            out.writerow(["" if math.isnan(row[c]) else _number(row[c]) for c in curve.columns])
    return path


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


def read_csv(path: Path) -> Curve:
    """A curve written by ``write_csv``; raises ``ValueError`` naming the file on bad content."""
    with open(path, newline="") as f:
        table = list(csv.reader(f))
    if not table:
        raise ValueError(f"{path}: empty curve file")
    columns = tuple(table[0])
    rows = []
    for n, cells in enumerate(table[1:], start=2):
        if len(cells) != len(columns):
            raise ValueError(f"{path}:{n}: {len(cells)} cells for {len(columns)} columns")
        try:
            rows.append({c: float(v) if v else math.nan for c, v in zip(columns, cells, strict=True)})
        except ValueError as exc:
            raise ValueError(f"{path}:{n}: {exc}") from exc
    try:
        return Curve(columns, tuple(rows))
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from exc


def termination_shares(curve: Curve) -> dict[str, list[float]]:
    """Per termination, its share of each generation's self-play games (0 where none)."""
    counts = {t: [0.0 if math.isnan(v) else v for v in curve.column(M.termination_key(t))]
              for t in M.TERMINATIONS}
    totals = [sum(c[i] for c in counts.values()) for i in range(len(curve.rows))]
    return {t: [v / tot if tot else 0.0 for v, tot in zip(c, totals, strict=True)]
            for t, c in counts.items()}


def conversion_columns(curve: Curve) -> list[str]:
    """The conversion-rate columns the campaign recorded: ``selfplay/conversion``
    first, then ``conversion/<mode>/<rung>`` for the rungs with scores (the
    ``_opportunities``/``_converted`` counts stay in the CSV, not here)."""
    ladder = [conversion_key(mode, rung) for mode in M.EVAL_MODES for rung in curve.rungs(mode)
              if curve.has(conversion_key(mode, rung))]
    return ([SELFPLAY_CONVERSION] if curve.has(SELFPLAY_CONVERSION) else []) + ladder
