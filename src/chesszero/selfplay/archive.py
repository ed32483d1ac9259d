"""Restart archive (SPEC 6): positions of finished self-play games with an
unresolved choice, from which new games play an untried alternative.

Eligible searched positions (cap searches and late-tail searches never are: a
restart there would give no training row):

- at least ``min_plies_left`` (15) plies left in the source game,
- ``|root value| <= max_abs_value`` (0.8),
- the fewest most-visited actions covering ``leading_mass`` (85%) of the
  visit mass (discarded mass included) number 2 or 3.

The *alternatives* are those leading actions other than the move the game
played. ``pick()`` chooses an entry uniformly with probability
``uniform_fraction`` (30%), else proportionally to
``sqrt(0.5 * |root value - raw network value|)``; it plays the entry's
most-visited untried alternative and marks it tried. Entries leave when
exhausted, older than ``max_age_generations`` (40) or beyond ``capacity``
(50,000; oldest first). The archive belongs to one actor and persists in
SQLite (``path=None`` keeps it in memory).
"""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from chesszero import core
from chesszero.selfplay.records import CURRICULUM_STARTS, GameRecord


@dataclass(frozen=True)
class ArchiveSettings:
    min_plies_left: int = 15
    max_abs_value: float = 0.8
    min_leading_actions: int = 2
    max_leading_actions: int = 3
    leading_mass: float = 0.85
    uniform_fraction: float = 0.3
    max_age_generations: int = 40
    capacity: int = 50_000

    def __post_init__(self) -> None:
        if self.min_plies_left < 0 or self.capacity < 1 or self.max_age_generations < 1:
            raise ValueError(f"invalid archive settings: {self}")
        if not 1 <= self.min_leading_actions <= self.max_leading_actions:
            raise ValueError("need 1 <= min_leading_actions <= max_leading_actions")
        for name in ("max_abs_value", "leading_mass", "uniform_fraction"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)!r}")


@dataclass
class ArchiveEntry:
    entry_id: int
    start_fen: str
    line: list[str]  # moves from start_fen to the archived position
    untried: list[str]  # alternatives not played yet, most visited first
    root_value: float
    raw_value: float
    generation: int

    @property
    def priority(self) -> float:
        return math.sqrt(0.5 * abs(self.root_value - self.raw_value))


@dataclass(frozen=True)
class RestartStart:
    """A start for the actor: ``line`` ends with the alternative being tried."""

    start_fen: str
    line: list[str]
    entry_id: int

    def game(self) -> core.Game:
        g = core.Game(self.start_fen)
        for uci in self.line:
            g.push_uci(uci)
        return g


def leading_actions(
    ids: list[int], counts: list[float], discarded: float, mass: float
) -> list[int]:
    """The fewest most-visited actions whose visits reach ``mass`` of the total."""
    total = float(sum(counts)) + float(discarded)
    if total <= 0:
        return []
    order = sorted(range(len(ids)), key=lambda i: -counts[i])
    out: list[int] = []
    covered = 0.0
    for i in order:
        out.append(ids[i])
        covered += counts[i]
        if covered >= mass * total - 1e-9:
            return out
    return []  # the stored entries never reach the mass: the visits are spread wide


