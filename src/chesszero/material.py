"""Material balance of positions and replayed games, and the conversion count.

A leaf at the core layer (it imports only ``chesszero.core``), shared by
evaluation (match games) and self-play (game records), so both count the
same way:

- ``material_of_fen(fen)``: White's material minus Black's in pawns
  (P 1, N 3, B 3, R 5, Q 9), from the FEN's board field.
- ``material_swing(start_fen, moves, skip=...)``: replays a game with
  ``core.Game`` and returns the largest lead each side held at any position
  (the position after ``skip`` plies and every later one, the final position
  included) and the final balance.
- ``Conversion``: opportunities (a side was ahead by ``CONVERSION_LEAD`` or
  more pawns at some counted position) and how many of them that side went on
  to win; ``rate`` is None when there was no opportunity. Counts add up
  (``+``), so shards and matches can be summed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from chesszero import core

PIECE_PAWNS: dict[str, int] = {"p": 1, "n": 3, "b": 3, "r": 5, "q": 9}
CONVERSION_LEAD = 5
"""Pawns ahead that make a winning opportunity (issue 10's conversion rate)."""


def material_of_fen(fen: str) -> int:
    """White's material minus Black's, in pawns, from a FEN's board field."""
    board = fen.split(" ", 1)[0]
    return sum(PIECE_PAWNS.get(c.lower(), 0) * (1 if c.isupper() else -1) for c in board)


@dataclass(frozen=True)
class MaterialSwing:
    """Extremes of the material balance over the counted positions of a game."""

    white_lead: int
    """Largest ``white - black`` balance seen (may be negative)."""
    black_lead: int
    """Largest ``black - white`` balance seen (may be negative)."""
    final: int
    """``white - black`` at the last position."""

    def lead(self, white: bool) -> int:
        """The largest lead the given side held."""
        return self.white_lead if white else self.black_lead

    def final_for(self, white: bool) -> int:
        """The final balance from the given side's point of view."""
        return self.final if white else -self.final


def material_swing(start_fen: str, moves: Sequence[str], *, skip: int = 0) -> MaterialSwing:
    """Replays ``moves`` from ``start_fen``; positions before ply ``skip`` are
    played but not counted (self-play uses it to skip the unsearched prefix).

    Raises ``ValueError`` when ``skip`` is outside ``[0, len(moves)]``; an
    illegal move raises the core's ``IllegalMoveError`` quoting it.
    """
    if not 0 <= skip <= len(moves):
        raise ValueError(f"skip must lie in [0, {len(moves)}] (the number of moves), got {skip!r}")
    game = core.Game(start_fen)
    for uci in moves[:skip]:
        game.push_uci(uci)
    balance = material_of_fen(game.fen())
    high = low = balance
    for uci in moves[skip:]:
        game.push_uci(uci)
        balance = material_of_fen(game.fen())
        high, low = max(high, balance), min(low, balance)
    return MaterialSwing(white_lead=high, black_lead=-low, final=balance)


@dataclass(frozen=True)
class Conversion:
    """Winning opportunities and how many were won (module docstring)."""

    opportunities: int = 0
    converted: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.converted <= self.opportunities:
            raise ValueError(
                f"need 0 <= converted ({self.converted}) <= opportunities ({self.opportunities})"
            )

    @property
    def rate(self) -> float | None:
        """Share of opportunities converted; None when there was none."""
        return self.converted / self.opportunities if self.opportunities else None

    def __add__(self, other: Conversion) -> Conversion:
        return Conversion(
            self.opportunities + other.opportunities, self.converted + other.converted
        )

    def describe(self) -> str:
        if self.rate is None:
            return f"no lead of {CONVERSION_LEAD}+ pawns"
        return f"converted {self.converted}/{self.opportunities} ({self.rate:.0%})"


def conversion_of(swing: MaterialSwing, white: bool, won: bool) -> Conversion:
    """One side's opportunity in one game: none, or one (converted if ``won``)."""
    if swing.lead(white) < CONVERSION_LEAD:
        return Conversion()
    return Conversion(1, int(won))


__all__ = [
    "CONVERSION_LEAD",
    "PIECE_PAWNS",
    "Conversion",
    "MaterialSwing",
    "conversion_of",
    "material_of_fen",
    "material_swing",
]
