"""Resignation calibrator (chesszero.selfplay.resign): bound math, triggers, policy."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from chesszero.selfplay.resign import (
    THRESHOLDS,
    ResignCalibrator,
    ResignProbe,
    clopper_pearson_upper,
    summarize_game,
)


def index(t: float) -> int:
    return THRESHOLDS.index(t)


def test_thresholds_span_the_contract() -> None:
    assert THRESHOLDS[0] == -0.99 and THRESHOLDS[-1] == -0.70 and len(THRESHOLDS) == 30
    assert all(math.isclose(b - a, 0.01) for a, b in zip(THRESHOLDS, THRESHOLDS[1:], strict=False))


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=1, max_value=2000), st.data())
def test_upper_bound_matches_beta_quantile(trials: int, data: st.DataObject) -> None:
    failures = data.draw(st.integers(min_value=0, max_value=trials - 1))
    expected = stats.beta.ppf(0.95, failures + 1, trials - failures)
    assert clopper_pearson_upper(failures, trials) == pytest.approx(expected, rel=1e-7, abs=1e-12)


@pytest.mark.parametrize(
    ("failures", "trials"), [(0, 100), (1, 100), (2, 150), (5, 400), (30, 2000)]
)
def test_upper_bound_solves_the_binomial_tail(failures: int, trials: int) -> None:
    """Exact sum: P(X <= failures) at the bound is 5%, and larger just below it."""
    u = clopper_pearson_upper(failures, trials)

    def tail(p: float) -> float:
        return sum(
            math.comb(trials, k) * p**k * (1 - p) ** (trials - k) for k in range(failures + 1)
        )

    assert tail(u) == pytest.approx(0.05, rel=1e-6)
    assert tail(u * 0.999) > 0.05


def test_upper_bound_edges() -> None:
    assert clopper_pearson_upper(0, 0) == 1.0
    assert clopper_pearson_upper(7, 7) == 1.0
    assert clopper_pearson_upper(0, 100) == pytest.approx(1 - 0.05 ** (1 / 100))
    with pytest.raises(ValueError, match="failures=5, trials=3"):
        clopper_pearson_upper(5, 3)


def probe(white: bool, root: float, best: float) -> ResignProbe:
    return ResignProbe(white_to_move=white, root_value=root, best_q=best)


def test_trigger_needs_both_values_and_first_firing_side_counts() -> None:
    probes = [
        probe(True, -0.95, -0.50),  # root low but best Q high: no trigger
        probe(False, -0.85, -0.80),  # Black fires for t >= -0.80
        probe(True, -0.97, -0.96),  # White fires for t >= -0.96 (only where Black did not)
    ]
    summary = summarize_game(probes, winner=True)  # White won
    # t in [-0.96, -0.81]: White fired first and White won -> false resignation
    # t >= -0.80: Black fired first (ply 1) and Black lost -> correct
    assert summary[: index(-0.96)] == "-" * index(-0.96)
    assert summary[index(-0.96) : index(-0.80)] == "F" * (index(-0.80) - index(-0.96))
    assert summary[index(-0.80) :] == "R" * (len(THRESHOLDS) - index(-0.80))


def test_draw_makes_every_trigger_false() -> None:
    summary = summarize_game([probe(False, -0.99, -0.99)], winner=None)
    assert summary == "F" * len(THRESHOLDS)


def test_values_out_of_range_are_named() -> None:
    with pytest.raises(ValueError, match="1.5"):
        summarize_game([probe(True, 1.5, 0.0)], winner=None)


def fill(cal: ResignCalibrator, fire_at: float, games: int, false: int) -> None:
    """``games`` games firing (for the loser) at ``fire_at``; ``false`` of them drawn."""
    for g in range(games):
        cal.record_game([probe(True, fire_at, fire_at)], winner=None if g < false else False)


def test_target_is_loosest_threshold_with_enough_clean_triggers() -> None:
    cal = ResignCalibrator()
    fill(cal, -0.95, 150, 0)  # fire at t >= -0.95, never false
    fill(cal, -0.80, 100, 10)  # 10% false once t >= -0.80
    stats_by_t = {s.threshold: s for s in cal.stats()}
    assert stats_by_t[-0.96].triggers == 0
    assert stats_by_t[-0.95].triggers == 150 and stats_by_t[-0.95].qualifies
    assert stats_by_t[-0.80].false_resignations == 10 and not stats_by_t[-0.80].qualifies
    assert cal.target() == -0.81


def test_too_few_triggers_disable_resignation() -> None:
    cal = ResignCalibrator()
    fill(cal, -0.95, 99, 0)
    assert cal.target() is None
    assert cal.publish() is None


def test_the_bound_not_the_rate_decides() -> None:
    # 2 false in 100 is a 2% rate but its 95% upper bound (~6.1%) exceeds 2.5%
    cal = ResignCalibrator()
    fill(cal, -0.90, 100, 2)
    assert cal.target() is None
    fill(cal, -0.90, 400, 0)  # 2 in 500: bound ~1.25%
    assert cal.target() == -0.70


def test_relax_one_step_per_publication_and_tighten_at_once() -> None:
    cal = ResignCalibrator()
    fill(cal, -0.99, 200, 0)
    assert cal.target() == -0.70
    assert cal.publish() == -0.99  # from disabled: first step is the tightest threshold
    assert cal.publish() == -0.98
    assert cal.publish() == -0.97
    fill(cal, -0.97, 2000, 2000)  # window now full of draws that fire: nothing qualifies
    assert cal.target() is None
    assert cal.publish() is None  # tightened (disabled) at once
    assert cal.publications == 4


def test_tightening_jumps_to_a_stricter_target() -> None:
    cal = ResignCalibrator(threshold=-0.75)
    fill(cal, -0.95, 150, 0)
    fill(cal, -0.85, 100, 50)
    assert cal.target() == -0.86
    assert cal.publish() == -0.86


def test_window_keeps_only_the_last_games() -> None:
    cal = ResignCalibrator(window=2000)
    fill(cal, -0.99, 2500, 0)
    assert len(cal.games) == 2000
    assert cal.stats()[0].triggers == 2000


def test_should_resign_uses_published_threshold() -> None:
    cal = ResignCalibrator(threshold=-0.90)
    assert cal.should_resign(-0.95, -0.91)
    assert not cal.should_resign(-0.95, -0.89)
    assert not ResignCalibrator().should_resign(-1.0, -1.0)


def test_state_round_trips_through_json(tmp_path) -> None:
    cal = ResignCalibrator(threshold=-0.93, publications=3)
    fill(cal, -0.92, 10, 3)
    path = tmp_path / "resign.json"
    cal.save(path)
    back = ResignCalibrator.load(path)
    assert back.to_dict() == cal.to_dict()
    assert json.loads(path.read_text())["threshold"] == -0.93


@pytest.mark.parametrize(
    "summary",
    ["R" * 29, "X" * 30, "R" + "-" * 29],  # wrong length, bad char, non-monotone
)
def test_bad_summaries_are_rejected(summary: str) -> None:
    with pytest.raises(ValueError, match="summary"):
        ResignCalibrator().record_summary(summary)


def test_bad_threshold_is_named() -> None:
    with pytest.raises(ValueError, match="-0.5"):
        ResignCalibrator(threshold=-0.5)
