"""Live progress of a ladder calibration on a ``rich`` console.

``RichReporter`` implements ``ladder.CalibrationReporter``: an overall bar
(games, elapsed, estimated time left), a bar for the pairing being played
with its running +W =D -L, one line per finished pairing (result, score,
Elo difference, time) and, at the end, the fitted table with its anchor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from chesszero.evaluate.elo import elo_difference

if TYPE_CHECKING:
    from chesszero.evaluate.ladder import LadderTable
    from chesszero.evaluate.match import GameRecord, MatchResult


class RichReporter:
    """Live calibration progress on a ``rich`` console (stderr by default)."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=self.console,
        )
        self._total: TaskID | None = None
        self._current: TaskID | None = None
        self._pairings: list[tuple[str, str]] = []
        self._games = 0
        self._done = 0
        self._tally = [0, 0, 0]

    def begin(self, pairings: Sequence[tuple[str, str]], games_per_pairing: int) -> None:
        self._pairings, self._games = list(pairings), games_per_pairing
        self.console.print(
            f"[bold]Calibrating {len(pairings)} pairings x {games_per_pairing} games[/bold]"
        )
        self._progress.start()
        self._total = self._progress.add_task("all games", total=len(pairings) * games_per_pairing)
        self._next_pairing()

    def _next_pairing(self) -> None:
        if self._current is not None:
            self._progress.remove_task(self._current)
            self._current = None
        if self._done < len(self._pairings):
            a, b = self._pairings[self._done]
            self._tally = [0, 0, 0]
            label = f"[{self._done + 1}/{len(self._pairings)}] {a} vs {b}"
            self._current = self._progress.add_task(label, total=self._games)

    def game(self, record: GameRecord) -> None:
        self._tally[{1.0: 0, 0.5: 1, 0.0: 2}[record.score]] += 1
        wins, draws, losses = self._tally
        a, b = self._pairings[self._done]
        label = f"[{self._done + 1}/{len(self._pairings)}] {a} vs {b} +{wins} ={draws} -{losses}"
        assert self._current is not None and self._total is not None
        self._progress.update(self._current, advance=1, description=label)
        self._progress.advance(self._total)

    def pairing(self, match: MatchResult, seconds: float) -> None:
        score = match.score
        diff = (
            f"{elo_difference(score):+.0f} Elo"
            if 0.0 < score < 1.0
            else ("sweep" if score == 1.0 else "swept")
        )
        self._progress.console.print(
            f"[green]done[/green] {match.first} vs {match.second}: "
            f"+{match.wins} ={match.draws} -{match.losses}  score {score:.3f}  ({diff})  "
            f"{seconds:.0f} s"
        )
        self._done += 1
        self._next_pairing()

    def end(self, table: LadderTable) -> None:
        self._progress.stop()
        self.console.print(table.header(), soft_wrap=True)
        grid = Table()
        for column in ("rung", "rating", "+/-"):
            grid.add_column(column, justify="right")
        for r in table.ordered():
            grid.add_row(r.name, f"{r.rating:.0f}", f"{r.stderr or 0.0:.0f}")
        self.console.print(grid)
        self.console.print(f"calibration took {table.seconds / 60:.1f} min")


__all__ = ["RichReporter"]
