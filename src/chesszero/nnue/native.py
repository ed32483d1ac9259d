"""Every use of the native NNUE and alpha-beta bindings (docs/nnue.md section 7),
in one place, so the rest of ``chesszero.nnue`` is testable without them.

- ``features_batch(fens)``: ``(stm, nstm)`` int16 ``[n, 32]``, -1 padded,
  from ``_core.nnue_features_batch`` (the features come from the engine
  only: there is no second featurizer in the package).
- ``NativeNet``: a ``.nnue`` file loaded by the core; ``evaluate_batch``
  gives int32 centipawns from the side to move's view.
- ``Searcher``: one ``_core.AlphaBeta`` (the control evaluator when no net).

Each checks for its binding when called and raises ``MissingBindingError``
(a ``RuntimeError``) naming it when this build of the core lacks it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from chesszero import _core
from chesszero.nnue.quant import MAX_ACTIVE

__all__ = ["MissingBindingError", "NativeNet", "SearchMove", "Searcher", "features_batch", "has"]

FEATURES = "nnue_features_batch"
NET = "NnueNet"
ALPHABETA = "AlphaBeta"
_CHUNK = 4096


class MissingBindingError(RuntimeError):
    """The native core in use lacks an NNUE binding."""


def has(name: str) -> bool:
    """True when the core has the binding ``name`` (``FEATURES``, ``NET``, ``ALPHABETA``)."""
    return hasattr(_core, name)


def _need(name: str) -> Any:
    if not has(name):
        raise MissingBindingError(
            f"the native core ({getattr(_core, '__file__', '_core')}) has no `_core.{name}` (docs/nnue.md section 7): "
            "rebuild it with the NNUE engine (`make build`)")
    return getattr(_core, name)


def features_batch(fens: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Active feature indices of each FEN, side to move's perspective first: int16 ``[n, 32]`` twice."""
    fn = _need(FEATURES)
    stm = np.full((len(fens), MAX_ACTIVE), -1, np.int16)
    nstm = np.full((len(fens), MAX_ACTIVE), -1, np.int16)
    for i in range(0, len(fens), _CHUNK):
        part = list(fens[i:i + _CHUNK])
        a, b = fn(part)
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != (len(part), MAX_ACTIVE) or b.shape != a.shape:
            raise RuntimeError(f"_core.{FEATURES} returned shapes {list(a.shape)} and {list(b.shape)} "
                               f"for {len(part)} positions, expected [{len(part)}, {MAX_ACTIVE}]")
        stm[i:i + len(part)], nstm[i:i + len(part)] = a, b
    return stm, nstm


class NativeNet:
    """A ``.nnue`` file as the core loads it (``ValueError`` naming the file on any defect)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._net = _need(NET).load(str(self.path))

    @property
    def hidden(self) -> int:
        return int(self._net.hidden)

    @property
    def native(self) -> Any:
        """The ``_core.NnueNet`` (for ``Searcher``)."""
        return self._net

    def evaluate_batch(self, fens: Sequence[str]) -> np.ndarray:
        """Centipawns of each FEN from the side to move's view (int32 ``[n]``)."""
        out = [np.asarray(self._net.evaluate_batch(list(fens[i:i + _CHUNK])), np.int32)
               for i in range(0, len(fens), _CHUNK)]
        return np.concatenate(out) if out else np.zeros(0, np.int32)


@dataclass(frozen=True)
class SearchMove:
    """One alpha-beta search's answer (score from the side to move's view)."""

    best: str | None
    score_cp: int | None
    mate: int | None
    depth: int
    nodes: int


class Searcher:
    """One ``_core.AlphaBeta`` over ``net`` (None: the control evaluator) with its own hash table."""

    def __init__(self, net: NativeNet | None = None, *, hash_mb: int = 16) -> None:
        self._ab = _need(ALPHABETA)(None if net is None else net.native, hash_mb=hash_mb)

    def search(self, start_fen: str, moves: Sequence[str], *, depth: int = 0, nodes: int = 0) -> SearchMove:
        """Searches the position after ``moves`` from ``start_fen`` (the moves count for repetitions)."""
        raw = self._ab.search(start_fen, list(moves), depth=depth, nodes=nodes)
        return SearchMove(best=raw.get("best"), score_cp=raw.get("score_cp"), mate=raw.get("mate"),
                          depth=int(raw.get("depth", 0)), nodes=int(raw.get("nodes", 0)))

    def clear(self) -> None:
        """A new game: forget the hash table."""
        self._ab.clear()
