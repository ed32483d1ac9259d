"""Search speed of a network as a match player runs it, and the visit budget
that gives another network the same wall time per move.

``search_speed`` times fresh ``visits``-visit searches of the given positions,
``slots`` at a time (the batch a match of ``slots`` concurrent games sends),
and returns root visits per second. The clock is this process's CPU time
(search and single-threaded inference run in the calling thread), so other
load on a shared machine does not bias the comparison; on an idle machine
with one thread per player it is the wall time of a move. ``equal_time_visits`` runs the two
networks' measurements interleaved (A, B, A, B, ...) so both see the same
machine load, takes each one's median and scales the reference budget by the
speed ratio: a faster student searches proportionally more visits per move.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

from chesszero.core import Game
from chesszero.evaluate.engine_player import SlotSearch
from chesszero.search.analysis import SearchOptions
from chesszero.search.evaluators import Evaluator

__all__ = ["EqualTime", "equal_time_visits", "search_speed"]


def search_speed(evaluator: Evaluator, games: Sequence[Game], *, visits: int, slots: int = 8,
                 options: SearchOptions | None = None) -> float:
    """Root visits per CPU second of fresh ``visits``-visit searches of ``games``, ``slots`` at a time."""
    if not games:
        raise ValueError("search_speed needs at least one position")
    if visits < 1:
        raise ValueError(f"visits must be >= 1, got {visits}")
    search = SlotSearch(evaluator, slots=slots, options=options)
    start = time.process_time()
    for first in range(0, len(games), slots):
        chunk = list(enumerate(games[first:first + slots]))
        for slot, _ in chunk:
            search.forget(slot)
        search.run(chunk, visits=visits)
    return visits * len(games) / max(time.process_time() - start, 1e-9)


@dataclass(frozen=True)
class EqualTime:
    """Measured speeds (visits/s, median of the repeats) and the equal-time budget."""

    reference_visits: int
    reference_speed: float
    other_speed: float
    other_visits: int
    """``reference_visits * other_speed / reference_speed``, rounded, at least 1."""
    repeats: int

    @property
    def speed_ratio(self) -> float:
        return self.other_speed / self.reference_speed


def equal_time_visits(reference: Evaluator, other: Evaluator, games: Sequence[Game], *, visits: int,
                      slots: int = 8, options: SearchOptions | None = None, repeats: int = 3) -> EqualTime:
    """The visits ``other`` searches in the time ``reference`` takes for ``visits`` (module docstring)."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    speeds: dict[str, list[float]] = {"reference": [], "other": []}
    for _ in range(repeats):
        for key, evaluator in (("reference", reference), ("other", other)):
            speeds[key].append(search_speed(evaluator, games, visits=visits, slots=slots, options=options))
    ref, oth = statistics.median(speeds["reference"]), statistics.median(speeds["other"])
    return EqualTime(visits, ref, oth, max(1, round(visits * oth / ref)), repeats)
