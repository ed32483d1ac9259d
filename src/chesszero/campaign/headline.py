"""The headline rating a user sees, read back from logged metrics (SPEC 10, issue 22).

The headline is the joint maximum-likelihood rating over every rung played
(``metrics.joint_elo_key``: ``elo_joint/<mode>``) with its 95% interval, or
its one-sided bound when every game was won or lost, printed ``> 288`` /
``< -100`` and drawn as a bound, never as a point. The paper's nearest-rung
rating (``metrics.elo_key``: ``elo/<mode>``) is the secondary number; when
its rung was swept (score 0 or 1) it is a bound too.

Both families share the suffix convention of ``joint_elo_key``: ``''`` the
estimate (the bound itself for a bound), ``'lo'``/``'hi'`` the interval ends
(the open end of a bound is not logged), ``'bound'`` +1 for a lower bound
(every game won), -1 for an upper bound (every game lost), 0 for a point.

- ``Rating``: estimate, interval, direction; ``describe()`` is what tables print.
- ``rating_from(values, key)``: a ``Rating`` from a flat ``{metric: value}``
  mapping (one generation's metrics); ``joint_rating`` / ``nearest_rating``
  name the family.
- ``RatingSeries`` / ``rating_series``: what a figure draws over many
  generations: the point estimates with their bands, and the lower and upper
  bounds apart (``reports/rating_plot.py`` draws them as triangles).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from chesszero.campaign import metrics as M

KeyFn = Callable[[str], str]
"""``suffix -> metric key`` for one mode (``lambda s: M.joint_elo_key("searched", s)``)."""

DIRECTIONS = {1.0: ">", -1.0: "<", 0.0: ""}


@dataclass(frozen=True)
class Rating:
    """A rating with its interval; ``direction`` ``">"`` / ``"<"`` makes
    ``estimate`` a one-sided bound (the other end is infinite)."""

    estimate: float
    lower: float = -math.inf
    upper: float = math.inf
    direction: str = ""

    @property
    def is_bound(self) -> bool:
        return self.direction != ""

    def describe(self, digits: int = 0) -> str:
        """``612 [540, 690]``, ``> 288`` or ``< -100``."""
        value = f"{self.estimate:.{digits}f}"
        if self.is_bound:
            return f"{self.direction} {value}"
        if math.isfinite(self.lower) and math.isfinite(self.upper):
            return f"{value} [{self.lower:.{digits}f}, {self.upper:.{digits}f}]"
        return value


def signed_bound(direction: str) -> float:
    """The ``'bound'`` metric of a direction: +1 ``>``, -1 ``<``, 0 a point."""
    return {">": 1.0, "<": -1.0, "": 0.0}[direction]


def rating_from(values: Mapping[str, float], key: KeyFn) -> Rating | None:
    """The rating logged under ``key`` in ``values``; None when not logged.

    A ``'bound'`` of +1/-1 makes it a bound whatever else was logged. (Runs
    from before issue 22 logged the nearest-rung flag unsigned, 1 for either
    direction: read as ``>``, the common case, never as a point.)"""
    estimate = values.get(key(""))
    if estimate is None or math.isnan(estimate):
        return None
    flag = values.get(key("bound"), 0.0)
    flag = 0.0 if flag is None or math.isnan(flag) else float(flag)
    direction = DIRECTIONS.get(flag, ">" if flag > 0 else "<")  # any other non-zero flag: a bound
    if direction == ">":
        return Rating(estimate, estimate, math.inf, ">")
    if direction == "<":
        return Rating(estimate, -math.inf, estimate, "<")
    lo, hi = values.get(key("lo"), math.nan), values.get(key("hi"), math.nan)
    return Rating(estimate, -math.inf if math.isnan(lo) else lo, math.inf if math.isnan(hi) else hi, "")


def joint_rating(values: Mapping[str, float], mode: str) -> Rating | None:
    """The headline: the joint rating of ``mode`` (``elo_joint/<mode>``)."""
    return rating_from(values, lambda s: M.joint_elo_key(mode, s))


def nearest_rating(values: Mapping[str, float], mode: str) -> Rating | None:
    """The paper's secondary number: the nearest-rung rating (``elo/<mode>``)."""
    return rating_from(values, lambda s: M.elo_key(mode, s))


def key_family(key: KeyFn) -> tuple[str, ...]:
    """Every metric key of one rating: estimate, lo, hi, bound."""
    return tuple(key(s) for s in ("", "lo", "hi", "bound"))


@dataclass(frozen=True)
class RatingSeries:
    """One rating over a run, split the way a figure draws it: point
    estimates (x, estimate, lower, upper) joined by a line with a band, and
    lower / upper bounds (x, bound) as markers off the line."""

    points: list[tuple[float, float, float, float]] = field(default_factory=list)
    lower_bounds: list[tuple[float, float]] = field(default_factory=list)
    upper_bounds: list[tuple[float, float]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.points or self.lower_bounds or self.upper_bounds)

    def columns(self) -> tuple[list[float], list[float], list[float], list[float]]:
        """The points as (xs, estimates, lowers, uppers) lists."""
        if not self.points:
            return [], [], [], []
        xs, ys, lo, hi = (list(c) for c in zip(*self.points, strict=True))
        return xs, ys, lo, hi


def rating_series(steps: Iterable[tuple[float, Mapping[str, float]]], key: KeyFn) -> RatingSeries:
    """The series of ``key``'s rating over ``steps`` ((x, that step's metrics)),
    in the order given; steps without the rating are skipped."""
    out = RatingSeries()
    for x, values in steps:
        if x is None or math.isnan(x):
            continue
        r = rating_from(values, key)
        if r is None:
            continue
        if r.direction == ">":
            out.lower_bounds.append((x, r.estimate))
        elif r.direction == "<":
            out.upper_bounds.append((x, r.estimate))
        else:
            lo = r.lower if math.isfinite(r.lower) else r.estimate
            hi = r.upper if math.isfinite(r.upper) else r.estimate
            out.points.append((x, r.estimate, lo, hi))
    return out


def steps_of(histories: Mapping[str, Mapping[int, float]], keys: Iterable[str],
             x: Mapping[int, float] | None = None) -> list[tuple[float, dict[str, float]]]:
    """Per-step metric dicts from MLflow-style histories ``{key: {step: value}}``
    for ``keys``, in step order, with x = the step or ``x[step]`` (steps
    missing from ``x`` are left out)."""
    keys = list(keys)
    steps = sorted({s for k in keys for s in histories.get(k, {})})
    out = []
    for s in steps:
        if x is not None and s not in x:
            continue
        values = {k: histories[k][s] for k in keys if s in histories.get(k, {})}
        out.append((float(x[s]) if x is not None else float(s), values))
    return out


__all__ = ["Rating", "RatingSeries", "joint_rating", "key_family", "nearest_rating", "rating_from",
           "rating_series", "signed_bound", "steps_of"]
