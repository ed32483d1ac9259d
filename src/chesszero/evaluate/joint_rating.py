"""Joint maximum-likelihood rating of one player over every rung it played (SPEC 10).

The paper's rule rates a player from the one rung whose score is nearest 0.5
(``ladder.choose_rung``); this module uses every rung played at a budget.

Model: the Elo logistic model of ``elo.expected_score``; against rung ``k``
(rating ``R_k``, fixed from the ladder table) the player scores
``p_k(x) = 1 / (1 + 10 ** ((R_k - x) / 400))`` per game, draws counting half
a point. With ``n_k`` games and ``S_k`` points against rung ``k`` the
log-likelihood is ``sum_k S_k log p_k + (n_k - S_k) log(1 - p_k)``, strictly
concave in the one unknown ``x``; its maximum solves
``sum_k n_k p_k(x) = sum_k S_k`` (expected points equal observed points).

- A finite maximum exists exactly when the total score is strictly between
  0 and the number of games (at least one non-win and one non-loss over all
  rungs, e.g. all won against one rung and all lost against another). It lies
  between ``min R_k + d`` and ``max R_k + d`` with ``d = elo_difference(S / N)``
  and is found by bisection (vectorised over bootstrap resamples).
- Interval: percentile bootstrap; each resample redraws every rung's opening
  pairs with replacement, independently per rung (a multinomial draw over
  that rung's pentanomial, as ``elo.rate`` does), and refits. A resample
  whose total score hits 0 or ``N`` is clamped half a game inside, as in
  ``elo.rate``. With one rung this is ``elo.rate``'s estimate and
  interval (same seed, same draws). When every resample gives the same fit
  (each rung's pairs all scored alike, e.g. every game won against one rung
  and lost against the next) the bootstrap says nothing; the interval is
  then the likelihood-ratio one (log-likelihood within ``z**2 / 2`` of its
  maximum), so no finite estimate comes with a zero-width interval.
- All games won (or all lost): no maximum exists. The result is a one-sided
  bound (``direction`` ``>`` or ``<``): the exact test-inversion bound of the
  joint model, the rating ``x`` at which the probability of winning every game
  played, ``prod_k p_k(x) ** n_k``, equals ``1 - confidence`` (for losses,
  ``prod_k (1 - p_k(x)) ** n_k``). With one rung it is the one-sided
  Clopper-Pearson bound of ``elo.all_or_nothing_bound``; with several it is
  at least as strong as the strongest rung-wise Clopper-Pearson bound (every
  factor is at most 1) and still has the stated coverage (a game's chance of
  being a win is at most its expected score, draws or not). The open side of
  the interval is infinite, never a zero-width point.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from chesszero.evaluate.elo import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    PAIR_SCORES,
    pentanomial_from_pair_scores,
)
from chesszero.evaluate.match import MatchResult

_SCALE = math.log(10.0) / 400.0
_TOLERANCE = 1e-7  # Elo; bisection stops when every bracket is narrower
_MAX_HALVINGS = 100  # brackets start a few thousand Elo wide: ~35 halvings suffice


@dataclass(frozen=True)
class RungGames:
    """The player's opening pairs against one rung of fixed ``rating``."""

    rung: str
    rating: float
    pentanomial: tuple[int, int, int, int, int]

    def __post_init__(self) -> None:
        if not math.isfinite(self.rating):
            raise ValueError(f"rung {self.rung!r}: rating must be finite, got {self.rating!r}")
        counts = self.pentanomial
        if len(counts) != 5 or any(int(c) != c or c < 0 for c in counts) or sum(counts) == 0:
            raise ValueError(
                f"rung {self.rung!r}: pentanomial must be five non-negative counts with at "
                f"least one pair, got {list(counts)!r}"
            )

    @classmethod
    def from_pair_scores(cls, rung: str, rating: float, pair_scores: Sequence[float]) -> RungGames:
        try:
            penta = pentanomial_from_pair_scores(pair_scores)
        except ValueError as error:
            raise ValueError(f"rung {rung!r}: {error}") from None
        return cls(rung, float(rating), penta)

    @property
    def pairs(self) -> int:
        return sum(self.pentanomial)

    @property
    def games(self) -> int:
        return 2 * self.pairs

    @property
    def points(self) -> float:
        return sum(c * s for c, s in zip(self.pentanomial, PAIR_SCORES, strict=True))


