"""The paper's earlier late-tail self-play design (6.1, ``selfplay.late_tail``):
cheap tail searches, no cap search with the ``preceding`` cut target, tail rows
left out of materialisation and counted as ineligible plies."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import polars as pl
import pytest

from chesszero import _core
from chesszero.campaign.selfplay_stage import late_tail
from chesszero.config.loader import load_config
from chesszero.config.schema import CutTarget
from chesszero.replay.convert import convert_shard
from chesszero.search import ScriptedEvaluator
from chesszero.selfplay import records as rec
from chesszero.selfplay.actor import ActorSettings, LateTail, SelfPlayActor
from chesszero.selfplay.cap_diagnostics import cap_diagnostics

VISITS, CHEAP_DIVISOR, PLY_CAP, FROM_PLY = 16, 4, 12, 6


def _material(planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Value from the material planes (own minus opponent, planes 40-44)."""
    diff = planes[:, 40:45, 0, 0] @ np.array([1, 3, 3, 5, 9], np.float32)
    v = np.tanh(diff / 4)
    wdl = np.stack([np.maximum(v, 0), 1 - np.abs(v), np.maximum(-v, 0)], axis=1).astype(np.float32)
    return np.zeros((planes.shape[0], 1880), np.float32), wdl


def _play(tmp_path, *, preceding: bool, seed: int = 3) -> list[rec.GameRecord]:
    # no subtree retention: every search stops at exactly its visit target (no root here is proven)
    settings = ActorSettings(games_in_flight=4, seed=seed, random_opening_max_plies=2, restart_fraction=0.0,
                             search={"subtree_retention": 0.0})
    report = SelfPlayActor(settings).play(
        ScriptedEvaluator(_material, record=False), visits=VISITS, ply_cap=PLY_CAP, model_id="m", generation=0,
        games=6, shard_path=tmp_path / f"tail_{preceding}.parquet",
        late_tail=LateTail(from_ply=FROM_PLY, visits_divisor=CHEAP_DIVISOR, cap_from_preceding=preceding))
    assert report.path is not None and report.positions == sum(r.admitted_rows for r in report.records)
    return rec.read_records(report.path)  # through the schema


