"""Late-game target diagnostics of finished self-play games (paper 6.1).

The paper's warning signs of late-game target poisoning, counted from game
records alone so every campaign can log them per generation:

- **capped share**: games stopped at the ply cap over finished games;
- **cut-target share**: admitted replay rows (searched positions, the cap
  search included, late-tail searches excluded) that belong to a capped game,
  and so inherit the cut position's value as their outcome target (SPEC 5),
  over all admitted rows;
- **ineligible share**: plies played in the game that give no training row
  (the random opening plies, the untried alternative that starts a restart
  game, any move played without a recorded search, and under the earlier
  late-tail design, ``selfplay.late_tail``, every move chosen by a cheap tail
  search), over all plies played. A restart game's history before its alternative was played (and
  searched) in its source game, so it counts in neither.

The paper's affected interval: 27-32% capped, 36-38% of rows on a cut target,
about one ply in seven ineligible. :class:`CapDiagnostics` holds counts that
add up (``+``) over shards and actors; the shares are ratios of the sums.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from chesszero.selfplay.records import GameRecord

__all__ = ["CapDiagnostics", "cap_diagnostics"]


@dataclass(frozen=True)
class CapDiagnostics:
    """Counts behind the three shares (module docstring)."""

    games: int = 0
    capped_games: int = 0
    rows: int = 0  # admitted rows: searched positions but late-tail ones
    cut_rows: int = 0  # of those, rows of capped games
    plies: int = 0  # plies played in the game (a restart's history excluded)
    ineligible_plies: int = 0  # plies played without a training row

    def __post_init__(self) -> None:
        for part, whole in ((self.capped_games, self.games), (self.cut_rows, self.rows),
                            (self.ineligible_plies, self.plies)):
            if not 0 <= part <= whole:
                raise ValueError(f"CapDiagnostics needs 0 <= part <= whole, got {part} of {whole}")

    def __add__(self, other: CapDiagnostics) -> CapDiagnostics:
        return CapDiagnostics(self.games + other.games, self.capped_games + other.capped_games,
                              self.rows + other.rows, self.cut_rows + other.cut_rows,
                              self.plies + other.plies, self.ineligible_plies + other.ineligible_plies)

    @property
    def capped_share(self) -> float | None:
        return self.capped_games / self.games if self.games else None

    @property
    def cut_target_share(self) -> float | None:
        return self.cut_rows / self.rows if self.rows else None

    @property
    def ineligible_share(self) -> float | None:
        return self.ineligible_plies / self.plies if self.plies else None


def _one(record: GameRecord) -> CapDiagnostics:
    capped = record.termination == "ply_cap"
    rows = record.admitted_rows
    prefix = len(record.prefix_moves) if record.start_type == "random" else min(1, len(record.prefix_moves))
    played = prefix + len(record.moves)
    searched_moves = sum(1 for p in record.plies if p.ply < len(record.moves) and not p.is_tail_search)
    return CapDiagnostics(games=1, capped_games=int(capped), rows=rows, cut_rows=rows if capped else 0,
                          plies=played, ineligible_plies=played - searched_moves)


def cap_diagnostics(records: Sequence[GameRecord]) -> CapDiagnostics:
    """The counts over finished games (an empty sequence gives zeros)."""
    total = CapDiagnostics()
    for record in records:
        total += _one(record)
    return total
