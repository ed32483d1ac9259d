"""The second engine's search: the native alpha-beta (``cpp/alphabeta``) over the
NNUE student or the control evaluator (docs/nnue.md).

- ``load_net(spec)``: ``"control"`` (or None) gives no network, so the search
  evaluates with material plus piece-square tables; a path loads an ``.nnue``
  file (``ValueError`` naming the file when it is not one).
- ``AlphaBetaLimits``: depth, nodes, movetime or infinite (at least one).
- ``AlphaBetaEngine``: one searcher with its own transposition table; ``search``
  takes a ``core.Game`` so the game's history reaches the repetition rule, and
  releases the GIL while it searches; ``stop`` may be called from another thread.
- ``AlphaBetaResult``: the move, score (centipawns or mate in moves), depth,
  nodes, speed and principal variation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chesszero import _core
from chesszero.core import Game

CONTROL = "control"
"""``--net control``: the control evaluator (material + piece-square tables)."""


def load_net(spec: str | Path | None) -> Any | None:
    """The network ``spec`` names: None for ``control``/None, else a loaded ``.nnue`` file."""
    if spec is None or str(spec) == CONTROL:
        return None
    path = Path(spec)
    if not path.is_file():
        raise FileNotFoundError(f"NNUE network file not found: {str(path)!r}")
    return _core.NnueNet.load(str(path))


def net_label(spec: str | Path | None) -> str:
    """A short name for the evaluator ``spec`` names (``id name``, match tables)."""
    return CONTROL if spec is None or str(spec) == CONTROL else Path(spec).stem


@dataclass(frozen=True)
class AlphaBetaLimits:
    """What one search may spend; zero means "no limit of this kind"."""

    depth: int = 0
    nodes: int = 0
    movetime_ms: int = 0
    infinite: bool = False

    def __post_init__(self) -> None:
        for name in ("depth", "nodes", "movetime_ms"):
            value = getattr(self, name)
            if value < 0:
                raise ValueError(f"AlphaBetaLimits.{name} must be >= 0, got {value}")
        if not (self.infinite or self.depth or self.nodes or self.movetime_ms):
            raise ValueError("AlphaBetaLimits needs a depth, nodes, movetime_ms or infinite")


@dataclass(frozen=True)
class AlphaBetaResult:
    """One finished search (``score_cp`` or ``mate``, from the side to move's view)."""

    best: str | None
    ponder: str | None
    score_cp: int | None
    mate: int | None
    depth: int
    seldepth: int
    nodes: int
    nps: int
    time_ms: int
    pv: tuple[str, ...]

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> AlphaBetaResult:
        return cls(
            best=raw.get("best"), ponder=raw.get("ponder"), score_cp=raw.get("score_cp"),
            mate=raw.get("mate"), depth=int(raw.get("depth", 0)), seldepth=int(raw.get("seldepth", 0)),
            nodes=int(raw.get("nodes", 0)), nps=int(raw.get("nps", 0)), time_ms=int(raw.get("time_ms", 0)),
            pv=tuple(raw.get("pv") or ()),
        )


class AlphaBetaEngine:
    """One native alpha-beta searcher (module docstring)."""

    def __init__(self, net: str | Path | None = None, *, hash_mb: int = 16) -> None:
        self.label = net_label(net)
        self._native = _core.AlphaBeta(load_net(net), hash_mb=hash_mb)

    def search(
        self, game: Game, limits: AlphaBetaLimits, on_info: Callable[[AlphaBetaResult], None] | None = None
    ) -> AlphaBetaResult:
        """Searches ``game``'s current position (its moves count for repetitions)."""
        callback = None if on_info is None else (lambda raw: on_info(AlphaBetaResult.from_dict(raw)))
        raw = self._native.search(
            game.start_fen(), list(game.moves()), depth=limits.depth, nodes=limits.nodes,
            movetime_ms=limits.movetime_ms, infinite=limits.infinite, on_info=callback,
        )
        return AlphaBetaResult.from_dict(raw)

    def stop(self) -> None:
        """Ends a running search soon (thread-safe); it returns its best move so far."""
        self._native.stop()

    def clear(self) -> None:
        """Forgets everything learned in earlier searches (a new game)."""
        self._native.clear()

    def set_hash(self, mb: int) -> None:
        self._native.set_hash(mb)


__all__ = ["CONTROL", "AlphaBetaEngine", "AlphaBetaLimits", "AlphaBetaResult", "load_net", "net_label"]