def test_tail_searches_are_cheap_and_the_cap_value_is_the_preceding_root_value(tmp_path) -> None:
    records = _play(tmp_path, preceding=True)
    capped = [r for r in records if r.termination == "ply_cap"]
    assert capped
    for r in records:
        for p in r.plies:
            game_ply = len(r.prefix_moves) + p.ply
            assert p.is_tail_search == (game_ply >= FROM_PLY)
            assert p.visits == (VISITS // CHEAP_DIVISOR if p.is_tail_search else VISITS)
            assert not p.is_cap_search
    for r in capped:
        assert len(r.prefix_moves) + len(r.moves) == PLY_CAP
        last = r.plies[-1]
        assert last.ply == len(r.moves) - 1 and last.is_tail_search
        assert r.cap_value == -last.root_value and r.result == "1/2-1/2"


def test_dedicated_cut_target_keeps_a_full_cap_search_after_a_cheap_tail(tmp_path) -> None:
    records = _play(tmp_path, preceding=False)
    capped = [r for r in records if r.termination == "ply_cap"]
    assert capped
    for r in capped:
        last = r.plies[-1]
        assert last.is_cap_search and not last.is_tail_search and last.visits == VISITS
        assert r.plies[-2].is_tail_search and r.plies[-2].visits == VISITS // CHEAP_DIVISOR
        assert r.cap_value == last.root_value


def test_materialisation_and_diagnostics_leave_tail_rows_out(tmp_path) -> None:
    records = _play(tmp_path, preceding=True)
    rows = convert_shard(tmp_path / "tail_True.parquet")
    assert len(rows) == sum(r.admitted_rows for r in records) > 0
    assert int(rows["ply"].max()) < FROM_PLY  # absolute plies of the admitted rows
    tail = sum(p.is_tail_search for r in records for p in r.plies)
    assert tail > 0 and len(rows) + tail == sum(len(r.plies) for r in records)
    d = cap_diagnostics(records)
    prefix = sum(len(r.prefix_moves) for r in records)
    assert d.rows == len(rows)
    assert d.plies == prefix + sum(len(r.moves) for r in records)
    assert d.ineligible_plies == prefix + tail  # every tail search chose a move (no cap search here)
    assert d.cut_rows == sum(r.admitted_rows for r in records if r.termination == "ply_cap")


def test_schema_rules_for_tail_records(tmp_path) -> None:
    records = _play(tmp_path, preceding=True)
    capped = next(r for r in records if r.termination == "ply_cap")
    with pytest.raises(Exception, match="ply cap rows"):  # a cap value that is not the reversed root value
        rec.records_to_frame([replace(capped, cap_value=-capped.cap_value if capped.cap_value else 0.5)])
    dedicated = next(r for r in _play(tmp_path, preceding=False) if r.termination == "ply_cap")
    bad = replace(dedicated, plies=[*dedicated.plies[:-1], replace(dedicated.plies[-1], is_tail_search=True)])
    with pytest.raises(Exception, match="a cap search is not a tail search"):
        rec.records_to_frame([bad])
    # a shard written before the column existed reads as untouched by the tail
    old = rec.records_to_frame([dedicated]).drop("is_tail_search")
    old.write_parquet(tmp_path / "old.parquet")
    (back,) = rec.read_records(tmp_path / "old.parquet")
    assert not any(p.is_tail_search for p in back.plies) and back.plies == [
        replace(p, is_tail_search=False) for p in dedicated.plies]
    assert pl.read_parquet(tmp_path / "old.parquet").columns.count("is_tail_search") == 0


def test_default_recipe_is_the_retained_design_and_bad_settings_are_refused() -> None:
    cfg = load_config("params.yaml", preset="cpu")
    assert cfg.selfplay.late_tail.cut_target is CutTarget.DEDICATED
    for generation in (0, 10_000):  # off: no tail ply, a dedicated cap search
        off = late_tail(cfg, generation)
        assert off.from_ply is None and not off.cap_from_preceding
    old = load_config("params.yaml", preset="cpu", overrides={
        "selfplay.late_tail.from_ply": [[0, 100], [5, None]], "selfplay.late_tail.cut_target": "preceding"})
    assert late_tail(old, 4) == LateTail(from_ply=100, visits_divisor=8, cap_from_preceding=True)
    assert late_tail(old, 5).from_ply is None
    with pytest.raises(ValueError, match="random_opening_max_plies"):
        load_config("params.yaml", preset="cpu", overrides={"selfplay.late_tail.from_ply": 8})
    with pytest.raises(ValueError, match="visits_divisor"):
        load_config("params.yaml", preset="cpu", overrides={"selfplay.late_tail.visits_divisor": 0})
    with pytest.raises(ValueError, match="from_ply"):
        LateTail(from_ply=0)
    actor = _core.Actor(_core.ActorOptions(num_games=2, seed=1))
    for bad in ({"tail_from_ply": 0}, {"tail_from_ply": -1}, {"tail_from_ply": 10001},
                {"tail_visits_divisor": 0}, {"tail_visits_divisor": -3}):
        with pytest.raises(ValueError, match="tail_"):
            actor.set_limits(visits=8, ply_cap=10, **bad)


def test_a_game_resumed_at_the_cap_without_a_preceding_search_gets_the_cap_search() -> None:
    from chesszero.selfplay.logs import PendingGame

    start = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
    pending = PendingGame(game_id="r1", start_fen=start, prefix_moves=[], moves=["e2e4", "e7e5", "g1f3", "b8c6"],
                          start_type="random", is_continuation=False)
    report = SelfPlayActor(ActorSettings(games_in_flight=1, seed=1, restart_fraction=0.0)).play(
        ScriptedEvaluator(_material, record=False), visits=8, ply_cap=4, model_id="m", generation=0, games=1,
        resume=[pending], late_tail=LateTail(from_ply=3, visits_divisor=4, cap_from_preceding=True))
    (r,) = report.records
    assert r.game_id == "r1" and r.termination == "ply_cap"
    (cap,) = r.plies
    assert cap.is_cap_search and not cap.is_tail_search and cap.visits >= 8 and r.cap_value == cap.root_value
    rec.records_to_frame([r])


def test_a_campaign_started_before_the_setting_resumes_only_while_it_is_off(tmp_path) -> None:
    import json
    from pathlib import Path

    from chesszero.campaign.context import Campaign

    params = Path(__file__).resolve().parents[1] / "params.yaml"

    def open_(**overrides: object) -> Campaign:
        return Campaign.open(tmp_path, "c", preset="smoke", params=params, overrides=overrides)

    campaign = open_()
    campaign.paths.dir.mkdir(parents=True)
    campaign.write_config()
    data = json.loads(campaign.paths.config.read_text())
    del data["recipe"]["selfplay"]["late_tail"]  # as written before selfplay.late_tail existed
    campaign.paths.config.write_text(json.dumps(data))
    open_()  # the retained design, as the campaign ran
    for on in ({"selfplay.late_tail.from_ply": 30}, {"selfplay.late_tail.cut_target": "preceding"}):
        with pytest.raises(ValueError, match="changed keys: selfplay.late_tail"):
            open_(**on)