@dataclass(frozen=True)
class JointRating:
    """A joint rating with its interval; see the module docstring.

    ``direction`` is ``""`` for a point estimate, ``">"`` when every game was
    won (``estimate == lower`` is a lower bound, ``upper`` is ``inf``) and
    ``"<"`` when every game was lost (``lower`` is ``-inf``).
    """

    estimate: float
    lower: float
    upper: float
    direction: str
    rungs: tuple[RungGames, ...]
    confidence: float
    resamples: int
    interval: str
    """How ``lower``/``upper`` were found: "bootstrap", "likelihood ratio"
    (every resample gave the same fit) or "one-sided" (a bound)."""

    @property
    def is_bound(self) -> bool:
        return self.direction != ""

    @property
    def games(self) -> int:
        return sum(r.games for r in self.rungs)

    @property
    def score(self) -> float:
        return sum(r.points for r in self.rungs) / self.games

    @property
    def rung_names(self) -> tuple[str, ...]:
        return tuple(r.rung for r in self.rungs)

    def describe(self) -> str:
        """e.g. ``joint 1734 [1690, 1779] over random, greedy (score 0.548, 80 games)``."""
        over = f"over {', '.join(self.rung_names)} (score {self.score:.3f}, {self.games} games)"
        if self.is_bound:
            return f"joint {self.direction} {self.estimate:.0f} {over}"
        how = "" if self.interval == "bootstrap" else f" ({self.interval} interval)"
        return f"joint {self.estimate:.0f} [{self.lower:.0f}, {self.upper:.0f}]{how} {over}"

    def to_dict(self) -> dict[str, object]:
        return {
            "estimate": self.estimate,
            "lower": None if math.isinf(self.lower) else self.lower,
            "upper": None if math.isinf(self.upper) else self.upper,
            "direction": self.direction,
            "interval": self.interval,
            "score": self.score,
            "games": self.games,
            "confidence": self.confidence,
            "resamples": self.resamples,
            "rungs": [
                {"rung": r.rung, "rating": r.rating, "pentanomial": list(r.pentanomial)}
                for r in self.rungs
            ],
        }


