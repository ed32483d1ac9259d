"""The campaign's periodic evaluations pick their rungs (issue 22): every
configured rung by default; with ``evaluate.adaptive_rungs`` = k, the k rungs
nearest 0.5 at the previous generation's joint rating of the same mode, read
from the ``ratings.json`` the evaluation writes."""

from __future__ import annotations

import json
from pathlib import Path

from campaign_support import make_root

from chesszero.campaign import metrics as M
from chesszero.campaign.context import Campaign
from chesszero.campaign.eval_stage import RATINGS, nearest_metrics, previous_rating, rungs_for
from chesszero.evaluate.elo import rate
from chesszero.evaluate.joint_rating import RungGames, joint_rating

POOL = ["random", "greedy-r50", "greedy", "sf-n1-r30", "sf-n1-r10", "sf-n1"]


def campaign(tmp: Path, adaptive: int | None) -> Campaign:
    c = Campaign.open(make_root(tmp), "unit", preset="smoke")
    update = {"rungs": POOL, **({} if adaptive is None else {"adaptive_rungs": adaptive})}
    c.cfg = c.cfg.model_copy(update={"evaluate": c.cfg.evaluate.model_copy(update=update)})
    return c


def save(c: Campaign, generation: int, **ratings: tuple[str, float, tuple[int, int, int, int, int]]) -> None:
    folder = c.paths.evals(generation)
    folder.mkdir(parents=True, exist_ok=True)
    saved = {mode: joint_rating([RungGames(rung, rating, penta)], resamples=200).to_dict()
             for mode, (rung, rating, penta) in ratings.items()}
    (folder / RATINGS).write_text(json.dumps(saved))


def test_without_the_setting_every_configured_rung_is_played(tmp_path: Path) -> None:
    c = campaign(tmp_path, None)
    save(c, 0, searched=("greedy", 288.0, (0, 0, 0, 0, 10)))
    assert rungs_for(c, "searched", 5) == POOL


def test_the_adaptive_pick_follows_the_previous_rating_of_its_mode(tmp_path: Path) -> None:
    c = campaign(tmp_path, 2)
    assert rungs_for(c, "searched", 0) == ["random", "greedy-r50"]  # nothing before: the weakest
    save(c, 0, searched=("greedy-r50", 59.0, (0, 0, 0, 0, 10)), policy=("random", -412.0, (1, 2, 4, 2, 1)))
    save(c, 5, searched=("sf-n1-r30", 503.0, (1, 2, 4, 2, 1)))
    assert previous_rating(c, 5, "policy") == previous_rating(c, 1, "policy")  # the latest one with the mode
    # generation 5: searched swept greedy-r50 at generation 0, a lower bound: the weakest rungs above it
    bound, direction = previous_rating(c, 5, "searched")
    assert direction == ">" and 288.0 < bound < 503.0
    assert rungs_for(c, "searched", 5) == ["sf-n1-r30", "sf-n1-r10"]
    assert rungs_for(c, "policy", 5) == ["random", "greedy-r50"]  # rated about -412: one each side
    # generation 10: searched rated about 503 at generation 5
    assert rungs_for(c, "searched", 10) == ["greedy", "sf-n1-r30"]


def test_the_nearest_rung_bound_is_signed() -> None:
    won, lost = rate((0, 0, 0, 0, 5), 288.0), rate((5, 0, 0, 0, 0), 288.0)
    assert nearest_metrics(M.elo_key, "policy", won)[M.elo_key("policy", "bound")] == 1.0
    assert nearest_metrics(M.elo_key, "policy", lost)[M.elo_key("policy", "bound")] == -1.0
    point = nearest_metrics(M.budget_key, 64, rate((1, 2, 3, 2, 1), 288.0))
    assert point[M.budget_key(64, "bound")] == 0.0 and point[M.budget_key(64, "lo")] < point[M.budget_key(64)]
