"""Native game logs -> typed values: finished games become
:class:`~chesszero.selfplay.records.GameRecord`, unfinished ones
:class:`PendingGame` (JSON-serialisable, resumable with new trees); and the
per-shard diagnostics of finished games (termination histogram, conversion
count)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from chesszero import _core, core
from chesszero.material import Conversion, conversion_of, material_swing
from chesszero.selfplay.records import GameRecord, SearchedPly

TERMINATION_NAMES: dict[int, str] = core.TERMINATION_NAMES  # GameLog.ending -> name
RESULT_NAMES: dict[int, str] = core.RESULT_TEXT  # GameLog.result -> PGN result
START_NAMES: dict[_core.StartKind, str] = {_core.StartKind.RANDOM: "random", _core.StartKind.RESTART: "restart",
                                           _core.StartKind.ODDS: "odds",
                                           _core.StartKind.RANDOM_OPPONENT: "random_opponent"}  # -> start_type
START_KINDS: dict[str, _core.StartKind] = {v: k for k, v in START_NAMES.items()}


@dataclass(frozen=True)
class PendingGame:
    """An unfinished self-play game: enough to resume it exactly (new trees)."""

    game_id: str
    start_fen: str
    prefix_moves: list[str]
    moves: list[str]
    start_type: str
    is_continuation: bool
    plies: list[SearchedPly] = field(default_factory=list)
    seconds: float = 0.0
    searches: int = 0
    evaluations: int = 0

    def __post_init__(self) -> None:
        if self.start_type not in START_KINDS:
            raise ValueError(f"pending game {self.game_id!r}: start_type must be one of {sorted(START_KINDS)}, "
                             f"got {self.start_type!r}")

    def game(self) -> core.Game:
        """The game at the position where play resumes."""
        g = core.Game(self.start_fen)
        for uci in (*self.prefix_moves, *self.moves):
            g.push_uci(uci)
        return g

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PendingGame:
        data = dict(data)
        data["plies"] = [SearchedPly(**p) for p in data.get("plies", [])]
        return cls(**data)


def log_plies(log: _core.GameLog) -> list[SearchedPly]:
    """The searched positions of a native log."""
    offsets = log.policy_offsets.tolist()
    ids = log.policy_ids.tolist()
    counts = log.policy_counts.tolist()
    prior = log.policy_prior.tolist()
    columns = (
        log.ply.tolist(),
        log.policy_discarded.tolist(),
        log.root_value.tolist(),
        log.raw_value.tolist(),
        log.surprise.tolist(),
        log.best_q.tolist(),
        log.visits.tolist(),
        log.is_cap.tolist(),
        log.is_tail.tolist(),
    )
    out = []
    for i, (ply, disc, root, raw, surprise, best_q, visits, cap, tail) in enumerate(
        zip(*columns, strict=True)
    ):
        a, b = offsets[i], offsets[i + 1]
        out.append(
            SearchedPly(
                ply=ply,
                policy_ids=ids[a:b],
                policy_counts=counts[a:b],
                policy_prior=prior[a:b],
                policy_discarded=disc,
                root_value=root,
                raw_value=raw,
                policy_surprise=surprise,
                best_q=best_q,
                visits=visits,
                is_cap_search=bool(cap),
                is_tail_search=bool(tail),
            )
        )
    return out


def _none_if_nan(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def log_to_record(
    log: _core.GameLog, *, model_id: str, generation: int, earlier: PendingGame | None = None
) -> GameRecord:
    """A finished native log as a record; ``earlier`` is the game's state when
    it was last handed back (its plies and costs are prepended)."""
    if log.ending == 0:
        raise ValueError(f"game {log.id!r} is not finished")
    plies = log_plies(log)
    seconds, searches, evaluations = log.seconds, log.searches, log.evaluations
    if earlier is not None:
        plies = [*earlier.plies, *plies]
        seconds += earlier.seconds
        searches += earlier.searches
        evaluations += earlier.evaluations
    return GameRecord(
        game_id=log.id,
        model_id=model_id,
        generation=generation,
        start_type=START_NAMES[log.start],
        start_fen=log.start_fen,
        prefix_moves=list(log.prefix),
        moves=list(log.moves),
        plies=plies,
        result=RESULT_NAMES[log.result],  # type: ignore[arg-type]
        termination=TERMINATION_NAMES[log.ending],  # type: ignore[arg-type]
        resigned_by=None if log.resigned_by < 0 else ("white", "black")[log.resigned_by],
        resign_threshold=_none_if_nan(log.resign_threshold),
        is_continuation=bool(log.continuation),
        cap_value=_none_if_nan(log.cap_value),
        visit_cap=log.visit_cap,
        ply_cap=log.ply_cap,
        seconds=float(seconds),
        searches=int(searches),
        evaluations=int(evaluations),
    )


def log_to_pending(log: _core.GameLog, earlier: PendingGame | None = None) -> PendingGame:
    """An unfinished native log as a resumable game."""
    plies = log_plies(log)
    seconds, searches, evaluations = log.seconds, log.searches, log.evaluations
    if earlier is not None:
        plies = [*earlier.plies, *plies]
        seconds += earlier.seconds
        searches += earlier.searches
        evaluations += earlier.evaluations
    return PendingGame(
        game_id=log.id,
        start_fen=log.start_fen,
        prefix_moves=list(log.prefix),
        moves=list(log.moves),
        start_type=START_NAMES[log.start],
        is_continuation=bool(log.continuation),
        plies=plies,
        seconds=float(seconds),
        searches=int(searches),
        evaluations=int(evaluations),
    )


def termination_histogram(records: Sequence[GameRecord]) -> dict[str, int]:
    """Games per termination (every termination listed, zeros included)."""
    hist = dict.fromkeys(TERMINATION_NAMES.values(), 0)
    for r in records:
        hist[r.termination] += 1
    return hist


def conversion_counts(records: Sequence[GameRecord]) -> Conversion:
    """Winning chances and how many were won, over finished games.

    Each side of each game is one opportunity when it led by 5+ pawns
    (``chesszero.material.CONVERSION_LEAD``) at some position of the searched
    part of the game: the position after the prefix (random opening or
    restart history) and every later one. It is converted when that side won,
    by mate or resignation; a draw of any kind, the ply cap included, is a
    missed chance. A game where both sides led by 5+ at different times gives
    two opportunities (at most one converted).
    """
    total = Conversion()
    for r in records:
        swing = material_swing(r.start_fen, [*r.prefix_moves, *r.moves], skip=len(r.prefix_moves))
        for white in (True, False):
            total += conversion_of(swing, white, r.result == ("1-0" if white else "0-1"))
    return total


__all__ = [
    "RESULT_NAMES",
    "START_KINDS",
    "START_NAMES",
    "TERMINATION_NAMES",
    "PendingGame",
    "conversion_counts",
    "log_plies",
    "log_to_pending",
    "log_to_record",
    "termination_histogram",
]
