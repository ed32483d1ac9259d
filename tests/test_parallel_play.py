"""Work that runs side by side in the campaign process: the self-play actors
of ``--no-prefect`` (``dispatch.run_actors_here``, threads with the flow's
bounded retries) and the ladder matches of one evaluation
(``evaluate.parallel_matches``), whose games must not depend on it."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest
from campaign_support import make_root

from chesszero.campaign import dispatch
from chesszero.campaign.actor_dispatch import ActorFailure
from chesszero.campaign.context import Campaign
from chesszero.campaign.eval_stage import match_workers, rate_model
from chesszero.campaign.selfplay_stage import ActorJob


@dataclass
class FakeSummary:
    positions: int


def jobs(count: int) -> list[ActorJob]:
    return [ActorJob("/nowhere", "unit", "smoke", actor=i, generation=3, positions=10 * (i + 1), artifact="a.onnx",
                     model_id="gen0002", resign_threshold=None) for i in range(count)]


def test_local_actors_play_at_the_same_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # each fake actor waits for the other: one after another, the first would time out
    together = threading.Barrier(2, timeout=60)

    def actor(job: ActorJob) -> list[FakeSummary]:
        together.wait()
        return [FakeSummary(job.positions)]

    monkeypatch.setattr(dispatch, "run_actor_job", actor)
    written: list[int] = []
    dispatch.run_actors_here(jobs(2), written.append)
    assert sorted(written) == [10, 20]


def test_a_local_actor_that_fails_once_is_played_again(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: dict[int, int] = {}

    def flaky(job: ActorJob) -> list[FakeSummary]:
        calls[job.actor] = calls.get(job.actor, 0) + 1
        if job.actor == 1 and calls[1] == 1:
            raise OSError("disk hiccup")
        return [FakeSummary(job.positions)]

    monkeypatch.setattr(dispatch, "run_actor_job", flaky)
    written: list[int] = []
    dispatch.run_actors_here(jobs(2), written.append, attempts=2)
    assert sorted(written) == [10, 20] and calls == {0: 1, 1: 2}


def test_a_local_actor_that_keeps_failing_stops_the_campaign_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(job: ActorJob) -> list[FakeSummary]:
        raise RuntimeError(f"actor {job.actor} cannot load its artifact")

    monkeypatch.setattr(dispatch, "run_actor_job", broken)
    with pytest.raises(ActorFailure, match=r"actor 0 .*2 of 2 allowed attempts.*this process \(thread\)") as err:
        dispatch.run_actors_here(jobs(1), lambda n: None, attempts=2)
    assert "cannot load its artifact" in str(err.value)


def test_an_interrupted_wait_does_not_wait_for_the_actors_still_playing(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()

    def actor(job: ActorJob) -> list[FakeSummary]:
        if job.actor == 1:
            release.wait()  # still playing when the campaign is stopped
        return [FakeSummary(job.positions)]

    def interrupt(n: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(dispatch, "run_actor_job", actor)
    outcome: list[BaseException] = []

    def campaign() -> None:
        try:
            dispatch.run_actors_here(jobs(2), interrupt)
        except BaseException as exc:  # noqa: BLE001 - recorded for the assertion
            outcome.append(exc)

    waiting = threading.Thread(target=campaign, daemon=True)
    waiting.start()
    waiting.join(timeout=60)
    try:
        assert not waiting.is_alive() and isinstance(outcome[0], KeyboardInterrupt)
    finally:
        release.set()


def test_no_jobs_is_no_work() -> None:
    dispatch.run_actors_here([], lambda n: pytest.fail("nothing was played"))


def test_match_workers() -> None:
    assert match_workers(1, 4) == 1
    assert match_workers(3, 2) == 2  # never more than the matches
    assert match_workers(4, 0) == 1
    assert 1 <= match_workers(0, 64) <= 64  # one per usable CPU
    with pytest.raises(ValueError, match="parallel_matches"):
        match_workers(-1, 2)


def games(out_dir: Path, label: str, rung: str) -> list[dict[str, object]]:
    return json.loads((out_dir / f"{label}_vs_{rung}.json").read_text())["games"]


def test_matches_side_by_side_play_the_same_games(tmp_path: Path, published_on_cpu) -> None:
    c = Campaign.open(make_root(tmp_path / "root"), "unit", preset="smoke")
    artifact = str(published_on_cpu.int8.path)
    rated = {}
    for workers in (1, 2):
        c.cfg = c.cfg.model_copy(update={"evaluate": c.cfg.evaluate.model_copy(
            update={"parallel_matches": workers, "openings": 2})})
        rated[workers] = rate_model(c, artifact, 8, tmp_path / f"w{workers}", "searched", ["random", "greedy"])
    assert rated[1]["scores"] == rated[2]["scores"]
    assert list(rated[2]["scores"]) == ["random", "greedy"]  # in the order asked
    assert rated[1]["joint"].to_dict() == rated[2]["joint"].to_dict()
    for rung in ("random", "greedy"):
        first, second = games(tmp_path / "w1", "searched", rung), games(tmp_path / "w2", "searched", rung)
        assert len(first) == 4 and first == second


def test_the_final_evaluation_climbs_side_by_side_and_plays_the_same_games(tmp_path: Path, published_on_cpu) -> None:
    import sys

    from campaign_support import REPO

    sys.path.insert(0, str(REPO / "benchmarks"))
    from learning_final import CONTROL, FINAL, Arm, FinalSettings, final_evaluation

    artifact = Path(published_on_cpu.int8.path)
    out = {}
    for workers in (1, 2):
        settings = FinalSettings(arms=(Arm(FINAL, artifact), Arm(CONTROL, artifact)),
                                 ladder=REPO / "data" / "ladder.json",
                                 openings_file=REPO / "data" / "openings" / "openings.epd",
                                 games_dir=tmp_path / f"w{workers}", openings=1, visits=8,
                                 order=("random", "greedy"), max_plies=60, resamples=200, workers=workers)
        out[workers] = final_evaluation(settings)
    drop = {"seconds"}
    rows = {w: [{k: v for k, v in m.to_dict().items() if k not in drop} for m in e.matches] for w, e in out.items()}
    assert rows[1] == rows[2]  # the same matches, in the serial order
    assert [(m["arm"], m["mode"]) for m in rows[2]][:1] == [(FINAL, "policy")]
    assert out[1].joint == out[2].joint
    for name in ("final_searched_vs_random.json", "control_policy_vs_greedy.json"):
        first = json.loads((tmp_path / "w1" / name).read_text())["games"]
        assert first == json.loads((tmp_path / "w2" / name).read_text())["games"]
