"""Playout-cap randomisation (``selfplay.full_search_fraction``) and the
Gumbel root in self-play: only full searches become training rows, the
outcome reaches every recorded row, and a seeded actor is reproducible."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from chesszero.campaign.selfplay_stage import actor_settings
from chesszero.config import load_config
from chesszero.replay.convert import TargetOptions, convert_shard
from chesszero.search import UniformEvaluator
from chesszero.search.assist import with_material_assist
from chesszero.selfplay.actor import ActorSettings, SelfPlayActor

PARAMS = Path(__file__).resolve().parents[1] / "params.yaml"
FULL, FAST = 16, 4


def _actor(fraction: float, *, root: str = "puct", seed: int = 3) -> SelfPlayActor:
    return SelfPlayActor(ActorSettings(
        games_in_flight=4, seed=seed, restart_fraction=0.0, continuation_fraction=1.0,
        full_search_fraction=fraction, fast_visits=FAST,
        search={"subtree_retention": 0.0, "root": root}))


def _play(actor: SelfPlayActor, tmp_path: Path | None = None, *, games: int = 6, ply_cap: int = 60):
    evaluator = with_material_assist(UniformEvaluator(), 1.0)  # converts material: some games end in mate
    try:
        return actor.play(evaluator, visits=FULL, ply_cap=ply_cap, model_id="m", generation=0, games=games,
                          shard_path=None if tmp_path is None else tmp_path / "shard.parquet")
    finally:
        actor.close()


@pytest.mark.parametrize("root", ["puct", "gumbel"])
def test_recorded_rows_are_exactly_the_full_searches(root: str) -> None:
    actor = _actor(0.25, root=root)
    report = _play(actor)
    counters = actor.counters()
    recorded = sum(len(r.plies) for r in report.records)
    assert report.positions == recorded
    assert counters["fast_searches"] > 0 and report.fast_searches == counters["fast_searches"]
    assert counters["searches"] == counters["fast_searches"] + recorded + _unfinished_rows(report)
    searched = 0
    for r in report.records:
        # retention 0: a full search has FULL root visits (the Gumbel root: + its own evaluation
        # when new), fewer only when the solver proved the root (near a decided end)
        short = [p.ply for p in r.plies if p.visits not in (FULL, FULL + (root == "gumbel"))]
        assert len(short) <= (2 if r.result != "1/2-1/2" else 0), (r.result, short, len(r.moves))
        plies = [p.ply for p in r.plies]
        assert plies == sorted(set(plies))
        searched += len(r.moves) + (1 if r.termination in ("ply_cap", "resignation") else 0)
    share = recorded / searched
    assert 0.12 < share < 0.40, share  # about a quarter of the moves


def _unfinished_rows(report) -> int:
    return sum(len(p.plies) for p in report.unfinished)


def test_outcome_reaches_every_recorded_row_when_a_fast_move_ends_the_game(tmp_path: Path) -> None:
    actor = _actor(0.3, seed=11)
    report = _play(actor, tmp_path, games=8, ply_cap=200)
    rows = convert_shard(tmp_path / "shard.parquet", TargetOptions(beta=0.0, outcome_discount=1.0))
    by_game = {}
    offset = 0
    for r in report.records:
        by_game[r.game_id] = rows[offset:offset + len(r.plies)]
        offset += len(r.plies)
    assert offset == len(rows)
    ended_fast = [r for r in report.records
                  if r.result != "1/2-1/2" and r.plies and r.plies[-1].ply < len(r.moves) - 1]
    assert ended_fast, "no decisive game ended on a fast move: the test needs one"
    for r in ended_fast:
        white_won = r.result == "1-0"
        for p, row in zip(r.plies, by_game[r.game_id], strict=True):
            white_to_move = (len(r.prefix_moves) + p.ply) % 2 == 0 if r.start_fen.split()[1] == "w" else \
                (len(r.prefix_moves) + p.ply) % 2 == 1
            won = white_to_move == white_won
            assert np.allclose(row["wdl"], [1, 0, 0] if won else [0, 0, 1], atol=1e-6), (r.game_id, p.ply)


def test_fraction_one_plays_every_move_fully_and_draws_nothing_extra() -> None:
    base = SelfPlayActor(ActorSettings(games_in_flight=4, seed=5, restart_fraction=0.0))
    off = SelfPlayActor(ActorSettings(games_in_flight=4, seed=5, restart_fraction=0.0, full_search_fraction=1.0,
                                      fast_visits=3))
    a, b = _play(base, games=4, ply_cap=30), _play(off, games=4, ply_cap=30)
    assert [r.moves for r in a.records] == [r.moves for r in b.records]
    assert off.counters()["fast_searches"] == 0


def test_gumbel_self_play_is_reproducible_with_a_seed() -> None:
    runs = [_play(_actor(0.5, root="gumbel", seed=s), games=4, ply_cap=40) for s in (9, 9, 10)]
    moves = [[r.moves for r in run.records] for run in runs]
    assert moves[0] == moves[1]
    assert moves[0] != moves[2]


def test_bad_playout_cap_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="full_search_fraction"):
        SelfPlayActor(ActorSettings(full_search_fraction=0.0))
    with pytest.raises(ValueError, match="fast_visits"):
        SelfPlayActor(ActorSettings(full_search_fraction=0.5, fast_visits=0))


def test_recipe_reaches_the_actor() -> None:
    cfg = load_config(PARAMS, preset="smoke", overrides={
        "search.root": "gumbel", "search.gumbel.considered": 8,
        "selfplay.full_search_fraction": 0.25, "selfplay.fast_visits": 6})
    settings = actor_settings(cfg, actor=0, seed=1, archive_path=None)  # type: ignore[arg-type]
    native = settings.native_options()
    assert native.full_search_fraction == pytest.approx(0.25) and native.fast_visits == 6
    assert str(native.search.root) == "RootRule.GUMBEL" and native.search.gumbel_considered == 8
    with pytest.raises(ValueError, match="root"):
        load_config(PARAMS, preset="smoke", overrides={"search.root": "alpha"})
    with pytest.raises(ValueError, match="full_search_fraction"):
        load_config(PARAMS, preset="smoke", overrides={"selfplay.full_search_fraction": 1.5})
