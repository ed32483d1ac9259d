"""Elo from paired match results (SPEC 10).

A match plays every opening twice with colours reversed; the unit of
resampling is therefore the *opening pair*, whose score (from the model's side)
is one of 0, 0.5, 1, 1.5, 2. The counts of those five outcomes are the
*pentanomial*.

- ``elo_difference(s)``: ``400 * log10(s / (1 - s))``; a rating is the
  opponent's anchor ``R`` plus that difference.
- ``rate(...)``: point estimate and a 95% interval from 10,000 bootstrap
  resamples of the opening pairs (the anchor is held fixed; seedable).
  Resampling pairs with replacement is exactly a multinomial draw over the
  pentanomial frequencies, which is how it is computed.
- A score of exactly 0 or 1 has no finite Elo: it is reported as a one-sided
  bound (``is_bound``), the Elo of the 95% one-sided Clopper-Pearson bound on
  the per-game score (for all-loss or all-win matches the games are plain
  Bernoulli trials), never as infinity.
- Bootstrap resamples that hit 0 or 1 are clamped half a game inside
  ``[0, 1]`` so every interval end is finite.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

PAIR_SCORES: tuple[float, ...] = (0.0, 0.5, 1.0, 1.5, 2.0)
"""Score of an opening pair for each pentanomial bin, in bin order."""

DEFAULT_RESAMPLES = 10_000
DEFAULT_CONFIDENCE = 0.95


def elo_difference(score: float) -> float:
    """Elo difference implied by an expected score strictly inside (0, 1)."""
    if not 0.0 < score < 1.0:
        raise ValueError(f"score must lie strictly between 0 and 1 for a finite Elo, got {score!r}")
    return 400.0 * math.log10(score / (1.0 - score))


def expected_score(difference: float) -> float:
    """Expected score of a player rated ``difference`` Elo above its opponent."""
    return 1.0 / (1.0 + 10.0 ** (-difference / 400.0))


def pentanomial_from_pair_scores(pair_scores: Sequence[float]) -> tuple[int, int, int, int, int]:
    """Count opening-pair scores (each 0, 0.5, 1, 1.5 or 2) into the five bins."""
    counts = [0, 0, 0, 0, 0]
    for value in pair_scores:
        index = round(float(value) * 2)
        if index not in range(5) or abs(index / 2 - float(value)) > 1e-9:
            raise ValueError(f"pair score must be one of {PAIR_SCORES}, got {value!r}")
        counts[index] += 1
    return (counts[0], counts[1], counts[2], counts[3], counts[4])


def all_or_nothing_bound(games: int, confidence: float = DEFAULT_CONFIDENCE) -> float:
    """One-sided Clopper-Pearson upper bound on the score after ``games`` losses.

    With zero successes in ``n`` trials the bound has the closed form
    ``1 - (1 - confidence) ** (1 / n)``; by symmetry the lower bound after
    ``n`` wins is one minus this.
    """
    if games <= 0:
        raise ValueError(f"games must be positive, got {games!r}")
    return 1.0 - (1.0 - confidence) ** (1.0 / games)


@dataclass(frozen=True)
class EloEstimate:
    """A rating with its interval, relative to an anchor held fixed.

    ``estimate``/``lower``/``upper`` are absolute ratings (anchor included).
    When ``is_bound`` is set the match score was 0 or 1: ``estimate`` is then a
    one-sided bound (an upper bound for score 0, a lower bound for score 1),
    ``lower == upper == estimate``, and ``describe()`` prints ``< x`` or ``> x``.
    """

    estimate: float
    lower: float
    upper: float
    is_bound: bool
    anchor: float
    score: float
    games: int
    pairs: int
    pentanomial: tuple[int, int, int, int, int]
    confidence: float
    resamples: int

    def describe(self, anchor_label: str = "") -> str:
        """One-line human summary, e.g. ``1734 [1690, 1779] (score 0.548, 100 games)``."""
        against = f" vs {anchor_label}" if anchor_label else ""
        tail = f"(score {self.score:.3f}, {self.games} games{against}, anchor {self.anchor:.0f})"
        if self.is_bound:
            sign = "<" if self.score == 0.0 else ">"
            return f"{sign} {self.estimate:.0f} {tail}"
        return f"{self.estimate:.0f} [{self.lower:.0f}, {self.upper:.0f}] {tail}"

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["pentanomial"] = list(self.pentanomial)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> EloEstimate:
        values = dict(data)
        penta = values.pop("pentanomial")
        if not isinstance(penta, (list, tuple)) or len(penta) != 5:
            raise ValueError(f"pentanomial must be a list of five counts, got {penta!r}")
        return cls(pentanomial=tuple(int(c) for c in penta), **values)  # type: ignore[arg-type]


def rate(
    pentanomial: Sequence[int],
    anchor: float,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int | None = 0,
) -> EloEstimate:
    """Rate a player from the pentanomial of its opening pairs vs an anchor ``R``.

    The interval is the percentile bootstrap over opening pairs with
    ``resamples`` draws from ``numpy.random.default_rng(seed)``.
    """
    counts = _check_pentanomial(pentanomial)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    if resamples < 1:
        raise ValueError(f"resamples must be positive, got {resamples!r}")
    pairs = int(counts.sum())
    games = 2 * pairs
    score = float(counts @ np.asarray(PAIR_SCORES)) / games
    common = {
        "anchor": float(anchor),
        "score": score,
        "games": games,
        "pairs": pairs,
        "pentanomial": tuple(int(c) for c in counts),
        "confidence": confidence,
        "resamples": resamples,
    }
    if score in (0.0, 1.0):
        bound = all_or_nothing_bound(games, confidence)
        value = anchor + elo_difference(bound if score == 0.0 else 1.0 - bound)
        return EloEstimate(estimate=value, lower=value, upper=value, is_bound=True, **common)

    rng = np.random.default_rng(seed)
    draws = rng.multinomial(pairs, counts / pairs, size=resamples)
    sampled = draws @ np.asarray(PAIR_SCORES) / games
    edge = 0.5 / games
    sampled = np.clip(sampled, edge, 1.0 - edge)
    alpha = 1.0 - confidence
    low_s, high_s = np.quantile(sampled, [alpha / 2.0, 1.0 - alpha / 2.0])
    return EloEstimate(
        estimate=anchor + elo_difference(score),
        lower=anchor + elo_difference(float(low_s)),
        upper=anchor + elo_difference(float(high_s)),
        is_bound=False,
        **common,
    )


def rate_pairs(
    pair_scores: Sequence[float],
    anchor: float,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int | None = 0,
) -> EloEstimate:
    """``rate`` for a list of opening-pair scores (each 0, 0.5, 1, 1.5 or 2)."""
    return rate(
        pentanomial_from_pair_scores(pair_scores),
        anchor,
        resamples=resamples,
        confidence=confidence,
        seed=seed,
    )


def _check_pentanomial(pentanomial: Sequence[int]) -> np.ndarray:
    counts = np.asarray(list(pentanomial))
    if counts.shape != (5,) or not np.issubdtype(counts.dtype, np.integer) or (counts < 0).any():
        raise ValueError(
            f"pentanomial must be five non-negative integer counts, got {list(pentanomial)!r}"
        )
    if counts.sum() == 0:
        raise ValueError("pentanomial is empty: no opening pairs were played")
    return counts.astype(np.int64)
