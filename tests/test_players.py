"""Random, greedy and Stockfish players behind the batched Player protocol."""

from __future__ import annotations

import shutil

import pytest

from chesszero import core
from chesszero.evaluate.players import (
    STOCKFISH_PATH,
    GreedyPlayer,
    Player,
    RandomPlayer,
    StockfishPlayer,
    material_balance,
)

needs_stockfish = pytest.mark.skipif(
    shutil.which(STOCKFISH_PATH) is None, reason=f"Stockfish not installed at {STOCKFISH_PATH}"
)


def game_after(*moves: str, fen: str | None = None) -> core.Game:
    game = core.Game(fen)
    for uci in moves:
        game.push_uci(uci)
    return game


def test_material_balance_from_fen() -> None:
    assert material_balance(core.STARTING_FEN, True) == 0
    fen = "4k3/8/8/8/8/8/8/QR2K3 w - - 0 1"  # White has queen and rook
    assert material_balance(fen, True) == 14
    assert material_balance(fen, False) == -14


def test_random_player_is_legal_and_seeded() -> None:
    games = [game_after(), game_after("e2e4"), game_after("d2d4", "d7d5")]
    a = RandomPlayer(seed=5).select_moves(games, [0, 1, 2])
    b = RandomPlayer(seed=5).select_moves(games, [0, 1, 2])
    assert a == b
    assert all(m in g.legal_uci() for m, g in zip(a, games, strict=True))
    many = {RandomPlayer(seed=s).select_moves([games[0]], [0])[0] for s in range(40)}
    assert len(many) > 5


def test_greedy_takes_the_most_material() -> None:
    # White rook on a1 can take a knight on a5 or the queen on h1.
    fen = "4k3/8/8/n7/8/2K5/8/R6q w - - 0 1"
    assert GreedyPlayer().select_moves([core.Game(fen)], [0]) == ["a1h1"]


def test_greedy_prefers_mate_over_material() -> None:
    # Ra8 mates; Nxh2 would win the queen instead.
    fen = "6k1/5ppp/8/4P3/8/8/7q/R3KN2 w - - 0 1"
    game = core.Game(fen)
    assert {"a1a8", "f1h2"} <= set(game.legal_uci())
    assert GreedyPlayer().select_moves([game], [0]) == ["a1a8"]


def test_greedy_breaks_ties_randomly_but_reproducibly() -> None:
    start = [game_after()]
    picks = {GreedyPlayer(seed=s).select_moves(start, [0])[0] for s in range(30)}
    assert len(picks) > 5  # all 20 first moves keep material equal
    assert GreedyPlayer(seed=3).select_moves(start, [0]) == GreedyPlayer(seed=3).select_moves(
        start, [0]
    )


def test_players_refuse_finished_games() -> None:
    mated = game_after("f2f3", "e7e5", "g2g4", "d8h4")
    with pytest.raises(ValueError, match="finished game"):
        RandomPlayer().select_moves([mated], [0])


def test_all_players_satisfy_the_protocol() -> None:
    assert isinstance(RandomPlayer(), Player)
    assert isinstance(GreedyPlayer(), Player)
    assert isinstance(StockfishPlayer(nodes=1), Player)


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        ({"nodes": 0}, "nodes"),
        ({"nodes": 1, "skill_level": 21}, "skill_level"),
        ({"nodes": 1, "engines": 0}, "engines"),
    ],
)
def test_stockfish_options_are_checked(kwargs: dict[str, int], word: str) -> None:
    with pytest.raises(ValueError, match=word):
        StockfishPlayer(**kwargs)


@needs_stockfish
def test_stockfish_batch_is_legal_and_finds_mate() -> None:
    scholar = game_after("e2e4", "e7e5", "f1c4", "b8c6", "d1h5", "g8f6")  # Qxf7#
    games = [game_after(), game_after("e2e4"), scholar, game_after("g1f3", "d7d5")]
    with StockfishPlayer(nodes=200, engines=2) as sf:
        for slot in range(len(games)):
            sf.new_game(slot)
        moves = sf.select_moves(games, [0, 1, 2, 3])
    assert len(moves) == 4
    assert all(m in g.legal_uci() for m, g in zip(moves, games, strict=True))
    assert moves[2] == "h5f7"


@needs_stockfish
def test_stockfish_follows_a_game_across_calls() -> None:
    game = core.Game()
    with StockfishPlayer(nodes=1, engines=1) as sf:
        sf.new_game(0)
        for _ in range(6):
            (move,) = sf.select_moves([game], [0])
            assert move in game.legal_uci()
            game.push_uci(move)
        with pytest.raises(ValueError, match="slots"):
            sf.select_moves([game], [0, 1])
    with pytest.raises(RuntimeError, match="closed"):
        sf.select_moves([game], [0])


def test_missing_stockfish_binary_is_named() -> None:
    sf = StockfishPlayer(nodes=1, path="/nonexistent/stockfish")
    try:
        with pytest.raises(FileNotFoundError, match="/nonexistent/stockfish"):
            sf.select_moves([core.Game()], [0])
    finally:
        sf.close()
