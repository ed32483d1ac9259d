"""The server's thinking: the ``chesszero uci`` engine, driven by its own protocol.

``ServerThinker`` holds one ``uci.UciEngine`` over the served artifact (so
the search, its evaluation settings, tree reuse between moves and the model
loading are exactly those of ``chesszero uci``) and asks it, for each
request, ``position fen <start> moves ...`` then ``go nodes <visits>``; the
answer is read from the engine's last ``info`` line (``UCI_ShowWDL`` on:
the WDL of the search's root value by SPEC 5's ``wdl(v)``) and its
``bestmove``, plus the root moves' visits and priors of that search.
One search runs at a time; requests wait their turn.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

from chesszero import core
from chesszero.uci.engine import EngineSettings, UciEngine
from chesszero.uci.model import source_from_path

MAX_VISITS = 100_000
"""Largest visit count a page may ask the server for."""
SEARCH_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Thought:
    """One server search: the move, the evaluation and the root moves."""

    bestmove: str
    wdl: tuple[float, float, float] | None
    """Root value as win/draw/loss probabilities for the side to move (SPEC 5 wdl(v))."""
    value: float | None
    visits: int
    pv: tuple[str, ...]
    moves: tuple[tuple[str, float, float], ...]
    """(move, visits, prior), most visited first."""
    seconds: float

    def to_dict(self) -> dict[str, object]:
        return {
            "bestmove": self.bestmove, "wdl": list(self.wdl) if self.wdl else None, "value": self.value,
            "visits": self.visits, "pv": list(self.pv), "seconds": self.seconds,
            "moves": [{"uci": m, "visits": v, "prior": p} for m, v, p in self.moves],
        }


class _Lines:
    """The engine's output stream: collects lines, signals ``bestmove``."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.done = threading.Event()

    def write(self, text: str) -> int:
        for line in text.splitlines():
            self.lines.append(line)
            if line.startswith("bestmove"):
                self.done.set()
        return len(text)

    def flush(self) -> None:
        pass


def parse_info(line: str) -> dict[str, object]:
    """``nodes``, ``wdl`` (per-mille triple) and ``pv`` of an ``info`` line."""
    tokens = line.split()
    out: dict[str, object] = {}
    for i, token in enumerate(tokens):
        if token == "nodes":
            out["nodes"] = int(tokens[i + 1])
        elif token == "wdl":
            out["wdl"] = tuple(int(t) for t in tokens[i + 1 : i + 4])
        elif token == "pv":
            out["pv"] = tuple(tokens[i + 1 :])
            break
    return out


def check_game(start_fen: str, moves: list[str]) -> core.Game:
    """The game a request describes; ValueError naming a bad FEN or move."""
    game = core.Game(start_fen)
    for ply, move in enumerate(moves):
        try:
            game.push_uci(move)
        except ValueError as error:
            raise ValueError(f"moves[{ply}]: {error}") from None
    if game.is_game_over():
        raise ValueError(f"the game is over ({game.fen()!r})")
    return game


class ServerThinker:
    """Searches for the page with the UCI engine (module docstring)."""

    def __init__(self, artifact: Path, *, threads: int = 1) -> None:
        self._out = _Lines()
        self._engine = UciEngine(source_from_path(artifact), self._out,
                                 settings=EngineSettings(threads=threads, show_wdl=True))
        self._lock = threading.Lock()

    def think(self, start_fen: str, moves: list[str], visits: int) -> Thought:
        if not 1 <= visits <= MAX_VISITS:
            raise ValueError(f"visits must be in 1..{MAX_VISITS}, got {visits}")
        check_game(start_fen, moves)
        with self._lock:
            started = time.monotonic()
            self._out.lines.clear()
            self._out.done.clear()
            self._engine.handle(f"position fen {start_fen}" + (f" moves {' '.join(moves)}" if moves else ""))
            self._engine.handle(f"go nodes {visits}")
            if not self._out.done.wait(SEARCH_TIMEOUT_S):
                self._engine.handle("stop")
            lines = list(self._out.lines)
            errors = [line for line in lines if line.startswith("info string error")]
            best = next((line.split()[1] for line in lines if line.startswith("bestmove")), "(none)")
            if errors or best == "(none)":
                raise RuntimeError("; ".join(errors) or "the engine found no move")
            info = next((parse_info(line) for line in reversed(lines)
                         if line.startswith("info") and " pv " in line), {})
            root = self._engine.root_moves()
            seconds = time.monotonic() - started
        wdl = info.get("wdl")
        return Thought(
            bestmove=best,
            wdl=tuple(x / 1000 for x in wdl) if wdl else None,  # type: ignore[arg-type, union-attr]
            value=(wdl[0] - wdl[2]) / 1000 if wdl else None,  # type: ignore[index]
            visits=int(info.get("nodes", 0)),  # type: ignore[call-overload]
            pv=tuple(info.get("pv", ())),  # type: ignore[arg-type]
            moves=tuple(root),
            seconds=seconds,
        )

    def close(self) -> None:
        self._engine.handle("quit")
