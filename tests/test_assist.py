"""Material assist (reference 004's draw-cycle lever) around any evaluator."""

from __future__ import annotations

import numpy as np
import pytest

from chesszero.core import Game
from chesszero.search import UniformEvaluator, analyse
from chesszero.search.assist import (
    MaterialAssist,
    material_balance,
    wdl_of_value,
    with_material_assist,
)

# White: K, Q, R, N, 3 pawns; black: K, R, B, 2 pawns. White to move is
# 9 + 5 + 3 + 3 - (5 + 3 + 2) = +10 pawns.
FEN = "4k3/pp3b2/8/3r4/8/8/PPP5/R2QK1N1 w - - 0 1"


def _planes(*fens: str) -> np.ndarray:
    return np.stack([Game(f).encode() for f in fens]).astype(np.float32)


def test_material_balance_is_from_the_side_to_move() -> None:
    black = FEN.replace(" w ", " b ")
    start = Game().fen()
    np.testing.assert_allclose(material_balance(_planes(FEN, black, start)), [10.0, -10.0, 0.0])


def test_wdl_of_value_matches_spec() -> None:
    np.testing.assert_allclose(wdl_of_value(np.array([1.0, 0.0, -0.4])),
                               [[1, 0, 0], [1 / 3, 1 / 3, 1 / 3], [0.2, 0.2, 0.6]], atol=1e-6)


def test_blend_is_linear_in_the_scalar_value_and_keeps_the_policy() -> None:
    planes = _planes(FEN, FEN.replace(" w ", " b "))
    inner = UniformEvaluator()
    logits0, wdl0 = inner.evaluate(planes)
    logits, wdl = MaterialAssist(inner, 0.4, scale=5.0).evaluate(planes)
    np.testing.assert_array_equal(logits, logits0)
    np.testing.assert_allclose(wdl.sum(axis=1), 1.0, atol=1e-6)
    value = wdl[:, 0] - wdl[:, 2]
    expected = 0.6 * (wdl0[:, 0] - wdl0[:, 2]) + 0.4 * np.tanh(np.array([10.0, -10.0]) / 5.0)
    np.testing.assert_allclose(value, expected, atol=1e-6)


def test_zero_weight_is_the_inner_evaluator() -> None:
    inner = UniformEvaluator()
    assert with_material_assist(inner, 0.0) is inner
    assert isinstance(with_material_assist(inner, 0.3), MaterialAssist)


@pytest.mark.parametrize("weight,scale", [(-0.1, 5.0), (1.5, 5.0), (0.3, 0.0)])
def test_bad_parameters_are_named(weight: float, scale: float) -> None:
    with pytest.raises(ValueError, match="material assist"):
        MaterialAssist(UniformEvaluator(), weight, scale=scale)


def test_assisted_search_takes_a_hanging_queen() -> None:
    # Black's queen on d5 hangs to the e4 pawn; with no knowledge the search is
    # indifferent, with the material assist it prefers the capture.
    fen = "4k3/8/8/3q4/4P3/8/8/4K3 w - - 0 1"
    result = analyse(Game(fen), MaterialAssist(UniformEvaluator(), 0.5), visits=200)
    assert result.best_move == "e4d5"