_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY,
    start_fen TEXT NOT NULL,
    line TEXT NOT NULL,
    untried TEXT NOT NULL,
    root_value REAL NOT NULL,
    raw_value REAL NOT NULL,
    generation INTEGER NOT NULL
)
"""


class RestartArchive:
    """One actor's restart archive, mirrored in memory and stored in SQLite."""

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        settings: ArchiveSettings | None = None,
        seed: int = 0,
    ) -> None:
        self.settings = settings or ArchiveSettings()
        self._db = sqlite3.connect(":memory:" if path is None else str(path))
        self._db.execute(_SCHEMA)
        self._rng = np.random.default_rng(seed)
        self._entries: dict[int, ArchiveEntry] = {}
        for row in self._db.execute("SELECT * FROM entries ORDER BY id"):
            e = ArchiveEntry(row[0], row[1], row[2].split(), row[3].split(), row[4], row[5], row[6])
            self._entries[e.entry_id] = e
        self._next_id = max(self._entries, default=0) + 1

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self) -> list[ArchiveEntry]:
        return list(self._entries.values())

    def close(self) -> None:
        self._db.close()

    def add_game(self, record: GameRecord, generation: int) -> int:
        """Archives the eligible positions of a finished game; returns how many.
        Curriculum games (material odds, a random mover) give none: restarts
        stay in positions of natural play."""
        if record.start_type in CURRICULUM_STARTS:
            return 0
        s = self.settings
        game = core.Game(record.start_fen)
        for uci in record.prefix_moves:
            game.push_uci(uci)
        base = list(record.prefix_moves)
        added = 0
        played = 0
        for p in record.plies:
            if p.is_cap_search or p.is_tail_search or len(record.moves) - p.ply < s.min_plies_left:
                continue
            if abs(p.root_value) > s.max_abs_value:
                continue
            lead = leading_actions(
                p.policy_ids, p.policy_counts, p.policy_discarded, s.leading_mass
            )
            if not s.min_leading_actions <= len(lead) <= s.max_leading_actions:
                continue
            while played < p.ply:
                game.push_uci(record.moves[played])
                played += 1
            chosen = game.action_of(record.moves[p.ply])
            untried = [game.uci_of(a) for a in lead if a != chosen]
            if not untried:
                continue
            line = base + record.moves[: p.ply]
            self._insert(record.start_fen, line, untried, p.root_value, p.raw_value, generation)
            added += 1
        self.evict(generation)
        return added

    def _insert(
        self, fen: str, line: list[str], untried: list[str], root: float, raw: float, gen: int
    ) -> None:
        e = ArchiveEntry(self._next_id, fen, line, untried, float(root), float(raw), int(gen))
        self._next_id += 1
        self._entries[e.entry_id] = e
        self._db.execute(
            "INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?, ?)",
            (e.entry_id, fen, " ".join(line), " ".join(untried), e.root_value, e.raw_value, gen),
        )
        self._db.commit()

    def _remove(self, ids: list[int]) -> None:
        for i in ids:
            del self._entries[i]
        self._db.executemany("DELETE FROM entries WHERE id = ?", [(i,) for i in ids])
        self._db.commit()

    def evict(self, generation: int) -> None:
        """Drops exhausted entries, those too old, and the oldest beyond capacity."""
        s = self.settings
        drop = [
            e.entry_id
            for e in self._entries.values()
            if not e.untried or generation - e.generation > s.max_age_generations
        ]
        self._remove(drop)
        excess = len(self._entries) - s.capacity
        if excess > 0:
            self._remove(sorted(self._entries)[:excess])

    def pick(self) -> RestartStart | None:
        """An untried alternative of a chosen entry (marked tried), or None when empty."""
        if not self._entries:
            return None
        entries = list(self._entries.values())
        weights = np.array([e.priority for e in entries], np.float64)
        if self._rng.random() < self.settings.uniform_fraction or weights.sum() <= 0:
            e = entries[int(self._rng.integers(len(entries)))]
        else:
            e = entries[int(self._rng.choice(len(entries), p=weights / weights.sum()))]
        alternative = e.untried.pop(0)
        if e.untried:
            self._db.execute(
                "UPDATE entries SET untried = ? WHERE id = ?", (" ".join(e.untried), e.entry_id)
            )
            self._db.commit()
        else:
            self._remove([e.entry_id])
        return RestartStart(e.start_fen, [*e.line, alternative], e.entry_id)


__all__ = [
    "ArchiveEntry",
    "ArchiveSettings",
    "RestartArchive",
    "RestartStart",
    "leading_actions",
]
