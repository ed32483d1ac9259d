"""Searching many positions at once and playing games on past the ply cap (study 1).

:func:`search_values` gives the root value of each position at a visit
budget (one :class:`~chesszero.search.analysis.BatchSearch`, no root noise);
:func:`play_on` continues every game with the same evaluator and search
until the rules end it or ``extra_plies`` more plies were played; a game
still unfinished then is scored a draw (as matches score their ply cap,
SPEC 10) and counted as adjudicated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.progress import Progress

from chesszero import core
from chesszero.search.evaluators import Evaluator

__all__ = ["Continuation", "play_on", "search_values"]


def _searcher(evaluator: Evaluator, slots: int, options: object, seed: int) -> object:
    from chesszero.search.analysis import BatchSearch

    return BatchSearch(evaluator, slots=max(1, slots), options=options, seed=seed)  # type: ignore[arg-type]


def search_values(games: Sequence[core.Game], evaluator: Evaluator, *, visits: int, options: object,
                  seed: int = 0) -> list[float]:
    """Root value (W - L, side to move) of each game's position after ``visits`` visits."""
    if not games:
        return []
    search = _searcher(evaluator, len(games), options, seed)
    return [r.value for r in search.search(list(games), visits=visits)]  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Continuation:
    result: str  # PGN result ("1/2-1/2" also when adjudicated)
    plies: int  # plies played past the cut
    adjudicated: bool  # still unfinished after extra_plies


def play_on(games: Sequence[core.Game], evaluator: Evaluator, *, visits: int, options: object,
            extra_plies: int, seed: int = 0, progress: bool = True) -> list[Continuation]:
    """Plays every game on (most visited move, no noise); the games are not modified."""
    live = [g.copy() for g in games]
    played = [0] * len(live)
    search = _searcher(evaluator, len(live), options, seed)
    with Progress(disable=not progress, transient=True) as bar:
        task = bar.add_task("continuing cut games", total=extra_plies)
        for _ in range(extra_plies):
            open_ = [i for i, g in enumerate(live) if not g.is_game_over()]
            if not open_:
                break
            results = search.search([live[i] for i in open_], visits=visits)  # type: ignore[attr-defined]
            for i, r in zip(open_, results, strict=True):
                live[i].push_uci(r.best_move)
                played[i] += 1
            bar.advance(task)
    out = []
    for g, n in zip(live, played, strict=True):
        outcome = g.outcome()
        out.append(Continuation(outcome.result if outcome else "1/2-1/2", n, outcome is None))
    return out
