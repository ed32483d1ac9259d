"""Elo arithmetic, bounds and the pentanomial bootstrap (chesszero.evaluate.elo)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chesszero.evaluate.elo import (
    EloEstimate,
    all_or_nothing_bound,
    elo_difference,
    expected_score,
    pentanomial_from_pair_scores,
    rate,
    rate_pairs,
)


@given(st.floats(min_value=1e-6, max_value=1 - 1e-6))
def test_elo_difference_is_antisymmetric(score: float) -> None:
    assert elo_difference(score) == pytest.approx(-elo_difference(1.0 - score), abs=1e-6)


@given(st.floats(min_value=-1500, max_value=1500))
def test_expected_score_inverts_elo_difference(diff: float) -> None:
    assert elo_difference(expected_score(diff)) == pytest.approx(diff, abs=1e-6)


@pytest.mark.parametrize(
    ("score", "diff"),
    [(0.5, 0.0), (10 / 11, 400.0), (1 / 11, -400.0), (0.75, 400 * math.log10(3)), (0.64, 99.95)],
)
def test_known_values(score: float, diff: float) -> None:
    assert elo_difference(score) == pytest.approx(diff, abs=0.01)


@pytest.mark.parametrize("score", [0.0, 1.0, -0.1, 1.5])
def test_elo_difference_rejects_scores_without_finite_elo(score: float) -> None:
    with pytest.raises(ValueError, match="score"):
        elo_difference(score)


def test_point_estimate_adds_anchor() -> None:
    # 3 pairs at 1.5 and 1 at 0.5: score (4.5 + 0.5) / 8 = 0.625
    est = rate((0, 1, 0, 3, 0), anchor=1700, resamples=2000, seed=1)
    assert est.score == pytest.approx(0.625)
    assert est.estimate == pytest.approx(1700 + 400 * math.log10(0.625 / 0.375))
    assert est.lower < est.estimate < est.upper
    assert not est.is_bound
    assert est.games == 8 and est.pairs == 4


def test_symmetric_pentanomials_give_mirrored_intervals() -> None:
    a = rate((3, 5, 20, 9, 4), anchor=0, resamples=4000, seed=7)
    b = rate((4, 9, 20, 5, 3), anchor=0, resamples=4000, seed=7)
    assert a.estimate == pytest.approx(-b.estimate)
    assert a.lower == pytest.approx(-b.upper, abs=25)
    assert a.upper == pytest.approx(-b.lower, abs=25)


@pytest.mark.parametrize("pairs", [1, 10, 50])
def test_zero_score_is_a_finite_upper_bound(pairs: int) -> None:
    est = rate((pairs, 0, 0, 0, 0), anchor=1700)
    assert est.is_bound and est.score == 0.0
    assert math.isfinite(est.estimate)
    assert est.lower == est.upper == est.estimate
    games = 2 * pairs
    # all losses: the 95% upper bound on p solves (1 - p) ** games = 0.05
    p = 1 - 0.05 ** (1 / games)
    assert (1 - p) ** games == pytest.approx(0.05)
    assert est.estimate == pytest.approx(1700 + 400 * math.log10(p / (1 - p)))
    assert est.describe().startswith("< ")
    if pairs >= 10:
        assert est.estimate < 1700 - 300


def test_perfect_score_is_a_finite_lower_bound_mirroring_zero() -> None:
    low = rate((0, 0, 0, 0, 25), anchor=1000)
    high = rate((25, 0, 0, 0, 0), anchor=1000)
    assert low.is_bound and low.score == 1.0 and low.describe().startswith("> ")
    assert low.estimate - 1000 == pytest.approx(1000 - high.estimate)


def test_more_games_tighten_the_bound() -> None:
    assert rate((50, 0, 0, 0, 0), anchor=0).estimate < rate((5, 0, 0, 0, 0), anchor=0).estimate
    assert all_or_nothing_bound(100) < all_or_nothing_bound(10)


def test_interval_is_finite_when_resamples_hit_zero() -> None:
    est = rate((30, 1, 0, 0, 0), anchor=1500, seed=3)
    assert not est.is_bound
    assert all(math.isfinite(v) for v in (est.lower, est.estimate, est.upper))
    assert est.lower <= est.estimate <= est.upper


def test_bootstrap_is_seedable() -> None:
    counts = (2, 6, 10, 7, 5)
    assert rate(counts, anchor=0, seed=11) == rate(counts, anchor=0, seed=11)
    ends = {
        (rate(counts, anchor=0, seed=s).lower, rate(counts, anchor=0, seed=s).upper)
        for s in range(8)
    }
    assert len(ends) > 1


def test_anchor_shifts_everything_but_the_difference() -> None:
    a = rate((2, 6, 10, 7, 5), anchor=0, seed=5)
    b = rate((2, 6, 10, 7, 5), anchor=1234, seed=5)
    for field in ("estimate", "lower", "upper"):
        assert getattr(b, field) - getattr(a, field) == pytest.approx(1234)


def test_bootstrap_interval_covers_the_true_elo() -> None:
    """Simulate matches from a known pentanomial law; ~95% of intervals must cover."""
    rng = np.random.default_rng(2024)
    law = np.array([0.05, 0.15, 0.40, 0.25, 0.15])
    true_score = float(law @ np.array([0, 0.5, 1, 1.5, 2])) / 2
    true_elo = 400 * math.log10(true_score / (1 - true_score))
    trials, covered = 300, 0
    for trial in range(trials):
        counts = rng.multinomial(60, law)
        est = rate(tuple(int(c) for c in counts), anchor=0, resamples=2000, seed=trial)
        covered += est.lower <= true_elo <= est.upper
    assert 0.90 <= covered / trials <= 0.99


def test_pentanomial_counts_pair_scores() -> None:
    assert pentanomial_from_pair_scores([0, 0.5, 1, 1, 2, 1.5]) == (1, 1, 2, 1, 1)
    assert rate_pairs([1.0, 2.0], anchor=0, seed=0) == rate((0, 0, 1, 0, 1), anchor=0, seed=0)


@pytest.mark.parametrize("bad", [[0.25], [2.5], [-0.5]])
def test_bad_pair_score_is_named(bad: list[float]) -> None:
    with pytest.raises(ValueError, match=str(bad[0])):
        pentanomial_from_pair_scores(bad)


@pytest.mark.parametrize("counts", [(0, 0, 0, 0, 0), (1, 2, 3), (1, -1, 0, 0, 0)])
def test_bad_pentanomial_is_rejected(counts: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="pentanomial"):
        rate(counts, anchor=0)


def test_estimate_round_trips_through_dict() -> None:
    est = rate((1, 2, 3, 4, 5), anchor=1700, resamples=500)
    assert EloEstimate.from_dict(est.to_dict()) == est
