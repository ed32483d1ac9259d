"""Opponents the page can watch the model play: ladder rungs and the second engine.

The rungs are those of the project's ladder table (``data/ladder.json``,
with their calibrated ratings) or, without one, the default rungs unrated.
Each rung plays through ``evaluate.ladder.rung_player``, exactly as in ladder
matches (Stockfish rungs need ``/usr/games/stockfish``). The second engine
(docs/nnue.md) is offered too, unrated: ``alphabeta-control`` (the control
evaluator) always, and ``alphabeta-student`` when an NNUE student exists
under ``runs/nnue/`` (the newest), each at ``ALPHABETA_MS`` a move. A player
is made on first use and kept until the server stops. One request at a time.
"""

from __future__ import annotations

import threading
from pathlib import Path

from chesszero.config import REPO_ROOT
from chesszero.config.rungs import DEFAULT_RUNGS, Rung
from chesszero.evaluate.alphabeta_player import AlphaBetaPlayer
from chesszero.evaluate.ladder import DEFAULT_TABLE, LadderTable, rung_player
from chesszero.evaluate.players import Player
from chesszero.nnue.paths import latest_student
from chesszero.search.alphabeta import CONTROL
from chesszero.web.thinking import check_game

ALPHABETA_MS = 200
"""Time a move of the alpha-beta opponents."""


def alphabeta_opponents(root: Path = REPO_ROOT) -> dict[str, str]:
    """Opponent name -> network spec of the second engine: the control evaluator,
    and the newest NNUE student when there is one."""
    engines = {"alphabeta-control": CONTROL}
    student = latest_student(root)
    if student is not None:
        engines["alphabeta-student"] = str(student)
    return engines


class Opponents:
    """The rungs and alpha-beta engines by name, and their players."""

    def __init__(self, rungs: list[Rung] | tuple[Rung, ...], engines: dict[str, str] | None = None) -> None:
        self.rungs = {r.name: r for r in rungs}
        self.engines = dict(engines or {})
        self._players: dict[str, Player] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_table(cls, path: Path = REPO_ROOT / DEFAULT_TABLE, *, root: Path = REPO_ROOT) -> Opponents:
        return cls(LadderTable.load(path).rungs if path.is_file() else DEFAULT_RUNGS, alphabeta_opponents(root))

    def describe(self) -> list[dict[str, object]]:
        """Name and rating (None when uncalibrated) of every rung, weakest first, then the engines."""
        return ([{"name": r.name, "rating": r.rating} for r in self.rungs.values()]
                + [{"name": name, "rating": None} for name in self.engines])

    def _player(self, name: str) -> Player:
        if name in self.engines:
            return AlphaBetaPlayer(self.engines[name], movetime_ms=ALPHABETA_MS, name=name)
        return rung_player(self.rungs[name], seed=0, engines=1)

    def move(self, rung: str, start_fen: str, moves: list[str]) -> str:
        """The opponent's move in the game; ValueError naming an unknown opponent, FEN or move."""
        if rung not in self.rungs and rung not in self.engines:
            raise ValueError(f"no opponent {rung!r}; opponents are {', '.join([*self.rungs, *self.engines])}")
        game = check_game(start_fen, moves)
        with self._lock:
            if rung not in self._players:
                self._players[rung] = self._player(rung)
            player = self._players[rung]
            player.new_game(0)
            return player.select_moves([game], [0])[0]

    def close(self) -> None:
        with self._lock:
            for player in self._players.values():
                player.close()
            self._players.clear()
