"""Any UCI engine as a match ``Player``, at a fixed time per move.

Equal-wall-time matches between two engines built differently (the network's
tree search and the alpha-beta student, docs/nnue.md) are fairest when both
sides run the same way: each is a process spoken to over UCI by python-chess,
with ``go movetime``, one search at a time, so process and protocol costs are
the same for both. ``UciPlayer(command, movetime_ms=100)``; the engine gets
``ucinewgame`` (through python-chess's game token) whenever a new game starts.
Legality and game state come from the native core; python-chess only talks UCI.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import chess
import chess.engine

if TYPE_CHECKING:
    from chesszero.core import Game

START_TIMEOUT_S = 120.0
"""How long an engine may take to start and answer ``uci`` (a network engine loads its model)."""


class UciPlayer:
    """One UCI engine process at ``movetime_ms`` per move (module docstring)."""

    def __init__(self, command: Sequence[str], *, movetime_ms: int, name: str,
                 options: dict[str, int | str | bool] | None = None) -> None:
        if movetime_ms < 1:
            raise ValueError(f"movetime_ms must be at least 1, got {movetime_ms}")
        if not command:
            raise ValueError("a UCI engine command is needed")
        self.name = name
        self.movetime_ms = movetime_ms
        self._command = list(command)
        self._options = dict(options or {})
        self._engine: chess.engine.SimpleEngine | None = None
        self._tokens: dict[int, object] = {}
        self._closed = False

    def new_game(self, slot: int) -> None:
        self._tokens[slot] = object()

    def select_moves(self, games: Sequence[Game], slots: Sequence[int]) -> list[str]:
        if self._closed:
            raise RuntimeError(f"{self.name} is closed")
        if len(games) != len(slots):
            raise ValueError(f"got {len(games)} games but {len(slots)} slots")
        return [self._search(game, slot) for game, slot in zip(games, slots, strict=True)]

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._engine is not None:
            try:
                self._engine.quit()
            except (TimeoutError, chess.engine.EngineError):  # a hung engine is killed, not waited for
                self._engine.close()
            self._engine = None

    def _process(self) -> chess.engine.SimpleEngine:
        if self._engine is None:
            try:
                self._engine = chess.engine.SimpleEngine.popen_uci(self._command, timeout=START_TIMEOUT_S)
            except (FileNotFoundError, chess.engine.EngineError) as error:
                raise RuntimeError(f"{self.name}: cannot start UCI engine {' '.join(self._command)!r}: {error}") from error
            if self._options:
                self._engine.configure(self._options)
        return self._engine

    def _search(self, game: Game, slot: int) -> str:
        board = chess.Board(game.start_fen())
        for uci in game.moves():
            board.push_uci(uci)
        token = self._tokens.setdefault(slot, object())
        result = self._process().play(board, chess.engine.Limit(time=self.movetime_ms / 1000.0), game=token)
        if result.move is None:
            raise RuntimeError(f"{self.name} returned no move for {game.fen()}")
        return result.move.uci()


__all__ = ["UciPlayer"]
