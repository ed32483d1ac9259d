"""Cut positions taken from games that went on past the cut (study 1, paper 6.1).

The paper scored its cut-target estimators on "early-cut positions whose
outcome came from play beyond the cap". Here self-play runs with a longer ply
cap than the campaign's; every game still going at the campaign's cap
(``cut_ply``, counted over all plies as the actor counts its cap) gives the
position it would have been cut at, the position one ply earlier, the
actor's own searches at both, and the outcome the game then actually
reached, from the cut position's side to move. A game that reached the
longer cap too is scored a draw and counted as adjudicated.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from chesszero import core
from chesszero.selfplay.records import GameRecord, SearchedPly
from chesszero.studies.cut_targets import outcome_onehot

__all__ = ["CutPosition", "cut_positions"]


@dataclass(frozen=True)
class CutPosition:
    game_id: str
    at: core.Game  # the position after cut_ply plies (the cut)
    before: core.Game  # one ply earlier
    recorded: SearchedPly  # the actor's own search at the cut (with its root noise)
    preceding: SearchedPly  # the actor's search one ply before the cut
    outcome: np.ndarray  # W/D/L one-hot of the game's result, the cut's side to move
    plies_after: int  # plies the game went on past the cut
    adjudicated: bool  # still unfinished at the longer cap: scored a draw

    @property
    def decisive(self) -> bool:
        return bool(self.outcome[1] == 0)


def _searched(record: GameRecord) -> dict[int, SearchedPly]:
    return {p.ply: p for p in record.plies if not p.is_cap_search and not p.is_tail_search}


def cut_positions(records: Iterable[GameRecord], cut_ply: int) -> list[CutPosition]:
    """The cut position of every game that was still going after ``cut_ply`` plies
    (a move was searched and played there); other games are left out."""
    if cut_ply < 1:
        raise ValueError(f"cut_ply must be at least 1, got {cut_ply}")
    out = []
    for record in records:
        k = cut_ply - len(record.prefix_moves)  # the cut's index into record.moves
        searched = _searched(record)
        if k < 1 or len(record.moves) <= k or k not in searched or k - 1 not in searched:
            continue
        before = core.Game(record.start_fen)
        for uci in [*record.prefix_moves, *record.moves[:k - 1]]:
            before.push_uci(uci)
        at = before.copy()
        at.push_uci(record.moves[k - 1])
        out.append(CutPosition(record.game_id, at, before, searched[k], searched[k - 1],
                               outcome_onehot(record.result, bool(at.turn)), len(record.moves) - k,
                               record.termination == "ply_cap"))
    return out
