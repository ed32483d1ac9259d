"""Resignation threshold calibrated on continuation games (SPEC 6).

A fifth of self-play games are *continuation games*: they never resign, so
they show what resigning would have cost. For every candidate threshold
``t`` in -0.99, -0.98, ..., -0.70 a game is summarised as one character:

- ``-``: the trigger never fired (no ply had root value AND best child Q
  both ``<= t``, values from the side to move);
- ``R``: it fired first for a side that then lost (a correct resignation);
- ``F``: it fired first for a side that drew or won (a false resignation).

Only the *first* firing counts, as resigning ends the game there. A game
stopped at the ply cap should be reported as a draw (``winner=None``), which
counts any trigger in it as false: the conservative reading.

The calibrator keeps the last ``window`` (2,000) summaries. The *target*
threshold is the loosest (highest) one with at least ``min_triggers`` (100)
firings and a one-sided ``confidence`` (95%) Clopper-Pearson upper bound on
the false-resignation rate ``<= max_false_rate`` (2.5%); ``None`` (resignation
disabled) when no threshold qualifies. ``publish()`` moves the published
threshold toward the target: tightening (or disabling) at once, relaxing by
at most one step (0.01) per publication; disabled counts as one step below
-0.99. The state round-trips through ``to_dict``/``from_dict`` and JSON.
"""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

THRESHOLDS: tuple[float, ...] = tuple(round(-0.99 + 0.01 * k, 2) for k in range(30))
"""Candidate thresholds, tightest first: -0.99 .. -0.70."""

NOT_FIRED, RESIGNED, FALSE_RESIGNED = "-", "R", "F"


