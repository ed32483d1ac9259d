"""Leaf material (SearchOptions.leaf_material, search/leaf_material.h).

The quiescence count is checked against a plain minimax over python-chess
on random positions (same move set: legal captures, en passant, and queen
promotions; either side may stand pat), and the tree's blend against the
root's raw value, which it changes exactly by the formula.
"""

from __future__ import annotations

import math

import chess
import pytest
from search_support import random_boards

from chesszero import core
from chesszero.search import SearchOptions, UniformEvaluator, analyse, quiescent_material

PAWNS = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9, chess.KING: 0}


def _balance(board: chess.Board) -> int:
    us = board.turn
    return sum(v * (len(board.pieces(t, us)) - len(board.pieces(t, not us))) for t, v in PAWNS.items())


def _reference(board: chess.Board, depth: int) -> int:
    """Minimax without pruning: the best of standing pat and every tactical move."""
    best = _balance(board)
    if depth == 0:
        return best
    for move in board.legal_moves:
        tactical = (board.is_capture(move) and move.promotion in (None, chess.QUEEN)) or move.promotion == chess.QUEEN
        if not tactical:
            continue
        board.push(move)
        best = max(best, -_reference(board, depth - 1))
        board.pop()
    return best


@pytest.mark.parametrize(("fen", "values"), [
    (chess.STARTING_FEN, [0, 0, 0, 0]),
    ("4k3/8/8/3q4/8/8/3R4/4K3 w - - 0 1", [-4, 5, 5, 5]),  # the queen hangs
    ("4k3/3r4/8/3q4/8/8/3R4/4K3 w - - 0 1", [-9, 0, -5, -5]),  # RxQ RxR: a queen for a rook
    ("4k3/1P6/8/8/8/8/8/4K3 w - - 0 1", [1, 9, 9, 9]),  # promotion
])
def test_known_positions(fen: str, values: list[int]) -> None:
    assert [quiescent_material(fen, d) for d in (0, 1, 2, 8)] == values


def test_matches_plain_minimax_on_random_positions() -> None:
    tactical = 0
    for board in random_boards(150, seed=11, max_plies=60):
        if board.is_game_over():
            continue
        for depth in (0, 1, 2, 3):
            assert quiescent_material(board.fen(), depth) == _reference(board, depth), (board.fen(), depth)
        tactical += quiescent_material(board.fen(), 3) != _balance(board)
    assert tactical > 10  # the sample exercises captures, not only quiet boards


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="depth"):
        quiescent_material(chess.STARTING_FEN, 17)
    with pytest.raises(ValueError):
        quiescent_material("not a fen", 2)
    for field, value in (("leaf_material", 1.5), ("leaf_material", -0.1), ("leaf_material_scale", 0.0),
                         ("leaf_material_depth", 17), ("leaf_material_depth", -1)):
        with pytest.raises(ValueError, match=field):
            SearchOptions(**{field: value}).validate()


@pytest.mark.parametrize("weight", [0.25, 1.0])
@pytest.mark.parametrize("depth", [0, 3])
def test_root_value_is_the_blend(weight: float, depth: int) -> None:
    for board in random_boards(25, seed=5, max_plies=50):
        if board.is_game_over():
            continue
        options = SearchOptions.evaluation()
        options.leaf_material, options.leaf_material_depth, options.leaf_material_scale = weight, depth, 4.0
        result = analyse(core.Game(board.fen()), UniformEvaluator(), visits=1, options=options)
        expected = weight * math.tanh(quiescent_material(board.fen(), depth) / 4.0)  # the network says 0
        assert result.raw_value == pytest.approx(expected, abs=1e-5)


def test_search_takes_the_hanging_queen_only_with_material() -> None:
    fen = "4k3/8/8/3q4/8/8/3R4/4K3 w - - 0 1"  # Rxd5 wins the queen
    options = SearchOptions.evaluation()
    options.leaf_material = 1.0
    on = analyse(core.Game(fen), UniformEvaluator(), visits=64, options=options)
    assert on.best_move == "d2d5"
    assert max(on.moves, key=lambda m: m.visits).uci == "d2d5"
    off = analyse(core.Game(fen), UniformEvaluator(), visits=64)
    assert off.best_move != "d2d5"  # the uniform network alone has no reason to prefer it
    assert all(m.q == pytest.approx(0.0, abs=1e-6) for m in off.moves if m.visits and m.proven is None)
