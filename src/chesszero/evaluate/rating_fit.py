"""Maximum-likelihood ratings from pairwise results (Bradley-Terry on the Elo scale).

Model: a player rated ``R_a`` scores ``p = 1 / (1 + 10 ** ((R_b - R_a) / 400))``
per game against ``R_b``; a draw counts as half a win and half a loss, so a
pairing with ``n`` games and ``S`` points for ``a`` contributes
``S log p + (n - S) log(1 - p)`` to the log-likelihood. One player (the
anchor) is held at a fixed rating; the others are fitted by Newton's method
(the log-likelihood is concave). ``prior_draws`` virtual drawn games are added
to every pairing so that a clean sweep gives a finite rating. Standard errors
come from the inverse observed information, relative to the anchor.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

ELO_SCALE = math.log(10.0) / 400.0


@dataclass(frozen=True)
class PairingResult:
    """``games`` games between ``a`` and ``b``; ``points_a`` is a's total score."""

    a: str
    b: str
    games: int
    points_a: float

    def __post_init__(self) -> None:
        if self.a == self.b:
            raise ValueError(f"a pairing needs two different players, got {self.a!r} twice")
        if self.games < 0 or not 0.0 <= self.points_a <= self.games:
            raise ValueError(
                f"pairing {self.a} vs {self.b}: need 0 <= points ({self.points_a}) <= games ({self.games})"
            )

    def to_dict(self) -> dict[str, object]:
        return {"a": self.a, "b": self.b, "games": self.games, "points_a": self.points_a}

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> PairingResult:
        return cls(
            a=str(data["a"]),
            b=str(data["b"]),
            games=int(data["games"]),  # type: ignore[call-overload]
            points_a=float(data["points_a"]),  # type: ignore[arg-type]
        )


@dataclass(frozen=True)
class FittedRatings:
    """Ratings and standard errors by player name, with the fit's anchor."""

    ratings: dict[str, float]
    stderr: dict[str, float]
    anchor: str
    anchor_rating: float
    iterations: int


def fit_ratings(
    players: Sequence[str],
    results: Sequence[PairingResult],
    *,
    anchor: str,
    anchor_rating: float,
    prior_draws: float = 1.0,
    tolerance: float = 1e-9,
    max_iterations: int = 200,
) -> FittedRatings:
    """Maximum-likelihood ratings of ``players`` with ``anchor`` fixed (module docstring)."""
    index = {name: i for i, name in enumerate(players)}
    if len(index) != len(players):
        raise ValueError(f"player names must be unique, got {list(players)!r}")
    if anchor not in index:
        raise ValueError(f"anchor {anchor!r} is not one of the players {list(players)!r}")
    if prior_draws < 0:
        raise ValueError(f"prior_draws must be non-negative, got {prior_draws!r}")
    for r in results:
        for name in (r.a, r.b):
            if name not in index:
                raise ValueError(f"result names unknown player {name!r}")
    _check_connected(players, results, anchor)

    a = np.array([index[r.a] for r in results], dtype=np.int64)
    b = np.array([index[r.b] for r in results], dtype=np.int64)
    n = np.array([r.games for r in results], dtype=np.float64) + prior_draws
    s = np.array([r.points_a for r in results], dtype=np.float64) + prior_draws / 2.0
    free = np.array([i for i in range(len(players)) if i != index[anchor]], dtype=np.int64)
    ratings = np.full(len(players), float(anchor_rating))

    def log_likelihood(r: np.ndarray) -> float:
        d = ELO_SCALE * (r[a] - r[b])
        # log p = -log(1 + e^-d), log(1-p) = -log(1 + e^d), computed stably
        return float(np.sum(-s * np.logaddexp(0.0, -d) - (n - s) * np.logaddexp(0.0, d)))

    iterations = 0
    current = log_likelihood(ratings)
    hessian = np.zeros((len(players), len(players)))
    for iterations in range(1, max_iterations + 1):  # noqa: B007 (count is reported)
        gradient, hessian = _derivatives(ratings, a, b, n, s, len(players))
        g, h = gradient[free], hessian[np.ix_(free, free)]
        if len(free) == 0:
            break
        step = np.linalg.solve(h, -g)
        scale = 1.0
        while True:
            trial = ratings.copy()
            trial[free] += scale * step
            value = log_likelihood(trial)
            if value >= current - 1e-12 or scale < 1e-6:
                break
            scale /= 2.0
        ratings, previous, current = trial, current, value
        if float(np.max(np.abs(scale * step))) < tolerance or abs(current - previous) < 1e-15:
            break
    _, hessian = _derivatives(ratings, a, b, n, s, len(players))
    stderr = np.zeros(len(players))
    if len(free):
        covariance = np.linalg.inv(-hessian[np.ix_(free, free)])
        stderr[free] = np.sqrt(np.clip(np.diag(covariance), 0.0, None))
    return FittedRatings(
        ratings={name: float(ratings[i]) for name, i in index.items()},
        stderr={name: float(stderr[i]) for name, i in index.items()},
        anchor=anchor,
        anchor_rating=float(anchor_rating),
        iterations=iterations,
    )


def _derivatives(
    r: np.ndarray, a: np.ndarray, b: np.ndarray, n: np.ndarray, s: np.ndarray, size: int
) -> tuple[np.ndarray, np.ndarray]:
    p = 1.0 / (1.0 + np.exp(-ELO_SCALE * (r[a] - r[b])))
    g_pair = ELO_SCALE * (s - n * p)
    w = ELO_SCALE**2 * n * p * (1.0 - p)
    gradient = np.zeros(size)
    np.add.at(gradient, a, g_pair)
    np.add.at(gradient, b, -g_pair)
    hessian = np.zeros((size, size))
    np.add.at(hessian, (a, a), -w)
    np.add.at(hessian, (b, b), -w)
    np.add.at(hessian, (a, b), w)
    np.add.at(hessian, (b, a), w)
    return gradient, hessian


def _check_connected(players: Sequence[str], results: Sequence[PairingResult], anchor: str) -> None:
    links: dict[str, set[str]] = {p: set() for p in players}
    for r in results:
        if r.games > 0:
            links[r.a].add(r.b)
            links[r.b].add(r.a)
    seen, stack = {anchor}, [anchor]
    while stack:
        for other in links[stack.pop()] - seen:
            seen.add(other)
            stack.append(other)
    missing = [p for p in players if p not in seen]
    if missing:
        raise ValueError(f"players {missing} have no games linking them to the anchor {anchor!r}")
