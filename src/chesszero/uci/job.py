"""One ``go``: a search on a background thread that reports ``info`` and ``bestmove``.

The job drives ``SlotSearch`` slot 0 batch by batch; before every batch it
checks, in order: ``stop`` (or ``quit``/``ponderhit``), the time budget, and
(every ``CHECK_INTERVAL_S``) the tree's memory against ``RamLimitMb``. An
``info`` line goes out every ``INFO_INTERVAL_S`` and once at the end, then
``bestmove`` (the most visited move; ponder moves are never sent).

``info`` fields (approximations documented here):

- ``nodes``: root visits, rounded down (visits kept from the previous move's
  tree count, scaled by the retention share, as the search's visit target
  does); ``nps``: new visits per second.
- ``depth``: the mean ply of the leaves this search expanded, rounded (a
  best-first tree search has no iteration depth; this is how deep it looks
  on average, as Lc0 reports), at least 1; ``seldepth``: the deepest ply any
  traversal of this search reached, at least the principal variation's length.
- ``score``: ``mate N`` when the search proved the root won or lost (N
  moves to mate along the proof, negative when getting mated); without
  proven results, when the principal variation ends in checkmate and the
  root value agrees in sign (|value| >= ``MATE_MIN_VALUE``); else ``cp``
  from the root value by ``protocol.value_to_cp``; ``wdl`` (with
  ``UCI_ShowWDL``) by ``protocol.value_to_wdl``.

A search whose root is proven ends at once; under ``go infinite`` or
``go ponder`` the job still waits for ``stop`` before ``bestmove``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from chesszero import core
from chesszero.evaluate.engine_player import RootReport, SlotSearch
from chesszero.uci.protocol import (
    Info,
    Score,
    format_bestmove,
    format_info,
    format_info_string,
    value_to_cp,
    value_to_wdl,
)
from chesszero.uci.timeman import MAX_VISITS, SearchPlan

INFO_INTERVAL_S = 1.0
CHECK_INTERVAL_S = 0.1
MATE_MIN_VALUE = 0.5
BYTES_PER_NODE = 64
"""Tree memory estimate per node: the 40-byte node plus arena growth and reuse scratch."""
PV_PLIES = 64


@dataclass(frozen=True)
class JobSettings:
    """What a job needs from the engine options."""

    ram_limit_mb: int
    show_wdl: bool


def mate_score(game: core.Game, pv: tuple[str, ...], value: float) -> int | None:
    """Moves to mate (negative: getting mated) when ``pv`` ends in checkmate, else None."""
    if not pv or abs(value) < MATE_MIN_VALUE:
        return None
    line = game.copy()
    for move in pv:
        line.push_uci(move)
    outcome = line.outcome()
    if outcome is None or outcome.termination is not core.Termination.CHECKMATE:
        return None
    plies = len(pv)
    if plies % 2 == 1 and value > 0:
        return (plies + 1) // 2
    if plies % 2 == 0 and value < 0:
        return -(plies // 2)
    return None


def proven_mate(report: RootReport) -> int | None:
    """Moves to mate of a root the search proved won (negative: lost), else None."""
    if report.proven == 1:
        return (report.proven_plies + 1) // 2
    if report.proven == -1:
        return -(report.proven_plies // 2)
    return None


def build_info(
    game: core.Game, report: RootReport, *, elapsed_s: float, new_visits: float, show_wdl: bool
) -> Info:
    """The ``info`` line for a root report (module docstring)."""
    mate = proven_mate(report)
    if mate is None and report.proven is None:
        mate = mate_score(game, report.pv, report.value)
    score = Score(mate=mate) if mate is not None else Score(cp=value_to_cp(report.value))
    depth = max(1, round(report.mean_depth))
    return Info(
        depth=depth,
        seldepth=max(depth, report.seldepth, len(report.pv)),
        nodes=int(report.visits),  # floor: retained visits are fractional
        nps=int(new_visits / elapsed_s) if elapsed_s > 0 else None,
        time_ms=int(elapsed_s * 1000),
        score=score,
        wdl=value_to_wdl(report.value) if show_wdl else None,
        pv=report.pv,
    )


def terminal_info(game: core.Game) -> str:
    """The ``info`` line for a position with no legal move (mate 0 or a draw)."""
    outcome = game.outcome()
    if outcome is not None and outcome.termination is core.Termination.CHECKMATE:
        return format_info(Info(depth=0, score=Score(mate=0)))
    return format_info(Info(depth=0, score=Score(cp=0)))


class SearchJob:
    """A running ``go``; ``emit`` writes one protocol line (thread-safe)."""

    def __init__(
        self,
        search: SlotSearch,
        game: core.Game,
        plan: SearchPlan,
        settings: JobSettings,
        emit: Callable[[str], None],
        *,
        started: float,
        on_failure: Callable[[], None],
    ) -> None:
        self.game = game
        self.plan = plan
        self._search = search
        self._settings = settings
        self._emit = emit
        self._started = started
        self._on_failure = on_failure
        self._stop = threading.Event()
        self._finished = threading.Event()
        self._deadline = started + plan.seconds if plan.seconds is not None else None
        self._thread = threading.Thread(target=self._run, name="cz-uci-search", daemon=True)
        self._start_visits = 0.0
        self._next_info = started + INFO_INTERVAL_S
        self._next_check = started + CHECK_INTERVAL_S

    def start(self) -> None:
        self._thread.start()

    @property
    def running(self) -> bool:
        """Until the search is over; False from just before ``bestmove`` is written,
        so a GUI reacting to ``bestmove`` always finds the engine idle."""
        return self._thread.is_alive() and not self._finished.is_set()

    def stop(self) -> None:
        """Asks the search to finish after the current batch and waits for ``bestmove``."""
        self._stop.set()
        self._thread.join()

    @property
    def ends_by_itself(self) -> bool:
        """True when a visit or time limit ends the search without ``stop``."""
        return not self.plan.until_stop and (self.plan.visits < MAX_VISITS or self.plan.seconds is not None)

    def wait(self) -> None:
        """Waits for the search to end by itself (its ``bestmove`` written)."""
        self._thread.join()

    def _run(self) -> None:
        best: str | None
        try:
            self._search.start([(0, self.game)], visits=self.plan.visits)
            self._start_visits = self._retained_visits()
            self._search.drive(self._keep_going)
            if self.plan.until_stop:  # a proven root ends the search early: wait for stop
                self._stop.wait()
            report = self._search.report(0, pv_len=PV_PLIES)
            self._emit(self._info(report))
            best = self._search.choose(0, ply=self.game.ply)
        except Exception as error:  # the engine must answer every go, even when inference fails
            self._on_failure()
            self._emit(format_info_string(f"error search failed: {type(error).__name__}: {error}"))
            best = None
        self._finished.set()  # nothing touches the search after this point
        self._emit(format_bestmove(best))

    def _retained_visits(self) -> float:
        """Root visits kept from the previous move's tree (0 for a fresh root)."""
        try:
            return self._search.report(0, pv_len=0).visits
        except ValueError:  # the root has not been evaluated yet
            return 0.0

    def _keep_going(self) -> bool:
        if self._stop.is_set():
            return False
        now = time.monotonic()
        if self._deadline is not None and now >= self._deadline:
            return False
        if now >= self._next_check:
            self._next_check = now + CHECK_INTERVAL_S
            report = self._search.report(0, pv_len=PV_PLIES)
            limit = self._settings.ram_limit_mb * 1024 * 1024
            if report.nodes * BYTES_PER_NODE >= limit:
                self._emit(
                    format_info_string(
                        f"tree reached RamLimitMb={self._settings.ram_limit_mb} "
                        f"({report.nodes} nodes); stopping the search"
                    )
                )
                return False
            if now >= self._next_info:
                self._next_info = now + INFO_INTERVAL_S
                self._emit(self._info(report))
        return True

    def _info(self, report: RootReport) -> str:
        elapsed = max(1e-6, time.monotonic() - self._started)
        info = build_info(
            self.game,
            report,
            elapsed_s=elapsed,
            new_visits=max(0.0, report.visits - self._start_visits),
            show_wdl=self._settings.show_wdl,
        )
        return format_info(info)


__all__ = ["JobSettings", "SearchJob", "build_info", "mate_score", "proven_mate", "terminal_info"]
