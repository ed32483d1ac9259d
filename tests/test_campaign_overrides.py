"""Recipe overrides given when a campaign starts (``campaign run --set``) are
stored with it and apply to every later open (stages, Prefect tasks, resume)."""

from __future__ import annotations

from pathlib import Path

import pytest
from campaign_support import make_root

from chesszero.campaign.context import Campaign
from chesszero.cli import build_parser


def test_overrides_are_kept_with_the_campaign(tmp_path: Path) -> None:
    root = make_root(tmp_path / "root")
    sets = {"search.root": "gumbel", "selfplay.full_search_fraction": 0.5}
    first = Campaign.open(root, "abl", preset="smoke", overrides=sets)
    assert first.cfg.search.root.value == "gumbel" and first.overrides == sets
    assert not first.paths.dir.exists()  # opening alone writes nothing
    first.keep_overrides()  # as `campaign run --set` does before any stage
    again = Campaign.open(root, "abl", preset="smoke")  # a stage or a resume: no --set
    assert again.cfg.search.root.value == "gumbel" and again.cfg.selfplay.full_search_fraction == 0.5
    again.write_config()
    assert '"overrides"' in again.paths.config.read_text()
    with pytest.raises(ValueError, match="was started with overrides"):
        Campaign.open(root, "abl", preset="smoke", overrides={"search.root": "puct"})
    plain = Campaign.open(root, "plain", preset="smoke")
    assert plain.cfg.search.root.value == "puct" and not plain.paths.overrides.exists()


def test_campaign_run_parses_set() -> None:
    args = build_parser().parse_args(["campaign", "run", "--preset", "smoke", "--set", "search.root=gumbel",
                                      "--set", "selfplay.fast_visits=6"])
    assert args.set == ["search.root=gumbel", "selfplay.fast_visits=6"]


def test_a_campaign_from_before_the_new_keys_resumes_while_they_are_off(tmp_path: Path) -> None:
    import json

    root = make_root(tmp_path / "root")
    campaign = Campaign.open(root, "old", preset="smoke")
    campaign.paths.dir.mkdir(parents=True)
    campaign.write_config()
    data = json.loads(campaign.paths.config.read_text())
    for section, key in (("search", "root"), ("search", "gumbel"), ("selfplay", "full_search_fraction"),
                         ("selfplay", "fast_visits"), ("evaluate", "adaptive_rungs")):
        del data["recipe"][section][key]  # as written before these settings existed
    for key in ("mate_rows", "stalemate_rows"):
        del data["recipe"]["train"]["loss_weights"][key]
    campaign.paths.config.write_text(json.dumps(data))
    Campaign.open(root, "old", preset="smoke")  # the old design: resumes
    for on, key in (({"search.root": "gumbel"}, "search.root"),
                    ({"selfplay.full_search_fraction": 0.5}, "selfplay.full_search_fraction"),
                    ({"evaluate.adaptive_rungs": 2}, "evaluate.adaptive_rungs"),
                    ({"train.loss_weights.mate_rows": 4.0}, "train.loss_weights.mate_rows"),
                    ({"train.loss_weights.stalemate_rows": 4.0}, "train.loss_weights.stalemate_rows")):
        with pytest.raises(ValueError, match=f"changed keys: {key}"):
            Campaign.open(root, "old", preset="smoke", overrides=on)

