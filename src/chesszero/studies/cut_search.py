"""Searching many cut positions at once (study 1's search estimators).

:func:`search_values` gives the root value of each position at a visit
budget: one :class:`~chesszero.search.analysis.BatchSearch`, with the
options the caller passes (study 1 turns root noise off).
"""

from __future__ import annotations

from collections.abc import Sequence

from chesszero import core
from chesszero.search.evaluators import Evaluator

__all__ = ["search_values"]


def search_values(games: Sequence[core.Game], evaluator: Evaluator, *, visits: int, options: object,
                  seed: int = 0) -> list[float]:
    """Root value (W - L, side to move) of each game's position after ``visits`` visits."""
    if not games:
        return []
    from chesszero.search.analysis import BatchSearch

    search = BatchSearch(evaluator, slots=len(games), options=options, seed=seed)  # type: ignore[arg-type]
    return [r.value for r in search.search(list(games), visits=visits)]
