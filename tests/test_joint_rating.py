"""Joint maximum-likelihood ladder rating over all rungs (SPEC 10, issue 10)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from chesszero.evaluate.elo import expected_score, rate
from chesszero.evaluate.joint_rating import (
    JointRating,
    RungGames,
    joint_rating,
    joint_rating_of_matches,
)
from chesszero.evaluate.match import GameRecord, MatchResult

SCALE = math.log(10.0) / 400.0
TRUE_RATING = 1500.0
RUNG_RATINGS = {"r1200": 1200.0, "r1400": 1400.0, "r1600": 1600.0, "r1800": 1800.0}
PAIRS = 150
DRAW_SHARE = 0.2


def synthetic_rungs(seed: int, rating: float = TRUE_RATING) -> list[RungGames]:
    """Opening pairs of a player of known ``rating``: each game is drawn with
    probability 0.2 and otherwise won or lost so that its mean is the Elo
    expected score."""
    rng = np.random.default_rng(seed)
    out = []
    for name, r in RUNG_RATINGS.items():
        p = expected_score(rating - r)
        win = p - DRAW_SHARE / 2
        games = rng.choice([1.0, 0.5, 0.0], size=(PAIRS, 2), p=[win, DRAW_SHARE, 1 - win - DRAW_SHARE])
        out.append(RungGames.from_pair_scores(name, r, games.sum(axis=1).tolist()))
    return out


def sampling_sd(rating: float = TRUE_RATING) -> float:
    """Standard deviation of the MLE to first order: it solves sum n p_k(x) = S,
    so x - truth ~ (S - E S) / (c sum n p (1 - p)); with draws a game's score
    has variance p - d/4 - p^2."""
    ps = np.array([expected_score(rating - r) for r in RUNG_RATINGS.values()])
    n = 2 * PAIRS
    var_s = (n * (ps - DRAW_SHARE / 4 - ps**2)).sum()
    return float(math.sqrt(var_s) / (SCALE * (n * ps * (1 - ps)).sum()))


def log_likelihood(x: float, rungs: list[RungGames]) -> float:
    total = 0.0
    for r in rungs:
        p = expected_score(x - r.rating)
        total += r.points * math.log(p) + (r.games - r.points) * math.log(1 - p)
    return total


def test_recovers_a_known_rating_within_its_sampling_error() -> None:
    sd = sampling_sd()
    assert 8 < sd < 14  # 1200 games over four rungs 100-300 Elo away
    for seed in range(3):
        fit = joint_rating(synthetic_rungs(seed), resamples=2000, seed=seed)
        assert not fit.is_bound and fit.interval == "bootstrap"
        assert abs(fit.estimate - TRUE_RATING) < 4 * sd, (seed, fit.describe())
        assert fit.lower < TRUE_RATING < fit.upper, (seed, fit.describe())
        # the bootstrap sees the same spread as the first-order formula
        assert 0.7 < (fit.upper - fit.lower) / (2 * 1.96 * sd) < 1.4, fit.describe()


def test_estimate_is_the_likelihood_maximum() -> None:
    rungs = synthetic_rungs(7)
    fit = joint_rating(rungs, resamples=50)
    best = log_likelihood(fit.estimate, rungs)
    for step in (-5.0, -0.5, 0.5, 5.0):
        assert log_likelihood(fit.estimate + step, rungs) < best


def test_one_rung_is_elo_rate() -> None:
    penta = (2, 3, 5, 6, 4)
    fit = joint_rating([RungGames("a", 1300.0, penta)], resamples=401, seed=3)
    single = rate(penta, 1300.0, resamples=401, seed=3)
    assert fit.estimate == pytest.approx(single.estimate, abs=1e-5)
    assert fit.lower == pytest.approx(single.lower, abs=1e-4)
    assert fit.upper == pytest.approx(single.upper, abs=1e-4)


def test_monotone_in_results() -> None:
    base = [RungGames("a", 1000.0, (2, 3, 4, 3, 2)), RungGames("b", 1400.0, (4, 3, 4, 2, 1))]
    reference = joint_rating(base, resamples=1).estimate
    for k, rung in enumerate(base):
        for b in range(4):  # move one pair from bin b up to bin b + 1
            if rung.pentanomial[b] == 0:
                continue
            penta = list(rung.pentanomial)
            penta[b] -= 1
            penta[b + 1] += 1
            better = list(base)
            better[k] = RungGames(rung.rung, rung.rating, tuple(penta))  # type: ignore[arg-type]
            assert joint_rating(better, resamples=1).estimate > reference, (rung.rung, b)


def test_interval_contains_the_estimate() -> None:
    rng = np.random.default_rng(11)
    for _ in range(20):
        rungs = []
        for i, rating in enumerate(rng.uniform(800, 2000, 3)):
            penta = rng.integers(0, 6, 5)
            penta[2] += 1  # at least one pair, and never a sweep
            rungs.append(RungGames(f"r{i}", float(rating), tuple(int(c) for c in penta)))  # type: ignore[arg-type]
        fit = joint_rating(rungs, resamples=500)
        assert not fit.is_bound
        assert fit.lower < fit.estimate < fit.upper, fit.describe()


def test_all_won_is_a_lower_bound_never_a_point() -> None:
    sweep = RungGames("a", 1200.0, (0, 0, 0, 0, 10))
    fit = joint_rating([sweep])
    single = rate(sweep.pentanomial, 1200.0)
    assert fit.is_bound and fit.direction == ">" and fit.interval == "one-sided"
    assert fit.estimate == pytest.approx(single.estimate, abs=1e-4)  # Clopper-Pearson, one rung
    assert fit.lower == fit.estimate and fit.upper == math.inf
    assert fit.describe().startswith(f"joint > {fit.estimate:.0f} over a")

    other = RungGames("b", 1100.0, (0, 0, 0, 0, 6))
    both = joint_rating([sweep, other])
    rung_wise = max(joint_rating([r]).estimate for r in (sweep, other))
    assert both.direction == ">" and both.estimate > rung_wise
    # exact: winning every game has probability 1 - confidence at the bound
    log_p = sum(r.games * math.log(expected_score(both.estimate - r.rating)) for r in (sweep, other))
    assert log_p == pytest.approx(math.log(0.05), abs=1e-6)


def test_all_lost_is_an_upper_bound_never_a_point() -> None:
    rungs = [RungGames("a", 1200.0, (7, 0, 0, 0, 0)), RungGames("b", 1500.0, (3, 0, 0, 0, 0))]
    fit = joint_rating(rungs)
    assert fit.is_bound and fit.direction == "<"
    assert fit.upper == fit.estimate and fit.lower == -math.inf
    assert fit.estimate < min(joint_rating([r]).estimate for r in rungs) < 1200.0
    log_p = sum(r.games * math.log(1 - expected_score(fit.estimate - r.rating)) for r in rungs)
    assert log_p == pytest.approx(math.log(0.05), abs=1e-6)
    assert fit.describe().startswith("joint < ")
    data = fit.to_dict()
    assert data["lower"] is None and data["upper"] == fit.estimate and data["direction"] == "<"


def test_wins_against_one_rung_and_losses_against_another_give_a_finite_rating() -> None:
    rungs = [RungGames("weak", 1000.0, (0, 0, 0, 0, 10)), RungGames("strong", 1400.0, (10, 0, 0, 0, 0))]
    fit = joint_rating(rungs)
    assert not fit.is_bound
    assert fit.estimate == pytest.approx(1200.0, abs=1e-5)  # by symmetry
    # every resample is the same: the likelihood-ratio interval, never zero width
    assert fit.interval == "likelihood ratio"
    assert fit.lower < 1200.0 - 50 and fit.upper > 1200.0 + 50
    drop = log_likelihood(fit.estimate, rungs) - 1.959964**2 / 2
    assert log_likelihood(fit.lower, rungs) == pytest.approx(drop, abs=1e-5)
    assert log_likelihood(fit.upper, rungs) == pytest.approx(drop, abs=1e-5)
    assert "likelihood ratio interval" in fit.describe()

    # one draw among the wins is enough for a finite estimate too; a third of
    # the resamples are sweeps, clamped half a game inside as in elo.rate, so
    # the upper end is the estimate itself (elo.rate gives the same)
    mixed = joint_rating([RungGames("weak", 1000.0, (0, 0, 0, 1, 9))])
    assert not mixed.is_bound and mixed.lower < mixed.estimate <= mixed.upper
    assert mixed.upper == pytest.approx(rate((0, 0, 0, 1, 9), 1000.0).upper, abs=1e-4)


def test_seeded_bootstrap_is_reproducible() -> None:
    rungs = synthetic_rungs(1)
    a = joint_rating(rungs, resamples=300, seed=5)
    b = joint_rating(rungs, resamples=300, seed=5)
    c = joint_rating(rungs, resamples=300, seed=6)
    assert a == b
    assert (a.lower, a.upper) != (c.lower, c.upper) and a.estimate == c.estimate


def _match(pair_scores: list[float]) -> MatchResult:
    games = []
    split = {0.0: (0.0, 0.0), 0.5: (0.5, 0.0), 1.0: (1.0, 0.0), 1.5: (1.0, 0.5), 2.0: (1.0, 1.0)}
    for pair, total in enumerate(pair_scores):
        for k, score in enumerate(split[total]):
            result = {1.0: "1-0", 0.5: "1/2-1/2", 0.0: "0-1"}[score]
            games.append(GameRecord(index=2 * pair + k, opening_id=f"o{pair}", first_is_white=True,
                                    start_fen="", moves=(), book_plies=0, result=result,
                                    termination="checkmate", score=score))
    return MatchResult(first="model", second="rung", max_plies=300, started="", finished="", games=games)


def test_rating_from_matches_uses_each_rungs_rating() -> None:
    matches = {"random": _match([2.0, 1.5, 2.0, 1.0]), "greedy": _match([0.5, 1.0, 0.0, 1.5])}
    ratings = {"random": 400.0, "greedy": 900.0, "unused": 2000.0}
    fit = joint_rating_of_matches(matches, ratings, resamples=200)
    direct = joint_rating(
        [RungGames("random", 400.0, (0, 0, 1, 1, 2)), RungGames("greedy", 900.0, (1, 1, 1, 1, 0))],
        resamples=200,
    )
    assert isinstance(fit, JointRating) and fit == direct
    assert fit.rung_names == ("random", "greedy") and fit.games == 16
    assert 400.0 < fit.estimate < 900.0


def test_bad_input_is_named() -> None:
    with pytest.raises(ValueError, match="no rungs"):
        joint_rating([])
    with pytest.raises(ValueError, match="'a'"):
        joint_rating([RungGames("a", 1000.0, (1, 0, 0, 0, 0)), RungGames("a", 1100.0, (1, 0, 0, 0, 0))])
    with pytest.raises(ValueError, match="rung 'x'.*nan"):
        RungGames("x", float("nan"), (1, 0, 0, 0, 0))
    with pytest.raises(ValueError, match=r"rung 'x'.*\[0, 0, 0, 0, 0\]"):
        RungGames("x", 1000.0, (0, 0, 0, 0, 0))
    with pytest.raises(ValueError, match="rung 'x'.*0.7"):
        RungGames.from_pair_scores("x", 1000.0, [1.0, 0.7])
    with pytest.raises(ValueError, match="greedy"):
        joint_rating_of_matches({"greedy": _match([1.0])}, {"random": 400.0})
    with pytest.raises(ValueError, match="confidence"):
        joint_rating([RungGames("a", 1000.0, (1, 1, 0, 0, 0))], confidence=1.0)
    with pytest.raises(ValueError, match="resamples"):
        joint_rating([RungGames("a", 1000.0, (1, 1, 0, 0, 0))], resamples=0)


def test_campaign_metrics_leave_out_the_open_side_of_a_bound() -> None:
    from chesszero.campaign import metrics as M
    from chesszero.campaign.eval_stage import joint_metrics

    swept = joint_rating([RungGames("a", 1200.0, (0, 0, 0, 0, 10))])
    assert joint_metrics(M.joint_elo_key, "searched", swept) == {
        "elo_joint/searched": swept.estimate,
        "elo_joint/searched_lo": swept.estimate,
        "elo_joint/searched_bound": 1.0,
    }
    lost = joint_rating([RungGames("a", 1200.0, (10, 0, 0, 0, 0))])
    assert joint_metrics(M.budget_joint_key, 64, lost) == {
        "budget_joint/64": lost.estimate,
        "budget_joint/64_hi": lost.estimate,
        "budget_joint/64_bound": -1.0,
    }
    point = joint_rating(synthetic_rungs(2), resamples=100)
    assert joint_metrics(M.joint_elo_key, "policy", point) == {
        "elo_joint/policy": point.estimate,
        "elo_joint/policy_lo": point.lower,
        "elo_joint/policy_hi": point.upper,
        "elo_joint/policy_bound": 0.0,
    }
