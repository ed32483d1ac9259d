"""Where a campaign's wall time went: ``phaselog.stage_times`` over the phase log."""

from __future__ import annotations

from pathlib import Path

import pytest

from chesszero.campaign import phaselog
from chesszero.campaign.phaselog import PhaseEvent


def events(*lines: tuple[float, int, int, str, str]) -> list[PhaseEvent]:
    return [PhaseEvent(t, pid, g, stage, event) for t, pid, g, stage, event in lines]


def test_stage_times_sum_finished_spans_and_count_nested_ones_apart() -> None:
    log = events(
        (0.0, 1, 0, "train quantum", "start"), (30.0, 1, 0, "train quantum", "end"),
        (30.0, 1, 0, "materialize", "start"), (31.0, 1, 0, "snapshot", "start"),
        (33.0, 1, 0, "snapshot", "end"), (40.0, 1, 0, "materialize", "end"),
        (40.0, 1, 1, "train quantum", "start"), (70.0, 1, 1, "train quantum", "end"),
        (70.0, 1, 1, "publish", "start"),  # killed here: no end
        (100.0, 2, 1, "publish", "start"), (110.0, 2, 1, "publish", "end"),  # the resumed process
    )
    times = {t.stage: t for t in phaselog.stage_times(log)}
    assert list(times) == ["train quantum", "materialize", "snapshot", "publish"]
    assert times["train quantum"].spans == 2 and times["train quantum"].seconds == 60.0
    assert times["publish"].spans == 1 and times["publish"].seconds == 10.0  # the unfinished span left out
    assert times["snapshot"].nested and times["snapshot"].share is None
    assert times["train quantum"].share == pytest.approx(60.0 / 80.0)
    assert sum(t.share for t in times.values() if not t.nested) == pytest.approx(1.0)
    later = {t.stage: t for t in phaselog.stage_times(log, since_generation=1)}
    assert set(later) == {"train quantum", "publish"} and later["train quantum"].share == pytest.approx(0.75)


def test_stage_times_of_a_logged_campaign(tmp_path: Path) -> None:
    path = tmp_path / "phases.jsonl"
    assert phaselog.stage_times(phaselog.read(path)) == []  # no log yet
    with phaselog.span(path, 0, "evaluate"):
        pass
    (row,) = phaselog.stage_times(phaselog.read(path))
    assert row.stage == "evaluate" and row.spans == 1 and row.share == 1.0
    assert row.to_dict()["nested"] is False


def test_campaign_status_shows_the_time_per_stage(tmp_path: Path) -> None:
    from campaign_support import make_root

    from chesszero.campaign.context import Campaign
    from chesszero.campaign.launch import campaign_status

    root = make_root(tmp_path / "root")
    with pytest.raises(ValueError, match="no campaign 'unit'"):
        campaign_status(preset="smoke", name="unit", root=root)
    c = Campaign.open(root, "unit", preset="smoke")
    c.save_state(c.load_state())
    with phaselog.span(c.paths.phase_log, 0, "train quantum"):
        pass
    status = campaign_status(preset="smoke", name="unit", root=root)
    assert status["generation"] == 0 and [s["stage"] for s in status["stages"]] == ["train quantum"]
