"""The second engine as a match ``Player``: the native alpha-beta over the NNUE
student or the control evaluator (``search.alphabeta``, docs/nnue.md).

Each move is searched to a fixed node count or for a fixed time (``movetime_ms``,
the "100 ms a move" of equal-wall-time matches). Slots share ``engines``
searchers (slot ``s`` uses searcher ``s % engines``, as ``StockfishPlayer``
does), each single-threaded with its own transposition table, cleared when a
new game starts in one of its slots, so a match is reproducible for a fixed
node count, concurrency and engine count.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from chesszero.search.alphabeta import AlphaBetaEngine, AlphaBetaLimits, net_label

if TYPE_CHECKING:
    from chesszero.core import Game


class AlphaBetaPlayer:
    """The alpha-beta engine at ``nodes`` or ``movetime_ms`` per move (module docstring)."""

    def __init__(
        self,
        net: str | Path | None = None,
        *,
        nodes: int = 0,
        movetime_ms: int = 0,
        engines: int = 1,
        hash_mb: int = 16,
        name: str | None = None,
    ) -> None:
        if (nodes > 0) == (movetime_ms > 0):
            raise ValueError(f"give exactly one of nodes and movetime_ms (> 0), got nodes={nodes}, "
                             f"movetime_ms={movetime_ms}")
        if engines < 1:
            raise ValueError(f"engines must be at least 1, got {engines}")
        self.limits = AlphaBetaLimits(nodes=nodes, movetime_ms=movetime_ms)
        budget = f"n{nodes}" if nodes else f"{movetime_ms}ms"
        self.name = name or f"ab-{net_label(net)}-{budget}"
        self._engines = [AlphaBetaEngine(net, hash_mb=hash_mb) for _ in range(engines)]
        self._pool = ThreadPoolExecutor(max_workers=engines, thread_name_prefix=self.name)
        self._closed = False

    def new_game(self, slot: int) -> None:
        self._engines[slot % len(self._engines)].clear()

    def select_moves(self, games: Sequence[Game], slots: Sequence[int]) -> list[str]:
        if self._closed:
            raise RuntimeError(f"{self.name} is closed")
        if len(games) != len(slots):
            raise ValueError(f"got {len(games)} games but {len(slots)} slots")
        moves = [""] * len(games)
        groups: dict[int, list[int]] = {}
        for index, slot in enumerate(slots):
            groups.setdefault(slot % len(self._engines), []).append(index)

        def work(engine_index: int, indices: list[int]) -> None:
            for i in indices:
                result = self._engines[engine_index].search(games[i], self.limits)
                if result.best is None:
                    raise RuntimeError(f"{self.name} returned no move for {games[i].fen()}")
                moves[i] = result.best

        for future in [self._pool.submit(work, e, idx) for e, idx in sorted(groups.items())]:
            future.result()
        return moves

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._pool.shutdown(wait=True)


__all__ = ["AlphaBetaPlayer"]
