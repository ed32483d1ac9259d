"""Conversion rate (issue 10): leads of 5+ pawns and how many were won, in
match games, self-play shards, the campaign's sidecars and its metrics."""

from __future__ import annotations

import json
from dataclasses import asdict

import chess
import pytest

from chesszero.campaign import metrics as M
from chesszero.campaign.eval_stage import conversion_metrics
from chesszero.campaign.selfplay_stage import ActorSummary, aggregate
from chesszero.evaluate.match import GameRecord, MatchResult, play_match
from chesszero.evaluate.openings import Opening
from chesszero.evaluate.players import GreedyPlayer, RandomPlayer
from chesszero.material import Conversion, material_swing
from chesszero.search import UniformEvaluator
from chesszero.selfplay import records as rec
from chesszero.selfplay.actor import ActorSettings, SelfPlayActor
from chesszero.selfplay.logs import conversion_counts

QUEENS = "3qk3/8/8/8/8/8/8/3QK3 w - - 0 1"  # d1d8 wins the queen (+9), e8d8 takes back (0)
ROOKS = "r3k3/8/8/8/8/8/8/R3K3 w - - 0 1"  # a1a8 wins a rook: exactly +5
BISHOPS = "4kb2/8/8/8/8/8/8/4KB2 w - - 0 1"
VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}


def chess_swing(fen: str, moves: list[str], skip: int = 0) -> tuple[int, int]:
    """(White's, Black's) largest lead, counted independently with python-chess."""
    board = chess.Board(fen)
    leads = []
    for i, uci in enumerate([None, *moves]):
        if uci is not None:
            board.push_uci(uci)
        if i >= skip:
            leads.append(sum(VALUES.get(p.piece_type, 0) * (1 if p.color else -1)
                             for p in board.piece_map().values()))
    return max(leads), -min(leads)


def test_material_swing_tracks_both_sides_and_skips_the_prefix() -> None:
    swing = material_swing(QUEENS, ["d1d8", "e8d8"])
    assert (swing.white_lead, swing.black_lead, swing.final) == (9, 0, 0)
    assert swing.lead(True) == 9 and swing.final_for(False) == 0
    assert material_swing(QUEENS, ["d1d8", "e8d8"], skip=1).white_lead == 9
    assert material_swing(QUEENS, ["d1d8", "e8d8"], skip=2).white_lead == 0
    black = material_swing("3qk3/8/8/8/8/8/8/3QK3 b - - 0 1", ["d8d1", "e1d1"])
    assert (black.white_lead, black.black_lead) == (0, 9)
    with pytest.raises(ValueError, match="skip"):
        material_swing(QUEENS, ["d1d8"], skip=2)


def test_conversion_counts_add_and_have_no_rate_without_a_chance() -> None:
    assert Conversion().rate is None
    total = Conversion(3, 2) + Conversion(1, 0)
    assert (total.opportunities, total.converted, total.rate) == (4, 2, 0.5)
    assert "2/4" in total.describe()
    with pytest.raises(ValueError, match="converted"):
        Conversion(1, 2)


def _game(index: int, first_is_white: bool, fen: str, moves: tuple[str, ...], score: float) -> GameRecord:
    result = {1.0: "1-0", 0.5: "1/2-1/2", 0.0: "0-1"}[score if first_is_white else 1.0 - score]
    return GameRecord(index=index, opening_id="x", first_is_white=first_is_white, start_fen=fen, moves=moves,
                      book_plies=0, result=result, termination="checkmate", score=score)


def test_match_conversion_is_from_the_first_players_view() -> None:
    games = [
        _game(0, True, QUEENS, ("d1d8",), 1.0),  # +9, won: converted
        _game(1, False, QUEENS, ("d1d8", "e8d8"), 1.0),  # first is Black, never ahead: no chance
        _game(2, True, QUEENS, ("d1d8", "e8d8"), 0.5),  # +9 then drawn: missed
        _game(3, True, ROOKS, ("a1a8",), 1.0),  # exactly +5 counts
        _game(4, True, BISHOPS, ("f1b5",), 1.0),  # level: no chance
        _game(5, False, "3qk3/8/8/8/8/8/8/3QK3 b - - 0 1", ("d8d1",), 0.0),  # Black +9, lost
    ]
    result = MatchResult(first="a", second="b", max_plies=300, started="", finished="", games=games)
    assert result.conversion() == Conversion(opportunities=4, converted=2)
    assert result.conversion().rate == 0.5
    empty = MatchResult(first="a", second="b", max_plies=300, started="", finished="")
    assert empty.conversion().rate is None


