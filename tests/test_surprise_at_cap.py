"""Ingest reports the share of a generation's new rows whose policy surprise
reaches ``replay.surprise_cap``: near 1, the surprise sampler draws almost
uniformly (docs/learning.md, "The surprise sampler is flat under the Gumbel
root"). The share is checked against the rows converted independently."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from test_quarantine import GEN, _shards

from chesszero.campaign import learn_stage
from chesszero.campaign.context import Campaign
from chesszero.campaign.progress import summary_table
from chesszero.config import REPO_ROOT
from chesszero.replay import convert_shard
from chesszero.replay.materialize import target_options_from_config


def _campaign(root: Path, cap: float) -> Campaign:
    root.mkdir(parents=True)
    (root / "params.yaml").write_text((REPO_ROOT / "params.yaml").read_text())
    return Campaign.open(root, "cap", preset="smoke", overrides={"replay.surprise_cap": cap})


@pytest.mark.parametrize("where", ["none", "median", "all"])
def test_the_share_at_the_cap_matches_the_rows(tmp_path: Path, where: str) -> None:
    probe = _campaign(tmp_path / "probe", 2.0)
    shards = _shards(probe, np.random.default_rng(7), {"a": True, "b": True, "c": True})
    options = target_options_from_config(probe.cfg.replay, GEN)
    surprise = np.concatenate([convert_shard(p, options, generation=GEN)["surprise"] for p in shards.values()])
    assert surprise.size == 9 and np.ptp(surprise) > 0  # distinct surprises, so "median" splits them
    cap = {"none": float(surprise.max()) * 2 + 1, "median": float(np.median(surprise)),
           "all": float(surprise.min()) / 2}[where]

    campaign = _campaign(tmp_path / "run", cap)
    _shards(campaign, np.random.default_rng(7), {"a": True, "b": True, "c": True})
    out = learn_stage.ingest(campaign, campaign.load_state(), GEN)
    assert out["rows_added"] == 9
    expected = float((surprise >= cap).mean())
    assert out["surprise_at_cap"] == pytest.approx(expected)
    assert {"none": expected == 0.0, "median": 0 < expected < 1, "all": expected == 1.0}[where]
    # each fool's mate shard has 3 rows, the last with 2...Qh4# on the board; none can stalemate
    assert out["with_mate"] == pytest.approx(1 / 3) and out["with_stalemate"] == 0.0

    again = learn_stage.ingest(campaign, campaign.load_state(), GEN)  # nothing new: no share
    assert again["rows_added"] == 0 and math.isnan(again["surprise_at_cap"])
    assert math.isnan(again["with_mate"]) and math.isnan(again["with_stalemate"])


def test_the_generation_table_shows_the_share() -> None:
    console = Console(record=True, width=100)
    console.print(summary_table(GEN, {"replay/size": 9.0, "replay/surprise_at_cap": 0.62}))
    assert "│   new rows at the surprise cap │ 0.62 │" in console.export_text()
    console.print(summary_table(GEN, {"replay/rows_with_mate": 0.0081, "replay/rows_with_stalemate": 0.0062}))
    text = console.export_text()
    assert "│   new rows with a mating move      │ 0.008 │" in text
    assert "│   new rows with a stalemating move │ 0.006 │" in text
