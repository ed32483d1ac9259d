"""Ladder rungs as opponents the page can watch the model play.

The rungs are those of the project's ladder table (``data/ladder.json``,
with their calibrated ratings) or, without one, the default rungs unrated.
Each rung plays through ``evaluate.ladder.rung_player``, exactly as in ladder
matches (Stockfish rungs need ``/usr/games/stockfish``); a player is made on
first use and kept until the server stops. One request at a time.
"""

from __future__ import annotations

import threading
from pathlib import Path

from chesszero.config import REPO_ROOT
from chesszero.config.rungs import DEFAULT_RUNGS, Rung
from chesszero.evaluate.ladder import DEFAULT_TABLE, LadderTable, rung_player
from chesszero.evaluate.players import Player
from chesszero.web.thinking import check_game


class Opponents:
    """The rungs by name and their players."""

    def __init__(self, rungs: list[Rung] | tuple[Rung, ...]) -> None:
        self.rungs = {r.name: r for r in rungs}
        self._players: dict[str, Player] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_table(cls, path: Path = REPO_ROOT / DEFAULT_TABLE) -> Opponents:
        return cls(LadderTable.load(path).rungs if path.is_file() else DEFAULT_RUNGS)

    def describe(self) -> list[dict[str, object]]:
        """Name and rating (None when uncalibrated) of every rung, weakest first."""
        return [{"name": r.name, "rating": r.rating} for r in self.rungs.values()]

    def move(self, rung: str, start_fen: str, moves: list[str]) -> str:
        """The rung's move in the game; ValueError naming an unknown rung, FEN or move."""
        if rung not in self.rungs:
            raise ValueError(f"no rung {rung!r}; rungs are {', '.join(self.rungs)}")
        game = check_game(start_fen, moves)
        with self._lock:
            if rung not in self._players:
                self._players[rung] = rung_player(self.rungs[rung], seed=0, engines=1)
            player = self._players[rung]
            player.new_game(0)
            return player.select_moves([game], [0])[0]

    def close(self) -> None:
        with self._lock:
            for player in self._players.values():
                player.close()
            self._players.clear()
