"""Games against a uniformly random mover (``selfplay.random_opponent_fraction``):
which side searches, which positions become rows (the material-lead gate),
resumption, the separate accounting, and bad settings."""

from __future__ import annotations

import chess
import pytest

from chesszero.campaign.selfplay_stage import ActorSummary, aggregate
from chesszero.config import load_config
from chesszero.material import PIECE_PAWNS
from chesszero.search import UniformEvaluator
from chesszero.selfplay import records as rec
from chesszero.selfplay.actor import ActorSettings, SelfPlayActor
from chesszero.selfplay.records import GameRecord


def _leads(record: GameRecord) -> list[int]:
    """Material lead (pawns) of the side to move at each ply after the prefix."""
    board = chess.Board(record.start_fen)
    for uci in record.prefix_moves:
        board.push_uci(uci)
    out = []
    for uci in [*record.moves, None]:
        ours = sum(PIECE_PAWNS.get(p.symbol().lower(), 0) for p in board.piece_map().values()
                   if p.color == board.turn)
        theirs = sum(PIECE_PAWNS.get(p.symbol().lower(), 0) for p in board.piece_map().values()
                     if p.color != board.turn)
        out.append(ours - theirs)
        if uci is not None:
            board.push_uci(uci)
    return out


def _play(settings: ActorSettings, games: int, ply_cap: int = 60) -> tuple[SelfPlayActor, list[GameRecord]]:
    actor = SelfPlayActor(settings)
    report = actor.play(UniformEvaluator(), visits=4, ply_cap=ply_cap, model_id="m", generation=0, games=games)
    return actor, report


def test_only_the_side_to_move_after_the_opening_searches_and_gives_rows() -> None:
    settings = ActorSettings(games_in_flight=6, seed=3, restart_fraction=0.0, random_opponent_fraction=1.0,
                             random_opponent_min_lead=0, continuation_fraction=1.0)
    actor, report = _play(settings, games=8)
    try:
        assert report.games >= 8 and all(r.start_type == "random_opponent" for r in report.records)
        for r in report.records:
            rows = [p.ply for p in r.plies if not p.is_cap_search]
            assert rows == list(range(0, len(r.moves), 2)), r.game_id  # every turn of the searching side
            assert r.searches == len(r.plies)  # the random mover's turns cost no search
            assert not r.is_continuation and r.termination != "resignation"  # never calibration evidence
        rec.records_to_frame(report.records)  # the schema accepts the start type
        assert len(actor.archive) == 0  # no restart positions from lopsided games
        assert sum(report.terminations.values()) == 0  # natural-play diagnostics leave them out
        assert report.random_opponent.games == report.games and report.odds.games == 0
        assert report.random_opponent.decisive == sum(r.is_decisive for r in report.records)
    finally:
        actor.close()


def test_rows_start_once_the_searching_side_leads_by_the_gate() -> None:
    settings = ActorSettings(games_in_flight=6, seed=11, restart_fraction=0.0, random_opponent_fraction=1.0,
                             random_opponent_min_lead=2)
    actor, report = _play(settings, games=10, ply_cap=80)
    try:
        gated = 0
        for r in report.records:
            leads = _leads(r)
            turns = range(0, len(r.moves), 2)
            rows = [p.ply for p in r.plies if not p.is_cap_search]
            assert rows == [i for i in turns if leads[i] >= 2], r.game_id  # exactly the gate
            below = sum(leads[i] < 2 for i in turns)
            assert r.searches == len(r.plies) + below  # the turns below the gate: fast, unrecorded searches
            gated += below
        assert gated > 0 and report.fast_searches >= gated  # (the count includes games still in flight)
    finally:
        actor.close()


def test_handed_back_games_resume_with_the_same_random_side() -> None:
    settings = ActorSettings(games_in_flight=8, seed=4, restart_fraction=0.0, random_opponent_fraction=0.5,
                             random_opponent_min_lead=0)
    actor = SelfPlayActor(settings)
    try:
        first = actor.play(UniformEvaluator(), visits=4, ply_cap=60, model_id="m", generation=0, games=6)
        assert {r.start_type for r in first.records} <= {"random", "random_opponent"}
        handed = {p.game_id for p in actor.pending if p.start_type == "random_opponent"}
        assert handed
        more = actor.play(UniformEvaluator(), visits=4, ply_cap=60, model_id="m", generation=1,
                          games=len(actor.pending) + 1)
        resumed = [r for r in more.records if r.game_id in handed]
        assert resumed
        for r in resumed:
            assert r.start_type == "random_opponent"
            assert [p.ply for p in r.plies if not p.is_cap_search] == list(range(0, len(r.moves), 2))
    finally:
        actor.close()


