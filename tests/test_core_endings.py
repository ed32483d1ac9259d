"""``Game.ending_actions``: the native list of a position's checkmating and
stalemating moves (``cz::ending_moves``; replay rows' ``endings`` bits and
``evaluate.mates``) against playing every legal move and reading the outcome."""

from __future__ import annotations

import random

import pytest

from chesszero import core


def _ending_actions_by_playing(game: core.Game) -> tuple[list[int], list[int]]:
    """The reference: play every legal move and read the game's outcome."""
    mates, stalemates = [], []
    for action in game.legal_actions().tolist():
        game.push_action(action)
        outcome = game.outcome()
        game.pop()
        if outcome is not None and outcome.termination is core.Termination.CHECKMATE:
            mates.append(action)
        elif outcome is not None and outcome.termination is core.Termination.STALEMATE:
            stalemates.append(action)
    return mates, stalemates


@pytest.mark.parametrize("fen", [
    "7k/8/5K2/8/8/8/8/6Q1 w - - 0 1",      # Qg7# and the stalemating Qg6
    "7k/8/6K1/8/8/8/P3B3/8 w - - 0 1",     # Bc4 stalemates, nothing mates
    "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1",   # back-rank Ra8#
    "7k/5Q2/6K1/8/8/8/8/8 w - - 0 1",      # four mates, ten stalemating moves (king and queen)
    "k7/8/1K6/8/8/8/8/2B5 w - - 0 1",      # king and bishop: a stalemate leaves insufficient material
])
def test_the_native_ending_actions_match_playing_every_move(fen: str) -> None:
    game = core.Game(fen)
    assert game.ending_actions() == _ending_actions_by_playing(game)
    assert game.fen() == fen


def test_the_native_ending_actions_match_along_random_games() -> None:
    rng, seen = random.Random(3), [0, 0]
    for _ in range(50):
        game = core.Game()
        while not game.is_game_over() and game.ply < 300:
            mates, stalemates = game.ending_actions()
            assert (mates, stalemates) == _ending_actions_by_playing(game)
            seen[0] += bool(mates)
            seen[1] += bool(stalemates)
            game.push_action(rng.choice(game.legal_actions().tolist()))
    assert seen[0] > 0  # random games do reach positions with a mate in one
