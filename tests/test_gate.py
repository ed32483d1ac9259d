"""Promotion gate state machine (chesszero.evaluate.gate)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chesszero.evaluate.gate import GateState, MatchStatus, PromotionGate


def gate() -> PromotionGate:
    return PromotionGate(candidate="gen-12", active="gen-10")


def test_two_consecutive_passes_promote() -> None:
    g = gate()
    assert g.record("m1", score=0.48) is GateState.PENDING
    assert g.passes == 1
    assert g.record("m2", score=0.61) is GateState.PROMOTED
    assert g.promoted


def test_a_failure_resets_the_count() -> None:
    g = gate()
    g.record("m1", score=0.55)
    g.record("m2", score=0.479)
    assert g.passes == 0 and not g.promoted
    g.record("m3", score=0.5)
    assert not g.promoted
    g.record("m4", score=0.5)
    assert g.promoted


@pytest.mark.parametrize("status", [MatchStatus.CANCELLED, MatchStatus.ERRORED])
def test_cancelled_or_errored_matches_do_not_count(status: MatchStatus) -> None:
    g = gate()
    g.record("m1", score=0.6)
    g.record("m2", status=status, score=0.0)  # score ignored: neither pass nor reset
    assert g.passes == 1
    assert g.history[-1].score is None and g.history[-1].passed is None
    assert g.record("m3", score=0.6) is GateState.PROMOTED


def test_promoted_gate_refuses_more_matches() -> None:
    g = gate()
    g.record("m1", score=1.0)
    g.record("m2", score=1.0)
    with pytest.raises(ValueError, match="m3"):
        g.record("m3", score=1.0)


def test_duplicate_match_id_is_rejected() -> None:
    g = gate()
    g.record("m1", score=0.2)
    with pytest.raises(ValueError, match="m1"):
        g.record("m1", score=0.9)


@pytest.mark.parametrize("score", [None, -0.1, 1.2, float("nan")])
def test_completed_match_needs_a_valid_score(score: float | None) -> None:
    with pytest.raises(ValueError, match="score"):
        gate().record("m1", score=score)


def test_new_candidate_starts_over() -> None:
    g = gate()
    g.record("m1", score=0.9)
    g.new_candidate("gen-13")
    assert g.candidate == "gen-13" and g.active == "gen-10"
    assert g.passes == 0 and g.history == [] and g.state is GateState.PENDING


def test_state_round_trips_through_json(tmp_path) -> None:
    g = gate()
    g.record("m1", score=0.5)
    g.record("m2", status=MatchStatus.ERRORED)
    path = tmp_path / "gate.json"
    g.save(path)
    back = PromotionGate.load(path)
    assert back == g
    assert back.record("m3", score=0.5) is GateState.PROMOTED
    assert json.loads(path.read_text())["state"] == "pending"


def test_inconsistent_stored_state_is_rejected() -> None:
    data = gate().to_dict()
    data["state"] = "promoted"
    with pytest.raises(ValueError, match="promoted"):
        PromotionGate.from_dict(data)


@given(st.lists(st.one_of(st.none(), st.floats(min_value=0.0, max_value=1.0)), max_size=30))
def test_promotion_iff_two_consecutive_counted_passes(scores: list[float | None]) -> None:
    """Reference check: None stands for a cancelled match."""
    g = gate()
    run = 0
    for i, score in enumerate(scores):
        if g.promoted:
            break
        if score is None:
            g.record(f"m{i}", status=MatchStatus.CANCELLED)
        else:
            g.record(f"m{i}", score=score)
            run = run + 1 if score >= 0.48 else 0
        assert g.promoted == (run >= 2)
