"""Differential tests of the native core against python-chess.

Over 2,000 seeded random games (with move shuffles that provoke repetitions,
and start positions near the fifty-move limit, promotions and en passant):
identical legal move sets, FENs and round trips, check and terminal status
with reason, repetition counts, and Zobrist keys equal exactly when the
positions (python-chess transposition keys) are equal.
"""

from __future__ import annotations

import random

import chess
import pytest

from chesszero import core

STARTS = [
    chess.STARTING_FEN,
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
    "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",
    "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8",
    "8/8/4k3/8/2R5/8/4K3/1r6 w - - 90 80",
    "8/PPP4k/8/8/8/8/4Kppp/8 w - - 0 1",
    "4k3/8/8/8/8/8/8/4KB2 w - - 0 1",
    "4k3/8/8/2pP4/8/8/8/4K3 w - c6 0 2",
    "8/8/8/KPp4r/8/8/8/7k w - c6 0 2",
    "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1",
    "7k/8/6Q1/8/8/8/8/K7 w - - 0 1",
]

N_GAMES = 2000
MAX_PLIES = 100

_REASONS = {
    "checkmate": core.Termination.CHECKMATE,
    "insufficient": core.Termination.INSUFFICIENT_MATERIAL,
    "stalemate": core.Termination.STALEMATE,
    "fifty": core.Termination.FIFTY_MOVES,
    "threefold": core.Termination.THREEFOLD_REPETITION,
}


def expected_termination(board: chess.Board) -> core.Termination | None:
    """Our rules phrased with python-chess predicates (automatic draws)."""
    if board.is_checkmate():
        return _REASONS["checkmate"]
    if board.is_insufficient_material():
        return _REASONS["insufficient"]
    if not any(board.generate_legal_moves()):
        return _REASONS["stalemate"]
    if board.halfmove_clock >= 100:
        return _REASONS["fifty"]
    if board.is_repetition(3):
        return _REASONS["threefold"]
    return None


def choose_move(board: chess.Board, rng: random.Random) -> chess.Move:
    moves = list(board.legal_moves)
    # Undo our own previous move now and then, to provoke repetitions.
    if len(board.move_stack) >= 2 and rng.random() < 0.35:
        prev = board.move_stack[-2]
        back = chess.Move(prev.to_square, prev.from_square)
        if back in moves:
            return back
    return rng.choice(moves)


def play_and_compare(seed: int, keys: dict[object, int], stats: dict[str, int]) -> None:
    rng = random.Random(seed)
    fen = STARTS[seed % len(STARTS)]
    board = chess.Board(fen)
    game = core.Game(fen)
    for _ in range(MAX_PLIES):
        ours_fen = game.fen()
        assert ours_fen == board.fen(), (seed, board.move_stack)
        assert core.Game(ours_fen).fen() == ours_fen
        assert sorted(game.legal_uci()) == sorted(m.uci() for m in board.legal_moves), ours_fen
        assert game.is_check() == board.is_check(), ours_fen
        assert game.halfmove_clock == board.halfmove_clock
        assert game.fullmove_number == board.fullmove_number
        assert (game.repetitions >= 1) == board.is_repetition(2), ours_fen
        assert (game.repetitions >= 2) == board.is_repetition(3), ours_fen
        tkey = board._transposition_key()
        known = keys.setdefault(tkey, game.key)
        assert known == game.key, f"equal positions with different keys: {ours_fen}"
        expected = expected_termination(board)
        outcome = game.outcome()
        if expected is None:
            assert outcome is None, (ours_fen, outcome)
        else:
            assert outcome is not None and outcome.termination == expected, ours_fen
            assert outcome.result == board.result(claim_draw=True) or expected in (
                _REASONS["fifty"],
                _REASONS["threefold"],
            )
            stats[expected.name] = stats.get(expected.name, 0) + 1
            return
        move = choose_move(board, rng)
        game.push_uci(move.uci())
        board.push(move)
    stats["unfinished"] = stats.get("unfinished", 0) + 1


def test_random_games_match_python_chess() -> None:
    keys: dict[object, int] = {}
    stats: dict[str, int] = {}
    for seed in range(N_GAMES):
        play_and_compare(seed, keys, stats)
    # Distinct positions must have distinct keys (no collisions in this sample).
    assert len(set(keys.values())) == len(keys)
    # The sample exercised every kind of ending.
    for name in ("CHECKMATE", "STALEMATE", "INSUFFICIENT_MATERIAL", "FIFTY_MOVES",
                 "THREEFOLD_REPETITION"):
        assert stats.get(name, 0) > 0, stats


@pytest.mark.parametrize("seed", range(20))
def test_pop_restores_positions(seed: int) -> None:
    rng = random.Random(seed)
    game = core.Game()
    fens = [game.fen()]
    played = []
    for _ in range(60):
        legal = game.legal_uci()
        if not legal or game.outcome() is not None:
            break
        move = rng.choice(legal)
        game.push_uci(move)
        played.append(move)
        fens.append(game.fen())
    assert game.moves() == played
    while played:
        assert game.pop() == played.pop()
        fens.pop()
        assert game.fen() == fens[-1]
    with pytest.raises(IndexError):
        game.pop()


def test_castling_accepts_king_takes_rook_notation() -> None:
    game = core.Game("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1")
    game.push_uci("e1h1")
    assert game.fen() == "r3k2r/8/8/8/8/8/8/R4RK1 b kq - 1 1"
    assert game.moves() == ["e1g1"]


def test_en_passant_square_only_when_legal() -> None:
    # The c-pawn double push cannot be taken en passant: the b5 pawn is pinned
    # along the fifth rank, so the FEN and key carry no en-passant square.
    game = core.Game("8/2p5/8/KP5r/8/8/8/7k b - - 0 1")
    game.push_uci("c7c5")
    assert game.fen().split()[3] == "-"
    assert chess.Board(game.fen()).fen() == game.fen()
