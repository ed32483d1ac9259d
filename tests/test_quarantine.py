"""A game-record shard that fails validation during a campaign's ingest is
kept aside under rejected/ with its reason and the campaign goes on, until
more than ``campaign.max_rejected_shard_fraction`` of a generation's shards
have failed: then ingest stops, moving nothing further. No rows are lost or
admitted twice, and a resume neither meets the quarantined shard again nor
re-admits the good ones."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from test_materialize import _bad_frame, fools_mate

from chesszero.campaign import learn_stage
from chesszero.campaign.context import Campaign
from chesszero.campaign.launch import campaign_status
from chesszero.campaign.progress import summary_table
from chesszero.campaign.quarantine import TooManyRejectedShards, rejected_shards
from chesszero.campaign.selfplay_stage import ActorSummary, shard_files
from chesszero.config import REPO_ROOT
from chesszero.replay import ReplayStore
from chesszero.selfplay.records import write_shard

GEN = 3  # the generation test_materialize's records carry


def _campaign(root: Path, fraction: float) -> Campaign:
    (root / "params.yaml").write_text((REPO_ROOT / "params.yaml").read_text())
    return Campaign.open(root, "q", preset="smoke",
                         overrides={"campaign.max_rejected_shard_fraction": fraction})


def _with_sidecar(path: Path, actor: int) -> Path:
    summary = ActorSummary(shard=str(path), actor=actor, games=1, positions=3, searches=3, seconds=0.1,
                           terminations={"checkmate": 1}, label="test")
    path.with_name(f"{path.name}.json").write_text(json.dumps(dataclasses.asdict(summary)))
    return path


def _shards(campaign: Campaign, rng: np.random.Generator, names: dict[str, bool]) -> dict[str, Path]:
    """Shards of generation GEN by name; False: one whose last move is not mate."""
    folder = campaign.paths.shards(GEN)
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for i, (name, good) in enumerate(names.items()):
        path = folder / f"{name}.parquet"
        if good:
            write_shard([fools_mate(rng, name)], path)
        else:
            _bad_frame(folder, path.name, fools_mate(rng, name), moves=["e7e5", "g2g4", "d8g5"])
        out[name] = _with_sidecar(path, i)
    return out


def test_a_bad_shard_is_kept_aside_and_the_good_ones_land_once(tmp_path: Path) -> None:
    campaign = _campaign(tmp_path, 0.5)
    shards = _shards(campaign, np.random.default_rng(5), {"a": True, "bad": False, "c": True})
    state = campaign.load_state()

    out = learn_stage.ingest(campaign, state, GEN)
    assert out["rows_added"] == 6 and out["total_appended"] == 6  # 3 searched plies per good shard
    [rejected] = out["rejected"]
    assert rejected.shard == "shards/gen_0003/bad.parquet" and "no game end" in rejected.reason
    kept = campaign.paths.dir / rejected.kept_at
    assert kept.exists() and kept.with_name("bad.parquet.json").exists()  # the shard and its sidecar
    assert not shards["bad"].exists() and not shards["bad"].with_name("bad.parquet.json").exists()
    assert json.loads(kept.with_name("bad.parquet.reason.json").read_text())["reason"] == rejected.reason
    assert [p.name for p in shard_files(campaign.paths, GEN)] == ["a.parquet", "c.parquet"]
    assert sorted(Path(s).name for s in state.admitted_shards) == ["a.parquet", "c.parquet"]
    assert state.counters.rows_admitted == 6

    # A resume (the phase reruns): nothing admitted twice, the bad shard not met again.
    again = learn_stage.ingest(campaign, campaign.load_state(), GEN)
    assert again["rows_added"] == 0 and again["total_appended"] == 6
    assert rejected_shards(campaign.paths, GEN) == [rejected]
    with ReplayStore.open(campaign.paths.replay, readonly=True) as store:
        assert store.total_appended == 6

    status = campaign_status(preset="smoke", name="q", root=tmp_path)
    assert status["rejected_shards"] == [dataclasses.asdict(rejected)]

    console = Console(record=True, width=100)
    console.print(summary_table(GEN, {"replay/shards_rejected": 1.0, "replay/size": 6.0}))
    assert "│ shards quarantined (rejected/) │ 1 │" in console.export_text()


def test_too_many_bad_shards_stop_the_run_and_move_nothing_more(tmp_path: Path) -> None:
    campaign = _campaign(tmp_path, 0.5)
    shards = _shards(campaign, np.random.default_rng(6), {"a": True, "b1": False, "b2": False})
    state = campaign.load_state()
    with pytest.raises(TooManyRejectedShards, match=r"2 of generation 3's 3 .*max_rejected_shard_fraction = 0.5"
                       r".*b2.parquet stays where it is.*b1.parquet: .*no game end"):
        learn_stage.ingest(campaign, state, GEN)
    assert not shards["b1"].exists()  # the first fit under the limit and is kept aside
    assert shards["b2"].exists() and shards["b2"].with_name("b2.parquet.json").exists()  # left for a look
    assert [r.shard for r in rejected_shards(campaign.paths, GEN)] == ["shards/gen_0003/b1.parquet"]
    assert [Path(s).name for s in state.admitted_shards] == ["a.parquet"]  # appended before the stop

    # Fixing the shard by hand and resuming admits it and nothing twice.
    write_shard([fools_mate(np.random.default_rng(7), "b2")], shards["b2"])
    out = learn_stage.ingest(campaign, campaign.load_state(), GEN)
    assert out["rows_added"] == 3 and out["total_appended"] == 6


def test_fraction_zero_stops_at_the_first_bad_shard(tmp_path: Path) -> None:
    campaign = _campaign(tmp_path, 0.0)
    shards = _shards(campaign, np.random.default_rng(8), {"bad": False, "good": True})  # in that order
    with pytest.raises(TooManyRejectedShards, match="1 of generation 3's 2"):
        learn_stage.ingest(campaign, campaign.load_state(), GEN)
    assert shards["bad"].exists() and not (campaign.paths.dir / "rejected").exists()
    with ReplayStore.open(campaign.paths.replay, readonly=True) as store:
        assert store.total_appended == 0  # the stop comes before the later good shard


def test_the_fraction_is_validated(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_rejected_shard_fraction"):
        _campaign(tmp_path, 1.0)


def test_the_materialize_phase_reports_the_quarantine_to_mlflow(tmp_path: Path) -> None:
    from chesszero.campaign import runner
    from chesszero.campaign.state import Phase

    campaign = _campaign(tmp_path, 0.5)
    _shards(campaign, np.random.default_rng(9), {"a": True, "bad": False})
    state = campaign.load_state()
    state.uid = "quarantine-test"
    state.mlflow_run_id = campaign.tracker(None, uid=state.uid).run_id
    state.generation, state.phase = GEN, Phase.MATERIALIZE
    campaign.save_state(state)

    metrics = runner.materialize(campaign)
    assert metrics["replay/shards_rejected"] == 1 and metrics["replay/admitted_total"] == 3
    assert 0.0 <= metrics["replay/surprise_at_cap"] <= 1.0  # tests/test_surprise_at_cap.py checks its value
    tracker = runner.tracker(campaign, campaign.load_state())
    assert tracker.has_artifact("rejected/gen_0003/bad.parquet.reason.json")
    logged = tracker.client.get_metric_history(tracker.run_id, "replay/shards_rejected")
    assert [(m.step, m.value) for m in logged] == [(GEN, 1.0)]
    assert campaign.load_state().phase is Phase.TRAIN
