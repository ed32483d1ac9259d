"""The campaign's resignation phase reads a generation's shards: exactly the
finished continuation games reach the calibrator (not continuation games cut
at the ply cap, not ordinary games), each shard is read once, and the state
it writes says so. Shards with no such game are skipped before records are
built; the test checks the result equals building every record."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from test_materialize import capped_game, fools_mate

from chesszero.campaign import learn_stage
from chesszero.campaign.context import Campaign
from chesszero.config import REPO_ROOT
from chesszero.selfplay.actor import resign_probes
from chesszero.selfplay.records import read_records, write_shard


def test_only_finished_continuation_games_calibrate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "params.yaml").write_text((REPO_ROOT / "params.yaml").read_text())
    campaign = Campaign.open(tmp_path, "c", preset="smoke")
    rng = np.random.default_rng(3)

    def cont(rec, game_id):  # a continuation game (never resigns) of the same moves
        return dataclasses.replace(rec, game_id=game_id, is_continuation=True)

    shards = [
        write_shard([fools_mate(rng, "plain")], tmp_path / "s0.parquet"),  # no evidence
        write_shard([cont(fools_mate(rng), "c1"), fools_mate(rng, "p2")], tmp_path / "s1.parquet"),
        write_shard([cont(capped_game(rng), "cap")], tmp_path / "s2.parquet"),  # cut: no result
        write_shard([cont(fools_mate(rng), "c3"), cont(capped_game(rng), "cap2"),
                     cont(fools_mate(rng), "c4")], tmp_path / "s3.parquet"),
    ]
    monkeypatch.setattr(learn_stage, "shard_files", lambda paths, generation: shards)
    learn_stage.recalibrate_resignation(campaign, 5)
    calibrator, seen, published_for = learn_stage.load_resign(campaign)
    assert seen == {s.name for s in shards} and published_for == 5

    # The same games fed by hand from every record of every shard.
    expected, _, _ = learn_stage.load_resign(Campaign.open(tmp_path, "other", preset="smoke"))
    fed = []
    for shard in shards:
        for rec in read_records(shard):
            if rec.is_continuation and rec.termination != "ply_cap":
                expected.record_game(resign_probes(rec), {"1-0": True, "0-1": False}.get(rec.result))
                fed.append(rec.game_id)
    assert fed == ["c1", "c3", "c4"]
    assert len(calibrator.games) == 3
    assert list(calibrator.games) == list(expected.games)  # the same summaries, in order

    # A second call for the same generation reads nothing again.
    monkeypatch.setattr(learn_stage, "shard_files", lambda paths, generation: pytest.fail("read again"))
    learn_stage.recalibrate_resignation(campaign, 5)
