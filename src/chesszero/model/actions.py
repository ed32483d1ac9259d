"""The action table as the network sees it: (from, to, promotion) per action.

The table itself is owned by the native core (SPEC 3, DESIGN "one contract,
one owner"); this module only reads it through ``core.action_info`` and turns
it into the index arrays the from-to policy head gathers with.  Nothing here
re-derives the enumeration.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

__all__ = ["PROMOTION_PIECES", "ActionTable", "core_action_table"]

PROMOTION_PIECES: tuple[str, ...] = ("q", "r", "b", "n")
"""Order of the promotion offsets ``u`` in the policy head (queen, rook, bishop, knight)."""

_KNIGHT = PROMOTION_PIECES.index("n")


@dataclass(frozen=True, eq=False)
class ActionTable:
    """Per-action canonical origin, destination and promotion piece.

    ``promo[a]`` is an index into :data:`PROMOTION_PIECES`, or ``-1`` for a
    non-promotion action.  Arrays are read-only.
    """

    from_sq: np.ndarray
    to_sq: np.ndarray
    promo: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.from_sq)
        if not (len(self.to_sq) == len(self.promo) == n):
            raise ValueError("action table arrays differ in length")
        for arr in (self.from_sq, self.to_sq):
            if arr.min() < 0 or arr.max() > 63:
                raise ValueError("action table squares must lie in 0..63")
        if self.promo.min() < -1 or self.promo.max() >= len(PROMOTION_PIECES):
            raise ValueError("action table promotion index out of range")
        for arr in (self.from_sq, self.to_sq, self.promo):
            arr.setflags(write=False)

    @classmethod
    def from_triples(cls, triples: Iterable[tuple[int, int, str | None]]) -> ActionTable:
        """Build from ``(from_sq, to_sq, promo)`` triples as ``core.action_info`` returns them."""
        rows = list(triples)
        from_sq = np.array([r[0] for r in rows], dtype=np.int64)
        to_sq = np.array([r[1] for r in rows], dtype=np.int64)
        promo = np.array(
            [-1 if r[2] is None else PROMOTION_PIECES.index(r[2]) for r in rows], dtype=np.int64
        )
        return cls(from_sq=from_sq, to_sq=to_sq, promo=promo)

    def __len__(self) -> int:
        return len(self.from_sq)

    @property
    def num_promotions(self) -> int:
        """Number of explicit promotion actions (88 for chess)."""
        return int((self.promo >= 0).sum())

    def from_to_index(self) -> np.ndarray:
        """Flat index ``from * 64 + to`` into the 64 x 64 score matrix, per action."""
        return self.from_sq * 64 + self.to_sq

    def promotion_gather(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Indices for the promotion offsets ``u_piece(key_to) - u_knight(key_to)``.

        Returns ``(piece_index, knight_index, slot)``: the first two index the
        flattened ``[64 * 4]`` offset table for each promotion action (in
        action order); ``slot[a]`` is the position of action ``a`` among the
        promotion actions, or ``num_promotions`` (a zero slot) for the rest.
        """
        promos = np.flatnonzero(self.promo >= 0)
        to = self.to_sq[promos]
        piece_index = to * len(PROMOTION_PIECES) + self.promo[promos]
        knight_index = to * len(PROMOTION_PIECES) + _KNIGHT
        slot = np.full(len(self), len(promos), dtype=np.int64)
        slot[promos] = np.arange(len(promos), dtype=np.int64)
        return piece_index, knight_index, slot


@functools.cache
def core_action_table() -> ActionTable:
    """The action table read from the native core (cached; the core must be built)."""
    from chesszero import core

    return ActionTable.from_triples(core.action_info(a) for a in range(core.NUM_ACTIONS))