def test_off_by_default_and_bad_settings_refused() -> None:
    actor, report = _play(ActorSettings(games_in_flight=4, seed=2, restart_fraction=0.0), games=6, ply_cap=20)
    actor.close()
    assert {r.start_type for r in report.records} == {"random"} and report.random_opponent.games == 0
    with pytest.raises(ValueError, match="random_opponent_fraction must be in"):
        SelfPlayActor(ActorSettings(random_opponent_fraction=1.5))
    with pytest.raises(ValueError, match="random_opponent_min_lead must be in 0..39"):
        SelfPlayActor(ActorSettings(random_opponent_fraction=0.5, random_opponent_min_lead=40))


def test_recipe_and_aggregate_count_them_apart(tmp_path) -> None:
    from pathlib import Path

    cfg = load_config(Path(__file__).resolve().parents[1] / "params.yaml", preset="cpu")
    assert 0 <= cfg.selfplay.random_opponent_fraction <= 1 and cfg.selfplay.random_opponent_min_lead >= 0
    base = {"shard": "s.parquet", "actor": 0, "games": 6, "positions": 100, "searches": 100, "seconds": 2.0,
            "terminations": {"checkmate": 1, "threefold_repetition": 3}, "label": "main"}
    agg = aggregate([ActorSummary(**base)])
    assert agg["random_opponent_games"] == 0 and "random_opponent_non_decisive_rate" not in agg
    agg = aggregate([ActorSummary(**base, random_opponent_games=2, random_opponent_decisive=2,
                                  random_opponent_conversion_opportunities=2,
                                  random_opponent_conversion_converted=1)])
    assert agg["non_decisive_rate"] == pytest.approx(0.75)  # natural games only
    assert agg["random_opponent_games"] == 2 and agg["random_opponent_non_decisive_rate"] == 0.0
    assert agg["random_opponent_conversion"] == pytest.approx(0.5)


def _lowest_action_first(planes):
    """Test network: the lowest legal action id has the highest prior; every position is even."""
    import numpy as np

    from chesszero import core

    n = planes.shape[0]
    logits = np.tile(-np.arange(core.NUM_ACTIONS, dtype=np.float32) / 100.0, (n, 1))
    return logits, np.tile(np.array([0.0, 1.0, 0.0], np.float32), (n, 1))


def test_policy_moves_are_the_top_prior_and_give_no_rows() -> None:
    from chesszero import core
    from chesszero.search import ScriptedEvaluator

    settings = ActorSettings(games_in_flight=6, seed=5, restart_fraction=0.0, random_opponent_fraction=1.0,
                             random_opponent_min_lead=0, random_opponent_policy_fraction=0.5)
    actor = SelfPlayActor(settings)
    try:
        report = actor.play(ScriptedEvaluator(_lowest_action_first, record=False), visits=4, ply_cap=60,
                            model_id="m", generation=0, games=8)
        turns = policy = 0
        for r in report.records:
            game = core.Game(r.start_fen)
            for uci in r.prefix_moves:
                game.push_uci(uci)
            rows = {p.ply for p in r.plies if not p.is_cap_search}
            for i, uci in enumerate(r.moves):
                if i % 2 == 0:  # the searching side's turn: a recorded search, or the raw policy's move
                    turns += 1
                    if i not in rows:
                        policy += 1
                        assert uci == game.uci_of(int(min(game.legal_actions()))), (r.game_id, i)
                game.push_uci(uci)
        assert 0.3 < policy / turns < 0.7, (policy, turns)  # about the fraction asked for
        assert report.policy_moves >= policy and report.fast_searches >= report.policy_moves
    finally:
        actor.close()
    with pytest.raises(ValueError, match=r"random_opponent_policy_fraction must be in \[0, 1\)"):
        SelfPlayActor(ActorSettings(random_opponent_fraction=0.5, random_opponent_policy_fraction=1.0))


def test_policy_moves_off_leave_the_games_unchanged() -> None:
    def games(fraction: float) -> list[tuple[str, list[str]]]:
        settings = ActorSettings(games_in_flight=4, seed=9, restart_fraction=0.0, random_opponent_fraction=0.5,
                                 random_opponent_policy_fraction=fraction)
        actor, report = _play(settings, games=6, ply_cap=40)
        actor.close()
        return sorted((r.start_type, r.moves) for r in report.records)

    assert games(0.0) == games(0.0)  # seeded: the same games
    assert games(0.0) != games(0.5)  # and the setting changes them
