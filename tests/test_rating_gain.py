"""Final minus control (issue 22): the difference of two joint ratings, its
bootstrap interval over both arms' opening pairs, and bounds when either arm
won or lost every game."""

from __future__ import annotations

import math

import pytest

from chesszero.evaluate.joint_rating import RungGames, joint_rating
from chesszero.evaluate.rating_gain import rating_gain

RANDOM, GREEDY, SF30 = ("random", -412.0), ("greedy", 288.0), ("sf-n1-r30", 503.0)


def games(rung: tuple[str, float], pentanomial: tuple[int, int, int, int, int]) -> RungGames:
    return RungGames(rung[0], rung[1], pentanomial)


def test_the_gain_is_the_difference_with_a_bootstrap_interval() -> None:
    final = [games(GREEDY, (1, 3, 10, 16, 20)), games(SF30, (6, 10, 18, 10, 6))]
    control = [games(RANDOM, (2, 4, 10, 14, 20)), games(GREEDY, (20, 14, 10, 4, 2))]
    g = rating_gain(final, control, resamples=2000, seed=1)
    f, c = joint_rating(final, resamples=2000, seed=1), joint_rating(control, resamples=2000, seed=1)
    assert g.direction == "" and not g.is_bound
    assert g.estimate == pytest.approx(f.estimate - c.estimate)
    assert g.lower < g.estimate < g.upper
    # both arms' uncertainty: wider than either arm's own interval
    assert g.upper - g.lower > max(f.upper - f.lower, c.upper - c.lower)
    assert g.describe().startswith(f"{g.estimate:+.0f} [")
    assert rating_gain(final, control, resamples=2000, seed=1) == g  # seeded


def test_a_swept_arm_makes_the_gain_a_bound() -> None:
    final = [games(RANDOM, (0, 0, 0, 0, 50)), games(GREEDY, (0, 0, 0, 0, 50))]  # every game won
    control = [games(RANDOM, (2, 4, 10, 14, 20)), games(GREEDY, (20, 14, 10, 4, 2))]
    g = rating_gain(final, control, resamples=1000)
    assert g.direction == ">" and g.is_bound
    assert g.estimate == pytest.approx(g.final.estimate - g.control.upper) and math.isinf(g.upper)
    assert "final is a bound (>" in g.describe() and g.describe().startswith("> +")
    # a control that lost every game, with a point-rated final: a lower bound again
    lost = [games(RANDOM, (50, 0, 0, 0, 0))]
    g = rating_gain(control, lost, resamples=1000)
    assert g.direction == ">" and g.estimate == pytest.approx(g.final.lower - g.control.estimate)
    assert "control is a bound (<" in g.note()
    # a final that lost everything against a point-rated control: an upper bound
    g = rating_gain(lost, control, resamples=1000)
    assert g.direction == "<" and math.isinf(g.lower)


def test_both_arms_swept_the_same_way_leave_the_gain_undetermined() -> None:
    won = [games(RANDOM, (0, 0, 0, 0, 10))]
    g = rating_gain(won, [games(GREEDY, (0, 0, 0, 0, 10))], resamples=200)
    assert g.direction == "?" and g.describe().startswith("undetermined (final is a bound")
    assert g.to_dict()["estimate"] is None and g.to_dict()["control"]["direction"] == ">"
