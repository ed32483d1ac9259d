"""Time management: how long and how many visits one ``go`` may search.

``plan_search(limits, ...)`` turns a ``go`` command's limits into a
``SearchPlan``: a root-visit target (retained visits from the reused tree
count, as everywhere in search), an optional wall-clock budget, whether only
``stop`` ends it, and notes about limits this engine does not support. Rules:

- ``go infinite`` and ``go ponder``: until ``stop`` (or ``ponderhit``, which
  the engine treats as "play now": the pondering time was the thinking time).
- ``go nodes N``: N root visits; combined with a time limit, whichever comes
  first.
- ``go movetime T``: ``T - move_overhead`` ms.
- clock (``wtime``/``btime`` [+ ``winc``/``binc``, ``movestogo``]): the
  remaining time shared over ``movestogo`` moves (``default_moves_to_go``
  when absent) plus ``increment_share`` of the increment, never more than
  ``max_share`` of what is left, minus the move overhead, at least
  ``min_ms``. A clock for the other side only is ignored.
- Without an explicit ``nodes``, the engine's ``Visits`` option caps the
  visits (0 = no cap); a ``go`` with no limit at all and ``Visits`` 0
  searches until ``stop``.
- ``depth`` and ``mate`` have no meaning for a best-first tree search; they
  are reported as unsupported and the search runs as if they were absent.
  ``searchmoves`` is likewise reported and ignored (the native search
  cannot restrict root moves yet).
- With a single legal move and a time-limited search, one visit is enough.
"""

from __future__ import annotations

from dataclasses import dataclass

from chesszero.uci.protocol import GoLimits

MAX_VISITS = 100_000_000
"""Largest root-visit target the native search accepts."""


@dataclass(frozen=True)
class TimeSettings:
    """How clock time is spent; all durations in milliseconds."""

    move_overhead_ms: int = 100
    """Reserved per move for communication and GUI latency."""
    default_moves_to_go: int = 30
    """Moves the remaining time must last when the GUI does not say."""
    increment_share: float = 0.75
    """Share of the increment spent on top of the base allotment."""
    max_share: float = 0.4
    """Never spend more than this share of the remaining time on one move."""
    min_ms: int = 10
    """Lower bound of any time budget."""

    def __post_init__(self) -> None:
        if self.move_overhead_ms < 0:
            raise ValueError(f"move_overhead_ms must be >= 0, got {self.move_overhead_ms}")
        if self.default_moves_to_go < 1:
            raise ValueError(f"default_moves_to_go must be >= 1, got {self.default_moves_to_go}")
        if not 0.0 <= self.increment_share <= 1.0:
            raise ValueError(f"increment_share must lie in [0, 1], got {self.increment_share}")
        if not 0.0 < self.max_share <= 1.0:
            raise ValueError(f"max_share must lie in (0, 1], got {self.max_share}")
        if self.min_ms < 1:
            raise ValueError(f"min_ms must be >= 1, got {self.min_ms}")


@dataclass(frozen=True)
class SearchPlan:
    """What one search may spend."""

    visits: int
    """Root-visit target (``MAX_VISITS`` when only time or ``stop`` ends the search)."""
    seconds: float | None
    """Wall-clock budget from the ``go`` command's arrival; None: no time limit."""
    until_stop: bool
    """Only ``stop`` (or ``ponderhit``/``quit``) ends the search (``infinite``, ``ponder``)."""
    notes: tuple[str, ...] = ()
    """Human-readable remarks on unsupported limits (sent as ``info string``)."""


def clock_budget_ms(
    remaining_ms: int, increment_ms: int, moves_to_go: int | None, settings: TimeSettings
) -> int:
    """Milliseconds to spend on this move from the clock (module docstring)."""
    remaining = max(0, remaining_ms)
    increment = max(0, increment_ms)
    moves = moves_to_go if moves_to_go is not None and moves_to_go > 0 else settings.default_moves_to_go
    share = remaining / moves + settings.increment_share * increment
    share = min(share, settings.max_share * remaining)
    return max(settings.min_ms, int(share) - settings.move_overhead_ms)


def plan_search(
    limits: GoLimits,
    *,
    white_to_move: bool,
    visits_option: int,
    legal_moves: int,
    settings: TimeSettings | None = None,
) -> SearchPlan:
    """The ``SearchPlan`` of a ``go`` with ``limits`` (module docstring)."""
    if visits_option < 0:
        raise ValueError(f"visits_option must be >= 0, got {visits_option}")
    settings = settings or TimeSettings()
    notes: list[str] = []
    if limits.depth is not None:
        notes.append(f"go depth {limits.depth} is not supported by tree search; ignored")
    if limits.mate is not None:
        notes.append(f"go mate {limits.mate} is not supported by tree search; ignored")
    if limits.searchmoves:
        notes.append("go searchmoves is not supported; searching all moves")
    if limits.infinite or limits.ponder:
        return SearchPlan(visits=MAX_VISITS, seconds=None, until_stop=True, notes=tuple(notes))

    seconds: float | None = None
    if limits.movetime_ms is not None:
        seconds = max(settings.min_ms, limits.movetime_ms - settings.move_overhead_ms) / 1000.0
    remaining, increment = limits.clock(white_to_move)
    if remaining is not None:
        budget = clock_budget_ms(remaining, increment or 0, limits.movestogo, settings) / 1000.0
        seconds = budget if seconds is None else min(seconds, budget)

    if limits.nodes is not None:
        visits = max(1, min(limits.nodes, MAX_VISITS))
    elif visits_option > 0:
        visits = min(visits_option, MAX_VISITS)
    else:
        visits = MAX_VISITS
    if seconds is not None and limits.nodes is None and legal_moves == 1:
        visits = 1
    until_stop = visits == MAX_VISITS and seconds is None
    return SearchPlan(visits=visits, seconds=seconds, until_stop=until_stop, notes=tuple(notes))


__all__ = ["MAX_VISITS", "SearchPlan", "TimeSettings", "clock_budget_ms", "plan_search"]