def joint_rating(
    rungs: Sequence[RungGames],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int | None = 0,
) -> JointRating:
    """Joint MLE over ``rungs`` with a bootstrap interval, or a one-sided bound."""
    if not rungs:
        raise ValueError("no rungs: a joint rating needs at least one match")
    names = [r.rung for r in rungs]
    if len(set(names)) != len(names):
        raise ValueError(f"each rung may appear once, got {names!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    if resamples < 1:
        raise ValueError(f"resamples must be positive, got {resamples!r}")
    ratings = np.array([r.rating for r in rungs])
    games = np.array([r.games for r in rungs], dtype=np.float64)
    total = float(games.sum())
    points = sum(r.points for r in rungs)
    common = {"rungs": tuple(rungs), "confidence": confidence, "resamples": resamples}
    if points in (0.0, total):
        won = points == total
        bound = _sweep_bound(ratings, games, 1.0 - confidence, won)
        lower, upper = (bound, math.inf) if won else (-math.inf, bound)
        return JointRating(bound, lower, upper, ">" if won else "<", interval="one-sided", **common)

    estimate = float(_solve(ratings, games, np.array([points]))[0])
    fits = resampled_fits(rungs, resamples, np.random.default_rng(seed))
    alpha = 1.0 - confidence
    low, high = (float(v) for v in np.quantile(fits, [alpha / 2.0, 1.0 - alpha / 2.0]))
    if high - low > _TOLERANCE:
        return JointRating(estimate, low, high, "", interval="bootstrap", **common)
    points_by_rung = np.array([r.points for r in rungs])
    low, high = _likelihood_interval(ratings, games, points_by_rung, estimate, confidence)
    return JointRating(estimate, low, high, "", interval="likelihood ratio", **common)


def resampled_fits(rungs: Sequence[RungGames], resamples: int, rng: np.random.Generator) -> np.ndarray:
    """The joint MLE of ``resamples`` bootstrap resamples (each rung's opening
    pairs redrawn with replacement, independently per rung; a total of 0 or
    ``N`` clamped half a game inside), as ``joint_rating``'s interval uses them."""
    ratings = np.array([r.rating for r in rungs])
    games = np.array([r.games for r in rungs], dtype=np.float64)
    total = float(games.sum())
    sampled = np.zeros(resamples)
    for r in rungs:
        counts = np.asarray(r.pentanomial, dtype=np.int64)
        draws = rng.multinomial(r.pairs, counts / r.pairs, size=resamples)
        sampled += draws @ np.asarray(PAIR_SCORES)
    sampled = np.clip(sampled, 0.5, total - 0.5)
    return _solve(ratings, games, sampled)


def joint_rating_of_matches(
    matches: Mapping[str, MatchResult],
    ratings: Mapping[str, float],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int | None = 0,
) -> JointRating:
    """``joint_rating`` of the first player of ``matches`` (rung name -> match),
    with each rung's rating taken from ``ratings`` (e.g. ``LadderTable.rating``)."""
    missing = [name for name in matches if name not in ratings]
    if missing:
        raise ValueError(f"no rating for rungs {missing}; rated rungs are {sorted(ratings)}")
    rungs = [
        RungGames.from_pair_scores(name, ratings[name], match.pair_scores())
        for name, match in matches.items()
    ]
    return joint_rating(rungs, resamples=resamples, confidence=confidence, seed=seed)


def _expected_points(x: np.ndarray, ratings: np.ndarray, games: np.ndarray) -> np.ndarray:
    """``sum_k n_k p_k(x)`` for each entry of ``x``."""
    p = 1.0 / (1.0 + np.exp(-_SCALE * (x[:, None] - ratings[None, :])))
    return p @ games


def _solve(ratings: np.ndarray, games: np.ndarray, points: np.ndarray) -> np.ndarray:
    """The MLE for each total in ``points`` (each strictly inside (0, N))."""
    share = points / games.sum()
    shift = np.log(share / (1.0 - share)) / _SCALE  # elo_difference, vectorised
    low, high = ratings.min() + shift, ratings.max() + shift
    for _ in range(_MAX_HALVINGS):
        if np.max(high - low) <= _TOLERANCE:
            break
        mid = 0.5 * (low + high)
        above = _expected_points(mid, ratings, games) > points
        high = np.where(above, mid, high)
        low = np.where(above, low, mid)
    return 0.5 * (low + high)


def _log_likelihood(x: float, ratings: np.ndarray, games: np.ndarray, points: np.ndarray) -> float:
    z = _SCALE * (x - ratings)  # log p = -log(1 + e^-z), log(1 - p) = -log(1 + e^z)
    return float(-(points * np.logaddexp(0.0, -z) + (games - points) * np.logaddexp(0.0, z)).sum())


def _likelihood_interval(
    ratings: np.ndarray, games: np.ndarray, points: np.ndarray, estimate: float, confidence: float
) -> tuple[float, float]:
    """Where the log-likelihood falls ``z**2 / 2`` below its maximum on either side."""
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    target = _log_likelihood(estimate, ratings, games, points) - z * z / 2.0
    ends = []
    for step in (-400.0, 400.0):  # the likelihood falls without limit on both sides
        inside, outside = estimate, estimate + step
        while _log_likelihood(outside, ratings, games, points) > target:
            inside, outside = outside, outside + step
        for _ in range(_MAX_HALVINGS):
            if abs(outside - inside) <= _TOLERANCE:
                break
            mid = 0.5 * (inside + outside)
            if _log_likelihood(mid, ratings, games, points) > target:
                inside = mid
            else:
                outside = mid
        ends.append(0.5 * (inside + outside))
    return ends[0], ends[1]


def _sweep_bound(ratings: np.ndarray, games: np.ndarray, alpha: float, won: bool) -> float:
    """The ``x`` where ``prod_k p_k(x) ** n_k == alpha`` (all won) or
    ``prod_k (1 - p_k(x)) ** n_k == alpha`` (all lost)."""
    target = math.log(alpha)
    sign = 1.0 if won else -1.0

    def log_prob(x: float) -> float:  # increasing in x when won, decreasing when lost
        z = sign * _SCALE * (x - ratings)
        return float(-(games * np.logaddexp(0.0, -z)).sum())

    # Bracket: the joint bound is at least as strong as each rung's own bound
    # (every factor is at most 1), and no stronger than the one all N games
    # against the extreme rung would give (every factor is at least that rung's).
    single = np.log1p(-np.exp(target / games)) - target / games  # log(q/(1-q)), q = alpha**(1/n)
    n_all = games.sum()
    q_all = math.exp(target / n_all)
    if won:
        low = float((ratings - single / _SCALE).max())
        high = float(ratings.max() + math.log(q_all / (1.0 - q_all)) / _SCALE)
    else:
        high = float((ratings + single / _SCALE).min())
        low = float(ratings.min() - math.log(q_all / (1.0 - q_all)) / _SCALE)
    for _ in range(_MAX_HALVINGS):
        if high - low <= _TOLERANCE:
            break
        mid = 0.5 * (low + high)
        if (log_prob(mid) > target) == won:
            high = mid
        else:
            low = mid
    return 0.5 * (low + high)


__all__ = ["JointRating", "RungGames", "joint_rating", "joint_rating_of_matches", "resampled_fits"]
