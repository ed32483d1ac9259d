"""Python face of the native chess core (``chesszero._core``).

The C++ core owns the board, the rules and the network encoding (SPEC 1-3);
this module only adds Python value types (``Outcome``, ``Termination``) and
re-exports the native names. Nothing here re-implements chess logic.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from chesszero import _core
from chesszero._core import (  # noqa: F401  (re-exported API)
    ENCODING_VERSION,
    HISTORY_MOVES,
    NUM_ACTIONS,
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


class Termination(enum.Enum):
    """Why a game ended (values match the native core's codes)."""

    CHECKMATE = 1
    STALEMATE = 2
    INSUFFICIENT_MATERIAL = 3
    THREEFOLD_REPETITION = 4
    FIFTY_MOVES = 5


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


_RESULTS = {1: ("1-0", True), 2: ("0-1", False), 3: ("1/2-1/2", None)}


class Game(_core._Game):
    """A chess game: start position plus moves, with history-aware encoding.

    ``Game()`` starts from the standard position; ``Game(fen)`` parses a FEN
    strictly and raises ``InvalidFenError`` quoting it when malformed.
    """

    def __init__(self, fen: str | None = None) -> None:
        super().__init__(fen)

    def copy(self) -> Game:
        clone = Game()
        clone._assign(self)
        return clone

    def outcome(self) -> Outcome | None:
        termination, result = self._status()
        if termination == 0:
            return None
        text, winner = _RESULTS[result]
        return Outcome(result=text, termination=Termination(termination), winner=winner)

    def is_game_over(self) -> bool:
        return self._status()[0] != 0

    def __repr__(self) -> str:
        return f"Game({self.fen()!r}, ply={self.ply})"


__all__ = [
    "ENCODING_VERSION",
    "HISTORY_MOVES",
    "NUM_ACTIONS",
    "NUM_PLANES",
    "PACKED_BYTES",
    "STARTING_FEN",
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
