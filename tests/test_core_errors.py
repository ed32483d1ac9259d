"""Bad input: malformed FENs and moves raise clear errors that quote the
input, leave the game untouched, and fuzzing finds no crash."""

from __future__ import annotations

import chess
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chesszero import core

START = core.STARTING_FEN

BAD_FENS = [
    "",
    "   ",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP w KQkq - 0 1",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR/8 w KQkq - 0 1",
    "rnbqkbnrr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "rnbqkbnr/ppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "rnbqkbnr/pppppppp/44/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "rnbqkbnr/pppppppp/9/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "rnbqkbnr/ppppxppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "rnbq1bnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQ - 0 1",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBKKBNR w kq - 0 1",
    "Pnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w Qkq - 0 1",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkqK - 0 1",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w qkQK - 0 1",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w Z - 0 1",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/1NBQKBNR w KQkq - 0 1",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq e9 0 1",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq e4 0 1",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq e6 0 1",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - -1 1",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 0",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 abc",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1 extra",
    "8/8/8/8/8/8/8/8 w - - 0 1",
    "4k3/4R3/8/8/8/8/8/4K3 w - - 0 1",
]


@pytest.mark.parametrize("fen", BAD_FENS)
def test_malformed_fen_raises_quoting_it(fen: str) -> None:
    with pytest.raises(core.InvalidFenError) as info:
        core.Game(fen)
    assert repr(fen)[1:-1] in str(info.value) or fen in str(info.value)
    assert isinstance(info.value, ValueError)


def test_fen_accepts_four_fields_and_controls() -> None:
    assert core.Game("4k3/8/8/8/8/8/8/4KR2 b - - 0 1").fen() == "4k3/8/8/8/8/8/8/4KR2 b - - 0 1"
    assert core.Game("4k3/8/8/8/8/8/8/4K3 w - -").fen() == "4k3/8/8/8/8/8/8/4K3 w - - 0 1"


BAD_MOVES = ["", "e2", "e2e5", "d4d5", "e2e4", "a7a8x", "e2e4e", "zz99", "e1g1", "0000", "E2E4", "e2e4 ",
             "g1f3q", "\x00\x00\x00\x00"]


@pytest.mark.parametrize("move", BAD_MOVES)
def test_illegal_or_garbled_move_raises_and_keeps_game(move: str) -> None:
    game = core.Game()
    game.push_uci("d2d4")
    before = (game.fen(), game.moves())
    with pytest.raises(core.IllegalMoveError) as info:
        game.push_uci(move)
    message = str(info.value)
    assert game.fen() in message and (move in message or "\\x00" in message)
    assert (game.fen(), game.moves()) == before


def test_bad_actions() -> None:
    game = core.Game()
    for action in (-1, 1880, 10**6):
        with pytest.raises(core.InvalidActionError):
            game.push_action(action)
        with pytest.raises(core.InvalidActionError):
            core.mirror_action(action)
        with pytest.raises(core.InvalidActionError):
            core.action_info(action)
    with pytest.raises(core.IllegalMoveError, match="not a legal move"):
        game.push_action(0)  # a1 -> a2 is blocked by our own pawn
    assert game.ply == 0
    with pytest.raises(TypeError):
        game.push_uci(None)  # type: ignore[arg-type]


fen_chars = st.sampled_from(list("pnbrqkPNBRQK12345678/ wb-KQkqabcdefgh0123456789x"))


@settings(max_examples=400, deadline=None)
@given(st.lists(fen_chars, max_size=90).map("".join))
def test_fuzz_fen_strings_never_crash(text: str) -> None:
    try:
        game = core.Game(text)
    except core.InvalidFenError:
        return
    assert core.Game(game.fen()).fen() == game.fen()


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10**6), st.integers(0, 60), st.integers(0, 3))
def test_fuzz_mutated_fens_agree_with_python_chess(seed: int, pos: int, kind: int) -> None:
    import random

    rng = random.Random(seed)
    board = chess.Board()
    for _ in range(rng.randrange(30)):
        moves = list(board.legal_moves)
        if not moves:
            break
        board.push(rng.choice(moves))
    fen = list(board.fen())
    pos %= len(fen)
    if kind == 0:
        fen[pos] = rng.choice("pnbrqkPNBRQK12345678/")
    elif kind == 1:
        del fen[pos]
    elif kind == 2:
        fen.insert(pos, rng.choice("pnbrqkPNBRQK12345678/ -"))
    text = "".join(fen)
    try:
        game = core.Game(text)
    except core.InvalidFenError:
        return
    # Whatever we accept, python-chess reads with no status error that our
    # strict parser is meant to catch, and with the same legal moves.
    reference = chess.Board(text)
    assert reference.status() & ~chess.STATUS_IMPOSSIBLE_CHECK == chess.STATUS_VALID, text
    assert sorted(game.legal_uci()) == sorted(m.uci() for m in reference.legal_moves)


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=8))
def test_fuzz_move_strings_never_crash(text: str) -> None:
    game = core.Game("r3k2r/1P6/8/3pP3/8/8/8/R3K2R w KQkq d6 0 2")
    legal = set(game.legal_uci())
    try:
        game.push_uci(text)
    except core.IllegalMoveError:
        assert text not in legal
        return
    assert text in legal or text in {"e1h1", "e1a1"}


def test_repr_of_a_game_whose_fen_was_refused_does_not_crash() -> None:
    """pytest's traceback prints the locals of a failed ``Game(bad_fen)``, ``self``
    included: the native object behind it was never built, so ``repr`` must not
    reach it (it once crashed the process in ``Position::fen``)."""
    captured: list[core.Game] = []

    class Spy(core.Game):
        def __init__(self, fen: str) -> None:
            captured.append(self)
            super().__init__(fen)

    with pytest.raises(core.InvalidFenError):
        Spy("8/8/8/8/8/8/8/8 w - - 0 0")
    assert "not initialised" in repr(captured[0])
