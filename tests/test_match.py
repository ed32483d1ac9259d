"""Paired matches refereed by the native core, PGN, and the shipped data files."""

from __future__ import annotations

import io
import shutil
import threading
from collections.abc import Sequence
from pathlib import Path

import chess
import chess.pgn
import pytest

from chesszero import core
from chesszero.evaluate.match import (
    GameRecord,
    IllegalMovePlayedError,
    MatchCancelledError,
    MatchResult,
    play_match,
)
from chesszero.evaluate.openings import Opening, load_openings, save_openings
from chesszero.evaluate.players import STOCKFISH_PATH, GreedyPlayer, RandomPlayer, StockfishPlayer
from chesszero.publish.calibration_positions import EXPECTED_COUNT, load_positions

ROOT = Path(__file__).resolve().parents[1]
OPENINGS = ROOT / "data/openings/openings.epd"
POSITIONS = ROOT / "data/calibration/positions.jsonl"

ITALIAN = Opening(id="italian", moves=("e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "f8c5"))
QUEENS = Opening(id="queens", moves=("d2d4", "d7d5", "c2c4", "e7e6"))
FOOLS = Opening(id="fools", moves=("f2f3", "e7e5", "g2g4"))  # Black mates with d8h4


def replay_pgn(text: str) -> list[chess.pgn.Game]:
    stream, games = io.StringIO(text), []
    while (game := chess.pgn.read_game(stream)) is not None:
        assert not game.errors, game.errors
        games.append(game)
    return games


def check_consistent(result: MatchResult, openings: Sequence[Opening]) -> None:
    assert len(result.games) == 2 * len(openings)
    for g in result.games:
        assert g.opening_id == openings[g.pair].id
        assert g.first_is_white == (g.index % 2 == 0)
        assert g.moves[: g.book_plies] == openings[g.pair].moves
        referee = core.Game(g.start_fen)
        for uci in g.moves:
            referee.push_uci(uci)  # raises on any illegal move
        outcome = referee.outcome()
        if g.termination == "ply_cap":
            assert outcome is None and len(g.moves) == result.max_plies and g.score == 0.5
        else:
            assert outcome is not None and outcome.result == g.result
            assert g.score == outcome.score_for(g.first_is_white)
    parsed = replay_pgn(result.pgn())
    assert len(parsed) == len(result.games)
    for pgn_game, record in zip(parsed, result.games, strict=True):
        assert [m.uci() for m in pgn_game.mainline_moves()] == list(record.moves)
        assert pgn_game.headers["Result"] == record.result
        white = result.first if record.first_is_white else result.second
        assert pgn_game.headers["White"] == white
    assert result.wins + result.draws + result.losses == len(result.games)
    assert sum(result.pentanomial()) == len(openings)


def test_random_vs_greedy_match_is_legal_and_parses() -> None:
    result = play_match(
        RandomPlayer(seed=1), GreedyPlayer(seed=2), [ITALIAN, QUEENS], max_plies=60, concurrency=3
    )
    check_consistent(result, [ITALIAN, QUEENS])


@pytest.mark.skipif(shutil.which(STOCKFISH_PATH) is None, reason="Stockfish not installed")
def test_short_match_against_stockfish_one_node() -> None:
    sf = StockfishPlayer(nodes=1, engines=2)
    try:
        result = play_match(RandomPlayer(seed=3), sf, [ITALIAN], max_plies=80, concurrency=2)
    finally:
        sf.close()
    check_consistent(result, [ITALIAN])
    assert result.second == "sf-n1"
    assert result.score <= 0.5  # a random mover does not beat Stockfish


def test_ply_cap_scores_a_draw() -> None:
    result = play_match(RandomPlayer(seed=0), RandomPlayer(seed=1), [ITALIAN], max_plies=10)
    assert [g.termination for g in result.games] == ["ply_cap", "ply_cap"]
    assert result.score == 0.5 and result.pentanomial() == (0, 0, 1, 0, 0)
    check_consistent(result, [ITALIAN])
    assert replay_pgn(result.pgn())[0].headers["Termination"] == "adjudication"


def test_scores_are_from_the_first_players_view() -> None:
    # Whoever is Black after the opening is greedy and mates at once with d8h4.
    result = play_match(GreedyPlayer(name="a"), GreedyPlayer(name="b"), [FOOLS], concurrency=1)
    first_white, first_black = result.games
    assert first_white.moves[3] == first_black.moves[3] == "d8h4"
    assert first_white.result == first_black.result == "0-1"
    assert first_white.termination == "checkmate"
    assert (first_white.score, first_black.score) == (0.0, 1.0)
    assert (result.wins, result.losses, result.pentanomial()) == (1, 1, (0, 0, 1, 0, 0))
    check_consistent(result, [FOOLS])


class Recorder:
    """Wraps a player and logs every batched call."""

    def __init__(self, inner: RandomPlayer) -> None:
        self.inner, self.name = inner, inner.name
        self.calls: list[list[int]] = []
        self.started: list[int] = []

    def new_game(self, slot: int) -> None:
        self.started.append(slot)

    def select_moves(self, games: Sequence[core.Game], slots: Sequence[int]) -> list[str]:
        self.calls.append(list(slots))
        return self.inner.select_moves(games, slots)

    def close(self) -> None:
        pass


def test_all_games_advance_together_in_one_call_per_ply() -> None:
    first = Recorder(RandomPlayer(seed=4, name="a"))
    second = Recorder(RandomPlayer(seed=5, name="b"))
    openings = [ITALIAN, QUEENS]  # both end with White to move
    play_match(first, second, openings, max_plies=30, concurrency=4)
    # games 0, 2: first is White (to move); games 1, 3: second is White
    assert first.calls[0] == [0, 2] and second.calls[0] == [1, 3]
    assert first.calls[1] == [1, 3] and second.calls[1] == [0, 2]
    assert sorted(first.started) == [0, 1, 2, 3]


def test_slots_are_reused_when_concurrency_is_small() -> None:
    first = Recorder(RandomPlayer(seed=4, name="a"))
    result = play_match(first, RandomPlayer(), [ITALIAN, QUEENS], max_plies=12, concurrency=1)
    assert first.started == [0, 0, 0, 0]
    assert len(result.games) == 4


class Cheater(RandomPlayer):
    def select_moves(self, games: Sequence[core.Game], slots: Sequence[int]) -> list[str]:
        return ["e1e8" for _ in games]


def test_illegal_move_names_the_player() -> None:
    with pytest.raises(IllegalMovePlayedError, match="cheater.*e1e8"):
        play_match(Cheater(name="cheater"), RandomPlayer(), [ITALIAN])


def test_cancel_event_stops_the_match() -> None:
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(MatchCancelledError):
        play_match(RandomPlayer(), RandomPlayer(), [ITALIAN], cancel=cancel)


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="opening"):
        play_match(RandomPlayer(), RandomPlayer(), [])
    with pytest.raises(ValueError, match="concurrency"):
        play_match(RandomPlayer(), RandomPlayer(), [ITALIAN], concurrency=0)
    with pytest.raises(ValueError, match="italian"):
        play_match(RandomPlayer(), RandomPlayer(), [ITALIAN], max_plies=6)


def test_result_round_trips_and_rates() -> None:
    result = play_match(GreedyPlayer(seed=1), RandomPlayer(seed=2), [QUEENS], max_plies=40)
    back = MatchResult.from_dict(result.to_dict())
    assert back == result
    assert GameRecord.from_dict(result.games[0].to_dict()) == result.games[0]
    est = result.elo(1000, resamples=200)
    assert est.anchor == 1000 and est.games == 2


def test_opening_suite_file_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "suite.epd"
    save_openings([ITALIAN, QUEENS], path)
    assert load_openings(path) == [ITALIAN, QUEENS]
    path.write_text(path.read_text().replace("italian", "roman"))
    with pytest.raises(ValueError, match="sha256"):
        load_openings(path)


def test_shipped_opening_suite() -> None:
    openings = load_openings(OPENINGS)  # checksum verified
    assert len(openings) == 50
    assert len({o.moves for o in openings}) == 50
    for opening in openings:
        assert len(opening.moves) == 16
        assert opening.eval_cp is not None and abs(opening.eval_cp) <= 40
        game = core.Game(opening.start_fen)
        for uci in opening.moves:
            game.push_uci(uci)
        assert game.outcome() is None
        assert game.fen().split()[:4] == opening.fen.split()[:4]


def test_shipped_calibration_positions() -> None:
    positions = load_positions(POSITIONS)  # checksum verified
    assert len(positions) == EXPECTED_COUNT == 516
    assert len({p.id for p in positions}) == 516
    for position in positions:
        game = core.Game(position.start_fen)
        for uci in position.moves:
            game.push_uci(uci)
        assert game.outcome() is None and game.legal_uci()
        assert game.fen() == position.fen


def test_final_material_is_from_the_first_players_view() -> None:
    from chesszero.evaluate.match import material_of_fen

    assert material_of_fen(core.Game().fen()) == 0
    fen = "4k3/8/8/8/8/8/8/3QK3 w - - 0 1"  # white a queen up
    assert material_of_fen(fen) == 9

    def record(index: int, first_is_white: bool, moves: tuple[str, ...]) -> GameRecord:
        return GameRecord(index=index, opening_id="q", first_is_white=first_is_white, start_fen=fen,
                          moves=moves, book_plies=0, result="1/2-1/2", termination="ply_cap", score=0.5)

    # Game 0: first is white, nothing captured (+9). Game 1: first is black and
    # takes the queen (0 at the end).
    result = MatchResult(first="a", second="b", max_plies=4, started="", finished="",
                         games=[record(0, True, ("d1d2",)), record(1, False, ("d1d7", "e8d7"))])
    assert result.final_material() == pytest.approx((9 + 0) / 2)
    assert MatchResult(first="a", second="b", max_plies=4, started="", finished="").final_material() == 0.0
