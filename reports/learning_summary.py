"""Reading a learning benchmark run: its saved files and what the reports take from them.

Shared by ``learning.py`` (figure), ``learning_table.py`` (markdown) and
``learning_compare.py`` (two or more runs side by side). Summaries written
before issue 22 (no control arm, no ``arm`` per match, one ``joint`` per
mode) read as a run whose every match and rating belongs to the final arm.

- ``load_run(folder)``: the curve and the summary;
- ``final_match``, ``arm_matches``, ``joint_of``, ``gain_of``: the final
  evaluation per arm, mode and rung; ``rating_of`` turns a saved joint
  rating or gain into a ``headline.Rating``;
- ``policy_report``: policy-only stalemates and conversion of 5+ pawn leads;
- ``rating_curves``: the campaign's joint rating per mode against wall
  minutes, as ``headline.RatingSeries`` (the figure's data path);
- ``SizeEvent`` / ``size_events``: progressive-sizing events from the curve.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from learning_curve import GENERATION, WALL_MIN, Curve, read_csv

from chesszero.campaign import metrics as M
from chesszero.campaign.headline import Rating, RatingSeries, rating_series

CURVE = "curve.csv"
SUMMARY = "summary.json"
FINAL, CONTROL = "final", "control"


def load_run(folder: Path) -> tuple[Curve, dict[str, Any]]:
    """The curve and summary a benchmark run saved in `folder`."""
    for name in (CURVE, SUMMARY):
        if not (folder / name).is_file():
            raise FileNotFoundError(f"{folder}: no {name} (a folder written by benchmarks/bench_learning.py)")
    return read_csv(folder / CURVE), json.loads((folder / SUMMARY).read_text())


def _final(summary: dict[str, Any]) -> dict[str, Any]:
    return summary.get("final_evaluation", {})


def arm_matches(summary: dict[str, Any], arm: str = FINAL, mode: str | None = None) -> list[dict[str, Any]]:
    """The arm's matches (of `mode`, when given) in the order played."""
    return [m for m in _final(summary).get("matches", [])
            if m.get("arm", FINAL) == arm and (mode is None or m["mode"] == mode)]


def final_match(summary: dict[str, Any], opponent: str, mode: str, arm: str = FINAL) -> dict[str, Any] | None:
    return next((m for m in arm_matches(summary, arm, mode) if m["opponent"] == opponent), None)


def arms(summary: dict[str, Any]) -> list[str]:
    """The arms the run played: ``final``, then ``control`` when it was played."""
    return list(dict.fromkeys([FINAL, *(m.get("arm", FINAL) for m in _final(summary).get("matches", []))]))


def joint_of(summary: dict[str, Any], arm: str, mode: str) -> dict[str, Any] | None:
    """The saved joint rating of `arm` in `mode` (``JointRating.to_dict()`` + describe)."""
    final = _final(summary)
    joints = final.get("joints") or {FINAL: final.get("joint", {})}
    return joints.get(arm, {}).get(mode)


def gain_of(summary: dict[str, Any], mode: str) -> dict[str, Any] | None:
    """The saved final-minus-control gain in `mode` (``RatingGain.to_dict()``)."""
    return _final(summary).get("gain", {}).get(mode)


def rating_of(saved: dict[str, Any] | None) -> Rating | None:
    """A saved joint rating or gain as a ``Rating``; None when absent or undetermined."""
    if not saved or saved.get("estimate") is None or saved.get("direction") == "?":
        return None
    lo, hi = saved.get("lower"), saved.get("upper")
    return Rating(float(saved["estimate"]), -math.inf if lo is None else float(lo),
                  math.inf if hi is None else float(hi), str(saved.get("direction", "")))


@dataclass(frozen=True)
class PolicyLine:
    """Policy-only play against one rung (or ``all`` rungs): stalemates, the
    games the model led by 5+ pawns that it won, and the mates in one it took."""

    opponent: str
    games: int
    score: float
    stalemates: int
    opportunities: int | None
    converted: int | None
    mates_available: int | None = None  # turns with a mate in one on the board (None: not counted)
    mates_played: int | None = None

    @property
    def mates(self) -> str:
        """``played/available`` mates in one, ``-`` where not counted."""
        return "-" if self.mates_available is None else f"{self.mates_played}/{self.mates_available}"

    @property
    def conversion(self) -> float | None:
        return None if not self.opportunities or self.converted is None else self.converted / self.opportunities


def policy_report(summary: dict[str, Any], arm: str = FINAL) -> list[PolicyLine]:
    """Per rung climbed in policy-only play, then the total (``all``)."""
    lines = []
    for m in arm_matches(summary, arm, "policy"):
        lines.append(PolicyLine(m["opponent"], int(m["games"]), float(m["score"]),
                                int(m["terminations"].get("stalemate", 0)),
                                m.get("conversion_opportunities"), m.get("conversion_converted"),
                                m.get("mate_in_one_available"), m.get("mate_in_one_played")))
    if lines:
        known = [x for x in lines if x.opportunities is not None]
        mates = [x for x in lines if x.mates_available is not None]
        games = sum(x.games for x in lines)
        lines.append(PolicyLine("all", games, sum(x.score * x.games for x in lines) / games,
                                sum(x.stalemates for x in lines),
                                sum(x.opportunities or 0 for x in known) if known else None,
                                sum(x.converted or 0 for x in known) if known else None,
                                sum(x.mates_available or 0 for x in mates) if mates else None,
                                sum(x.mates_played or 0 for x in mates) if mates else None))
    return lines


def rating_curves(curve: Curve, x: str = WALL_MIN) -> dict[str, RatingSeries]:
    """Per mode, the campaign's joint rating (``elo_joint/<mode>``) against
    `x`: point estimates with their intervals, bounds apart."""
    steps = [(row.get(x, math.nan), row) for row in curve.rows]
    return {mode: rating_series(steps, partial(M.joint_elo_key, mode)) for mode in M.EVAL_MODES}


@dataclass(frozen=True)
class SizeEvent:
    """A progressive-sizing event of the run: a candidate started or promoted."""

    generation: int
    wall_min: float
    kind: str  # "candidate" or "promoted"
    size: str

    def label(self) -> str:
        return f"{self.size} candidate starts" if self.kind == "candidate" else f"{self.size} promoted"


def _stage_size(sizes: list[str], stage: int) -> str:
    return sizes[stage] if 0 <= stage < len(sizes) else f"stage {stage}"


def size_events(curve: Curve, summary: dict[str, Any]) -> list[SizeEvent]:
    """Candidate starts (``candidate/started``) and promotions (``progressive/stage``
    rising) in generation order; sizes from the summary's ``sizes`` when recorded."""
    sizes = list(summary.get("sizes", []))
    events, stage = [], 0
    for row in curve.rows:
        g, wall = int(row[GENERATION]), row[WALL_MIN]
        now = row.get(M.PROGRESSIVE_STAGE, math.nan)
        if row.get(M.CANDIDATE_STARTED, math.nan) == 1.0:
            events.append(SizeEvent(g, wall, "candidate", _stage_size(sizes, stage + 1)))
        if not math.isnan(now) and int(now) > stage:
            stage = int(now)
            events.append(SizeEvent(g, wall, "promoted", _stage_size(sizes, stage)))
    return events