def test_match_conversion_agrees_with_an_independent_count() -> None:
    italian = Opening(id="italian", moves=("e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "f8c5"))
    queens = Opening(id="queens", moves=("d2d4", "d7d5", "c2c4", "e7e6"))
    result = play_match(GreedyPlayer(seed=1), RandomPlayer(seed=2), [italian, queens], max_plies=80,
                        concurrency=4)
    expected = Conversion()
    for g in result.games:
        white, black = chess_swing(g.start_fen, list(g.moves))
        if (white if g.first_is_white else black) >= 5:
            expected += Conversion(1, int(g.score == 1.0))
    assert result.conversion() == expected
    assert expected.opportunities >= 1  # greed wins material from the random mover


def _selfplay(fen: str, prefix: list[str], moves: list[str], result: str) -> rec.GameRecord:
    return rec.GameRecord(game_id="g", model_id="m", generation=0, start_type="random", start_fen=fen,
                          prefix_moves=prefix, moves=moves, plies=[], result=result,  # type: ignore[arg-type]
                          termination="checkmate" if result != "1/2-1/2" else "ply_cap")


def test_selfplay_conversion_counts_each_side_from_the_searched_part() -> None:
    records = [
        _selfplay(QUEENS, [], ["d1d8"], "1-0"),  # White +9, won
        _selfplay(QUEENS, ["d1d8", "e8d8"], ["e1e2"], "1-0"),  # a lead inside the prefix only: no chance
        _selfplay(QUEENS, ["d1d8"], ["e8d8"], "1/2-1/2"),  # ahead where search began: missed
        _selfplay(QUEENS, [], ["d1d8", "e8d8"], "1/2-1/2"),  # White +9 then drawn: missed
        _selfplay("3qk3/8/8/8/8/8/8/3QK3 b - - 0 1", [], ["d8d1"], "0-1"),  # Black +9, won
        # Black wins the queen (+9), the king takes back (0), Black wins the rook (+5)
        _selfplay("r2qk3/8/8/8/8/8/8/R2QK3 b - - 0 1", [], ["d8d1", "e1d1", "a8a1"], "0-1"),
    ]
    assert conversion_counts(records) == Conversion(opportunities=5, converted=3)
    # White wins the queen (+9), the king takes back, then Black wins a rook (+5)
    both = _selfplay("3qk3/8/8/8/8/8/1r5R/3QK3 w - - 0 1", [], ["d1d8", "e8d8", "e1f1", "b2h2"], "0-1")
    assert material_swing(both.start_fen, both.moves).lead(True) == 9
    assert material_swing(both.start_fen, both.moves).lead(False) == 5
    assert conversion_counts([both]) == Conversion(opportunities=2, converted=1)


def test_actor_reports_the_shards_conversion() -> None:
    actor = SelfPlayActor(ActorSettings(games_in_flight=4, seed=3))
    try:
        report = actor.play(UniformEvaluator(), visits=4, ply_cap=60, model_id="m", generation=0, games=4)
    finally:
        actor.close()
    expected = Conversion()
    for r in report.records:
        white, black = chess_swing(r.start_fen, [*r.prefix_moves, *r.moves], skip=len(r.prefix_moves))
        for lead, won in ((white, "1-0"), (black, "0-1")):
            if lead >= 5:
                expected += Conversion(1, int(r.result == won))
    assert report.conversion == expected == conversion_counts(report.records)


def _summary(**extra: object) -> dict[str, object]:
    return {"shard": "s.parquet", "actor": 0, "games": 4, "positions": 100, "searches": 100, "seconds": 2.0,
            "terminations": {"checkmate": 1, "threefold_repetition": 3}, "label": "main", **extra}


def test_old_sidecars_load_and_aggregate_sums_the_conversion() -> None:
    old = ActorSummary(**json.loads(json.dumps(_summary())))  # written before the conversion fields
    assert (old.conversion_opportunities, old.conversion_converted) == (0, 0)
    new = ActorSummary(**_summary(conversion_opportunities=5, conversion_converted=2))
    assert ActorSummary(**json.loads(json.dumps(asdict(new)))) == new
    agg = aggregate([old, new, ActorSummary(**_summary(conversion_opportunities=3, conversion_converted=3))])
    assert agg["conversion_opportunities"] == 8 and agg["conversion_converted"] == 5
    assert agg["conversion"] == pytest.approx(5 / 8)
    assert "conversion" not in aggregate([old])  # no chance, no rate
    assert aggregate([old])["conversion_opportunities"] == 0


def test_conversion_metrics_keys() -> None:
    assert conversion_metrics("searched", "random", Conversion(4, 3)) == {
        "conversion/searched/random": 0.75,
        "conversion/searched/random_opportunities": 4.0,
        "conversion/searched/random_converted": 3.0,
    }
    assert M.conversion_key("policy", "greedy") not in conversion_metrics("policy", "greedy", Conversion())
    assert M.SELFPLAY_CONVERSION == "selfplay/conversion"
