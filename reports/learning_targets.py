"""Issue 22's targets for the learning benchmark, measured from a saved run.

Each ``Target`` measures one number from the curve and the summary
(``learning_summary``) and gives a verdict: ``met``, ``not met``, ``not
measured`` (the run lacks the data, e.g. a run from before the control arm),
or ``undetermined`` when the measure is a bound on the wrong side of the
threshold (``> 350`` against ``>= 800`` says nothing either way).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from learning_curve import Curve
from learning_summary import final_match, gain_of, rating_of

from chesszero.campaign import metrics as M


@dataclass(frozen=True)
class Measured:
    """A measured value; ``direction`` ``">"`` / ``"<"`` makes it a bound."""

    value: float
    direction: str = ""

    def describe(self, digits: int) -> str:
        return f"{self.direction} {self.value:.{digits}f}".strip()


Measure = Callable[[Curve, dict[str, Any]], Measured | None]


@dataclass(frozen=True)
class Target:
    """One target: ``measure`` compared with ``threshold`` by ``op``."""

    label: str
    op: str  # ">=", "<=" or "<"
    threshold: float
    measure: Measure
    digits: int = 2

    def verdict(self, got: Measured | None) -> str:
        if got is None or math.isnan(got.value):
            return "not measured"
        ok = {">=": got.value >= self.threshold, "<=": got.value <= self.threshold,
              "<": got.value < self.threshold}[self.op]
        wants_high = self.op == ">="
        if got.direction == (">" if wants_high else "<"):  # a bound on the side the target wants
            return "met" if ok else "undetermined (a bound)"
        if got.direction:  # a bound on the other side
            return "undetermined (a bound)" if ok else "not met"
        return "met" if ok else "not met"

    def describe(self) -> str:
        return f"{self.op} {self.threshold:g}"


def _score(opponent: str, mode: str) -> Measure:
    def measure(_: Curve, summary: dict[str, Any]) -> Measured | None:
        m = final_match(summary, opponent, mode)
        return None if m is None else Measured(float(m["score"]))
    return measure


def _gain(mode: str) -> Measure:
    def measure(_: Curve, summary: dict[str, Any]) -> Measured | None:
        r = rating_of(gain_of(summary, mode))
        return None if r is None else Measured(r.estimate, r.direction)
    return measure


def _stalemates_per_100(opponent: str) -> Measure:
    def measure(_: Curve, summary: dict[str, Any]) -> Measured | None:
        m = final_match(summary, opponent, "policy")
        if m is None or not m["games"]:
            return None
        return Measured(100.0 * m["terminations"].get("stalemate", 0) / m["games"])
    return measure


def non_decisive_last(generations: int) -> Measure:
    """The self-play non-decisive rate over the last `generations` generations,
    weighted by each generation's games."""
    def measure(curve: Curve, _: dict[str, Any]) -> Measured | None:
        rows = [r for r in curve.rows if not math.isnan(r.get(M.NON_DECISIVE, math.nan))
                and not math.isnan(r.get(M.SELFPLAY_GAMES, math.nan))][-generations:]
        games = sum(r[M.SELFPLAY_GAMES] for r in rows)
        return Measured(sum(r[M.NON_DECISIVE] * r[M.SELFPLAY_GAMES] for r in rows) / games) if games else None
    return measure


TARGETS = (
    Target("searched: final score vs sf-n1", ">=", 0.50, _score("sf-n1", "searched")),
    Target("searched: final minus control, joint Elo", ">=", 800, _gain("searched"), 0),
    Target("policy only: final minus control, joint Elo", ">=", 400, _gain("policy"), 0),
    Target("policy only: final score vs greedy", ">=", 0.60, _score("greedy", "policy")),
    Target("policy only: stalemates per 100 games vs random", "<=", 5, _stalemates_per_100("random"), 0),
    Target("self-play non-decisive rate, last 10 generations", "<", 0.40, non_decisive_last(10)),
)
"""Issue 22's targets (2 hours, 2 cores, from random weights, 64 visits, 100 games per rung)."""


def targets_table(curve: Curve, summary: dict[str, Any]) -> list[str]:
    lines = ["| target (issue 22) | required | measured | verdict |", "|---|---|---:|---|"]
    for t in TARGETS:
        got = t.measure(curve, summary)
        shown = "-" if got is None or math.isnan(got.value) else got.describe(t.digits)
        lines.append(f"| {t.label} | {t.describe()} | {shown} | {t.verdict(got)} |")
    return lines


__all__ = ["TARGETS", "Measured", "Target", "non_decisive_last", "targets_table"]