def clopper_pearson_upper(failures: int, trials: int, confidence: float = 0.95) -> float:
    """One-sided Clopper-Pearson upper bound on a binomial rate.

    The bound is the ``p`` at which ``P(X <= failures | trials, p) = 1 - confidence``
    (equivalently the ``confidence`` quantile of Beta(failures + 1, trials - failures)),
    found by bisection on the exact binomial sum. 1.0 when ``failures == trials``
    or there are no trials.
    """
    if trials < 0 or not 0 <= failures <= max(trials, 0):
        raise ValueError(f"need 0 <= failures <= trials, got failures={failures}, trials={trials}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    if trials == 0 or failures == trials:
        return 1.0
    k = np.arange(failures + 1, dtype=np.float64)
    log_choose = np.concatenate(
        ([0.0], np.cumsum(np.log((trials - k[:-1]) / (k[:-1] + 1.0))))
    )  # log C(trials, k) for k = 0..failures
    alpha = 1.0 - confidence

    def cdf(p: float) -> float:
        log_terms = log_choose + k * math.log(p) + (trials - k) * math.log1p(-p)
        top = float(log_terms.max())
        return math.exp(top) * float(np.exp(log_terms - top).sum())

    low, high = failures / trials, 1.0  # cdf decreases in p; cdf(low) >= 1/2 > alpha
    for _ in range(200):
        mid = 0.5 * (low + high)
        if mid in (low, high):
            break
        if cdf(mid) > alpha:
            low = mid
        else:
            high = mid
    return high


@dataclass(frozen=True)
class ResignProbe:
    """Search values at one searched ply, from the side to move's point of view."""

    white_to_move: bool
    root_value: float
    best_q: float


def summarize_game(probes: Iterable[ResignProbe], winner: bool | None) -> str:
    """Per-threshold summary of one continuation game (see module docstring).

    ``winner`` is True for a White win, False for Black, None for a draw.
    """
    fired: list[str | None] = [None] * len(THRESHOLDS)
    remaining = len(THRESHOLDS)
    for ply, probe in enumerate(probes):
        for value in (probe.root_value, probe.best_q):
            if not math.isfinite(value) or not -1.0 - 1e-6 <= value <= 1.0 + 1e-6:
                raise ValueError(f"search value at probe {ply} must lie in [-1, 1], got {value!r}")
        worst = max(probe.root_value, probe.best_q)
        lost = winner is not None and winner != probe.white_to_move
        for i, t in enumerate(THRESHOLDS):
            if fired[i] is None and worst <= t:
                fired[i] = RESIGNED if lost else FALSE_RESIGNED
                remaining -= 1
        if remaining == 0:
            break
    return "".join(NOT_FIRED if f is None else f for f in fired)


@dataclass(frozen=True)
class ThresholdStats:
    """Evidence for one threshold over the window."""

    threshold: float
    triggers: int
    false_resignations: int
    upper_bound: float
    qualifies: bool


@dataclass
class ResignCalibrator:
    """Rolling evidence and the published resignation threshold (``None`` = off)."""

    window: int = 2000
    min_triggers: int = 100
    max_false_rate: float = 0.025
    confidence: float = 0.95
    threshold: float | None = None
    publications: int = 0
    games: deque[str] = field(default_factory=deque)

    def __post_init__(self) -> None:
        if self.window < 1:
            raise ValueError(f"window must be positive, got {self.window!r}")
        if self.min_triggers < 1:
            raise ValueError(f"min_triggers must be positive, got {self.min_triggers!r}")
        if not 0.0 < self.max_false_rate < 1.0:
            raise ValueError(f"max_false_rate must lie in (0, 1), got {self.max_false_rate!r}")
        if self.threshold is not None and self.threshold not in THRESHOLDS:
            raise ValueError(
                f"threshold must be one of {THRESHOLDS} or None, got {self.threshold!r}"
            )
        for summary in self.games:
            _check_summary(summary)
        self.games = deque(self.games, maxlen=self.window)

    def record_game(self, probes: Sequence[ResignProbe], winner: bool | None) -> str:
        """Add one continuation game; returns its summary string."""
        summary = summarize_game(probes, winner)
        self.games.append(summary)
        return summary

    def record_summary(self, summary: str) -> None:
        """Add a summary computed elsewhere (e.g. by a remote actor)."""
        self.games.append(_check_summary(summary))

    def stats(self) -> list[ThresholdStats]:
        """Triggers, false resignations and bound per threshold, tightest first."""
        fired = np.zeros(len(THRESHOLDS), dtype=np.int64)
        false = np.zeros(len(THRESHOLDS), dtype=np.int64)
        for summary in self.games:
            row = np.frombuffer(summary.encode("ascii"), dtype=np.uint8)
            fired += row != ord(NOT_FIRED)
            false += row == ord(FALSE_RESIGNED)
        out = []
        for t, n, x in zip(THRESHOLDS, fired.tolist(), false.tolist(), strict=True):
            bound = clopper_pearson_upper(x, n, self.confidence)
            ok = n >= self.min_triggers and bound <= self.max_false_rate
            out.append(ThresholdStats(t, n, x, bound, ok))
        return out

    def target(self) -> float | None:
        """Loosest qualifying threshold over the window, or None."""
        qualifying = [s.threshold for s in self.stats() if s.qualifies]
        return max(qualifying) if qualifying else None

    def publish(self) -> float | None:
        """Move the published threshold toward the target; returns the new value."""
        target = self.target()
        current = -1 if self.threshold is None else THRESHOLDS.index(self.threshold)
        goal = -1 if target is None else THRESHOLDS.index(target)
        step = goal if goal <= current else min(goal, current + 1)
        self.threshold = None if step < 0 else THRESHOLDS[step]
        self.publications += 1
        return self.threshold

    def should_resign(self, root_value: float, best_q: float) -> bool:
        """Whether a resigning game would resign now at the published threshold."""
        t = self.threshold
        return t is not None and root_value <= t and best_q <= t

    def to_dict(self) -> dict[str, object]:
        return {
            "thresholds": list(THRESHOLDS),
            "window": self.window,
            "min_triggers": self.min_triggers,
            "max_false_rate": self.max_false_rate,
            "confidence": self.confidence,
            "threshold": self.threshold,
            "publications": self.publications,
            "games": list(self.games),
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> ResignCalibrator:
        thresholds = data.get("thresholds")
        if thresholds is not None and [round(float(t), 2) for t in thresholds] != list(THRESHOLDS):  # type: ignore[union-attr]
            raise ValueError(f"stored thresholds {thresholds!r} differ from {list(THRESHOLDS)}")
        threshold = data.get("threshold")
        games = data.get("games", [])
        if not isinstance(games, list):
            raise ValueError(f"'games' must be a list, got {type(games).__name__}")
        return cls(
            window=int(data["window"]),  # type: ignore[call-overload]
            min_triggers=int(data["min_triggers"]),  # type: ignore[call-overload]
            max_false_rate=float(data["max_false_rate"]),  # type: ignore[arg-type]
            confidence=float(data["confidence"]),  # type: ignore[arg-type]
            threshold=None if threshold is None else round(float(threshold), 2),  # type: ignore[arg-type]
            publications=int(data["publications"]),  # type: ignore[call-overload]
            games=deque(str(g) for g in games),
        )

    def save(self, path: Path) -> None:
        """Write the state as JSON (temp file then rename)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(self.to_dict()) + "\n")
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> ResignCalibrator:
        return cls.from_dict(json.loads(Path(path).read_text()))


def _check_summary(summary: str) -> str:
    if len(summary) != len(THRESHOLDS) or set(summary) - {NOT_FIRED, RESIGNED, FALSE_RESIGNED}:
        raise ValueError(
            f"game summary must be {len(THRESHOLDS)} characters of '-', 'R', 'F', got {summary!r}"
        )
    # Firing is monotone in the threshold: once fired at t it fires at every looser t.
    first = next((i for i, c in enumerate(summary) if c != NOT_FIRED), len(summary))
    if NOT_FIRED in summary[first:]:
        raise ValueError(
            f"game summary {summary!r} fires at a tight threshold but not a looser one"
        )
    return summary
