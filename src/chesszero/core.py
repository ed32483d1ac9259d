"""Python face of the native chess core (``chesszero._core``).

The C++ core owns the board, the rules and the network encoding (SPEC 1-3);
this module only adds Python value types (``Outcome``, ``Termination``) and
re-exports the native names. Nothing here re-implements chess logic, and the
game-ending and result codes come from the core's enums.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from chesszero import _core
from chesszero._core import (  # noqa: F401  (re-exported API)
    ENCODING_VERSION,
    HISTORY_MOVES,
    NUM_ACTIONS,
    NUM_BINARY_PLANES,
    NUM_PLANES,
    PACKED_BYTES,
    ChessError,
    IllegalMoveError,
    InvalidActionError,
    InvalidFenError,
    action_info,
    encode_batch,
    encode_packed_batch,
    mirror_action,
    mirror_action_table,
    mirror_packed,
    mirror_planes,
    unpack_planes,
)

STARTING_FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"

LENGTH_SCALE = 400.0
"""The remaining-length head predicts ``plies_remaining / LENGTH_SCALE`` (SPEC 5):
the replay's labels and the search's moves-left estimates share this scale."""


_T = _core.Termination
_R = _core.GameResult


class Termination(enum.Enum):
    """Why a game ended by the rules (the native core's codes)."""

    CHECKMATE = _T.CHECKMATE.value
    STALEMATE = _T.STALEMATE.value
    INSUFFICIENT_MATERIAL = _T.INSUFFICIENT_MATERIAL.value
    THREEFOLD_REPETITION = _T.THREEFOLD_REPETITION.value
    FIFTY_MOVES = _T.FIFTY_MOVES.value


TERMINATION_NAMES: dict[int, str] = {
    code.value: name.lower() for name, code in _T.__members__.items() if code != _T.NONE
}
"""Name of every native game-ending code (the self-play adjudications included),
in code order: ``{1: "checkmate", ..., 7: "resignation"}``."""

RESULT_TEXT: dict[int, str] = {
    _R.WHITE_WINS.value: "1-0",
    _R.BLACK_WINS.value: "0-1",
    _R.DRAW.value: "1/2-1/2",
}
"""PGN result of each native result code of a finished game."""


@dataclass(frozen=True)
class Outcome:
    """Result of a finished game: ``result`` is "1-0", "0-1" or "1/2-1/2";
    ``winner`` is True (White), False (Black) or None (draw)."""

    result: str
    termination: Termination
    winner: bool | None

    def score_for(self, white: bool) -> float:
        """1, 0.5 or 0 from the point of view of White (``white``) or Black."""
        if self.winner is None:
            return 0.5
        return 1.0 if self.winner == white else 0.0


_WINNERS = {_R.WHITE_WINS.value: True, _R.BLACK_WINS.value: False, _R.DRAW.value: None}


class Game(_core._Game):
    """A chess game: start position plus moves, with history-aware encoding.

    ``Game()`` starts from the standard position; ``Game(fen)`` parses a FEN
    strictly and raises ``InvalidFenError`` quoting it when malformed.
    """

    def __init__(self, fen: str | None = None) -> None:
        super().__init__(fen)
        self._initialised = True

    def copy(self) -> Game:
        clone = Game()
        clone._assign(self)
        return clone

    def outcome(self) -> Outcome | None:
        termination, result = self._status()
        if termination == _T.NONE.value:
            return None
        return Outcome(result=RESULT_TEXT[result], termination=Termination(termination), winner=_WINNERS[result])

    def is_game_over(self) -> bool:
        return self._status()[0] != _T.NONE.value

    def ending_actions(self) -> tuple[list[int], list[int]]:
        """The legal actions (SPEC 3 ids) after which the game ends in checkmate
        and those after which it ends in stalemate (the rules' precedence: a move
        leaving insufficient material is neither), in legal-move order."""
        mates, stalemates = self._ending_actions()
        return list(mates), list(stalemates)

    def __repr__(self) -> str:
        # A Game whose FEN was refused still exists in the traceback's frames (pytest
        # prints their locals); the native object behind it was never built.
        if not getattr(self, "_initialised", False):
            return "Game(<not initialised: invalid FEN>)"
        return f"Game({self.fen()!r}, ply={self.ply})"


__all__ = [
    "ENCODING_VERSION",
    "HISTORY_MOVES",
    "NUM_ACTIONS",
    "NUM_BINARY_PLANES",
    "NUM_PLANES",
    "PACKED_BYTES",
    "RESULT_TEXT",
    "STARTING_FEN",
    "TERMINATION_NAMES",
    "ChessError",
    "Game",
    "IllegalMoveError",
    "InvalidActionError",
    "InvalidFenError",
    "Outcome",
    "Termination",
    "action_info",
    "encode_batch",
    "encode_packed_batch",
    "mirror_action",
    "mirror_action_table",
    "mirror_packed",
    "mirror_planes",
    "unpack_planes",
]
