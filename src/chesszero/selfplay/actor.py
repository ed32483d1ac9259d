"""Running a self-play actor: native games + an evaluator -> a Parquet shard.

``SelfPlayActor(settings).play(evaluator, visits=..., ply_cap=...,
resign_threshold=..., games=... or positions=..., ...)`` advances
``games_in_flight`` games in C++ (one Python crossing per batch, two batches
in flight so tree work overlaps inference) until the quota of finished games
or recorded (searched) positions is met, then:

- writes the finished games as one schema-checked shard (``shard_path``),
- hands back unfinished games as :class:`PendingGame` values; the next
  ``play`` resumes them first (new trees, exact positions), or pass them to
  another actor with ``resume=``,
- feeds the restart archive with every finished game and keeps the actor's
  restart queue topped up from it,
- feeds ``calibrator`` (``selfplay.resign.ResignCalibrator``) with every
  finished continuation game; games stopped at the ply cap are left out
  (their natural outcome is unknown, paper 4.2.5),
- returns a :class:`ShardReport` with the termination histogram, the
  non-decisive rate (draw-cycle diagnostics, reference 004), the
  conversion count (leads of 5+ pawns, and how many were won) and the
  late-game target counts (``cap_diagnostics``: capped games, rows on a cut
  target, plies without a training row; paper 6.1). The first three count
  natural play only: material-odds games (``odds_fraction``) and games
  against a random mover (``random_opponent_fraction``), lopsided by
  construction, are counted apart in ``ShardReport.odds`` and
  ``ShardReport.random_opponent``.

``late_tail=LateTail(...)`` restores the paper's earlier (affected) design
for the call (6.1; off by default): cheap searches from a game ply on,
recorded as tail searches that give no replay row, and optionally the cap
value taken from the preceding search instead of a dedicated cap search.
The ``positions`` quota counts replay rows, so tail searches do not count.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chesszero import _core
from chesszero.material import Conversion
from chesszero.search.evaluators import Evaluator
from chesszero.search.pipeline import BatchPipeline
from chesszero.selfplay.archive import ArchiveSettings, RestartArchive
from chesszero.selfplay.cap_diagnostics import CapDiagnostics, cap_diagnostics
from chesszero.selfplay.logs import (
    START_KINDS,
    PendingGame,
    conversion_counts,
    log_to_pending,
    log_to_record,
    termination_histogram,
)
from chesszero.selfplay.records import CURRICULUM_STARTS, GameRecord, write_shard
from chesszero.selfplay.resign import ResignProbe


@dataclass(frozen=True)
class ActorSettings:
    """Fixed settings of one actor (per-call limits go to ``play``)."""

    actor_id: str = "actor0"
    games_in_flight: int = 256
    batch_size: int | None = None  # default: games_in_flight * leaves_per_tree / pipeline_depth
    pipeline_depth: int = 2  # batches in flight (2 = double buffering)
    seed: int = 0
    search: dict[str, Any] = field(
        default_factory=dict
    )  # SearchOptions overrides (self-play preset)
    temperature: tuple[tuple[int, float], ...] = ((0, 1.3), (60, 0.1))
    greedy_after_ply: int = 60
    random_opening_min_plies: int = 0
    random_opening_max_plies: int = 8
    restart_fraction: float = 0.5
    odds_fraction: float = 0.0  # share of the other starts from material-odds positions (0: off)
    odds_material: tuple[int, int] = (3, 39)  # pawns taken from one side, uniform in [min, max]
    random_opponent_fraction: float = 0.0  # share of the other starts played against a random mover (0: off)
    random_opponent_min_lead: int = 5  # pawns ahead from which the searching side's moves are recorded
    random_opponent_policy_fraction: float = 0.0  # of its moves, raw-policy ones (no search, no row; 0: off)
    continuation_fraction: float = 0.2
    full_search_fraction: float = 1.0  # playout-cap randomisation: share of full, recorded searches (1: off)
    fast_visits: int = 8  # visits of a fast, unrecorded search
    archive: ArchiveSettings = field(default_factory=ArchiveSettings)
    archive_path: Path | None = None  # SQLite file of the restart archive (None: in memory)

    def search_options(self) -> _core.SearchOptions:
        from chesszero.search import search_options

        return search_options(self.search)

    def native_options(self) -> _core.ActorOptions:
        if len(self.odds_material) != 2:
            raise ValueError(f"ActorSettings.odds_material must be (min, max) pawns, got {self.odds_material!r}")
        opts = _core.ActorOptions(
            num_games=self.games_in_flight,
            max_outstanding=self.pipeline_depth,
            seed=self.seed,
            search=self.search_options(),
            choice=_core.MoveChoiceOptions(
                mode=_core.MoveChoice.SAMPLE,
                temperature=[(int(p), float(t)) for p, t in self.temperature],
                greedy_after_ply=self.greedy_after_ply,
            ),
            random_opening_min_plies=self.random_opening_min_plies,
            random_opening_max_plies=self.random_opening_max_plies,
            restart_fraction=self.restart_fraction,
            odds_fraction=self.odds_fraction,
            odds_min_material=self.odds_material[0],
            odds_max_material=self.odds_material[1],
            random_opponent_fraction=self.random_opponent_fraction,
            random_opponent_min_lead=self.random_opponent_min_lead,
            random_opponent_policy_fraction=self.random_opponent_policy_fraction,
            continuation_fraction=self.continuation_fraction,
            full_search_fraction=self.full_search_fraction,
            fast_visits=self.fast_visits,
            id_prefix=f"{self.actor_id}-{uuid.uuid4().hex[:8]}",
        )
        opts.validate()
        return opts

    def effective_batch_size(self) -> int:
        if self.batch_size is not None:
            return self.batch_size
        leaves = self.games_in_flight * self.search_options().leaves_per_tree
        return max(1, leaves // self.pipeline_depth)


@dataclass(frozen=True)
class LateTail:
    """The paper's earlier self-play design (6.1) for one ``play`` call; the
    default is off (the retained design)."""

    from_ply: int | None = None  # game ply (prefix included) of the first cheap tail search; None: off
    visits_divisor: int = 1  # tail searches use max(2, visits // visits_divisor) visits
    cap_from_preceding: bool = False  # cap value = -(preceding search's root value), no cap search

    def __post_init__(self) -> None:
        if self.from_ply is not None and not 1 <= self.from_ply <= 10000:
            raise ValueError(f"LateTail.from_ply must be None (off) or in 1..10000, got {self.from_ply}")
        if not 1 <= self.visits_divisor <= 1_000_000:
            raise ValueError(f"LateTail.visits_divisor must be in 1..1000000, got {self.visits_divisor}")


@dataclass(frozen=True)
class OddsCounts:
    """The curriculum games of one kind in a call (material-odds starts, or
    games against a random mover): how many, how many ended decisively, and
    their conversion count (leads of 5+ pawns, and how many were won)."""

    games: int = 0
    decisive: int = 0
    conversion: Conversion = field(default_factory=Conversion)


@dataclass(frozen=True)
class ShardReport:
    """One ``play`` call: its shard, hand-backs and diagnostics."""

    path: Path | None
    records: list[GameRecord]
    unfinished: list[PendingGame]
    positions: int  # replay rows of the finished games (searched positions, tail searches excluded)
    terminations: dict[str, int]  # natural games (curriculum games apart: ``odds``, ``random_opponent``)
    non_decisive_rate: float  # share of finished natural games without a decisive result
    seconds: float
    searches: int  # searches finished during the call (all games)
    evaluations: int
    batches: int
    conversion: Conversion = field(default_factory=Conversion)  # ``logs.conversion_counts``, natural games
    odds: OddsCounts = field(default_factory=OddsCounts)
    random_opponent: OddsCounts = field(default_factory=OddsCounts)  # games against a random mover
    diagnostics: CapDiagnostics = field(default_factory=CapDiagnostics)  # ``cap_diagnostics``
    fast_searches: int = 0  # of ``searches``, fast ones (playout-cap randomisation: played, not recorded)
    policy_moves: int = 0  # of ``fast_searches``, raw-policy moves against the random mover

    @property
    def games(self) -> int:
        return len(self.records)

    @property
    def searches_per_second(self) -> float:
        return self.searches / self.seconds if self.seconds > 0 else 0.0

    @property
    def mean_batch(self) -> float:
        return self.evaluations / self.batches if self.batches else 0.0


def resign_probes(record: GameRecord) -> list[ResignProbe]:
    """Search values of a game's searched plies for the resignation calibrator."""
    white_starts = record.start_fen.split()[1] == "w"
    base = len(record.prefix_moves)
    return [
        ResignProbe(
            white_to_move=white_starts == ((base + p.ply) % 2 == 0),
            root_value=p.root_value,
            best_q=p.best_q,
        )
        for p in record.plies
    ]


def _winner(record: GameRecord) -> bool | None:
    return {"1-0": True, "0-1": False}.get(record.result)


class SelfPlayActor:
    """One actor: a native ``Actor``, its restart archive and its hand-backs."""

    def __init__(self, settings: ActorSettings | None = None) -> None:
        self.settings = settings or ActorSettings()
        self._native = _core.Actor(self.settings.native_options())
        self.archive = RestartArchive(
            self.settings.archive_path, settings=self.settings.archive, seed=self.settings.seed
        )
        self.pending: list[PendingGame] = []  # handed back by the last call, resumed by the next

    def play(
        self,
        evaluator: Evaluator,
        *,
        visits: int,
        ply_cap: int,
        model_id: str,
        generation: int,
        resign_threshold: float | None = None,
        games: int | None = None,
        positions: int | None = None,
        shard_path: str | Path | None = None,
        calibrator: Any = None,
        resume: Sequence[PendingGame] = (),
        late_tail: LateTail | None = None,
        finish_started: bool = False,
    ) -> ShardReport:
        """Plays until ``games`` finished games or ``positions`` recorded positions.

        Games still in flight then are handed back unfinished (``self.pending``,
        resumed by the next call) -- unless ``finish_started``: then no game is
        started after the quota is met and every game in flight is played to its
        end, so the records are every game started, short and long alike (a
        sample of finished games is otherwise biased towards short ones)."""
        if games is None and positions is None:
            raise ValueError("give a quota: games=... or positions=...")
        if (games is not None and games < 1) or (positions is not None and positions < 1):
            raise ValueError(f"quotas must be >= 1, got games={games}, positions={positions}")
        actor = self._native
        tail = late_tail or LateTail()
        actor.set_limits(visits, ply_cap, resign_threshold, tail_from_ply=tail.from_ply,
                         tail_visits_divisor=tail.visits_divisor,
                         cap_from_preceding=tail.cap_from_preceding)
        earlier: dict[str, PendingGame] = {}
        for p in [*self.pending, *resume]:
            actor.queue_resume(
                p.game(),
                len(p.prefix_moves),
                p.game_id,
                START_KINDS[p.start_type],
                p.is_continuation,
            )
            earlier[p.game_id] = p
        self.pending = []
        records: list[GameRecord] = []
        counted = [0]
        before = actor.counters()
        start = time.perf_counter()

        def collect() -> None:
            for log in actor.take_finished():
                record = log_to_record(
                    log, model_id=model_id, generation=generation, earlier=earlier.pop(log.id, None)
                )
                records.append(record)
                counted[0] += record.admitted_rows
                self.archive.add_game(record, generation)
                if (
                    calibrator is not None
                    and record.is_continuation
                    and record.termination != "ply_cap"
                ):
                    calibrator.record_game(resign_probes(record), _winner(record))

        def quota_open() -> bool:
            return not (
                (games is not None and len(records) >= games)
                or (positions is not None and counted[0] >= positions)
            )

        actor.accepting = True
        batch = self.settings.effective_batch_size()
        with BatchPipeline(
            actor, evaluator, batch_size=batch, depth=self.settings.pipeline_depth
        ) as pipe:
            while quota_open():
                self._top_up_restarts()
                if not pipe.step(quota_open):
                    break
                collect()
            actor.accepting = False
            while finish_started and pipe.step():
                collect()
            pipe.flush()
        collect()
        unfinished = [log_to_pending(log, earlier.pop(log.id, None)) for log in actor.drain()]
        self.pending = unfinished
        elapsed = time.perf_counter() - start
        after = actor.counters()
        path = write_shard(records, shard_path) if shard_path is not None and records else None
        natural = [r for r in records if r.start_type not in CURRICULUM_STARTS]
        odds = [r for r in records if r.start_type == "odds"]
        sparring = [r for r in records if r.start_type == "random_opponent"]
        decisive = sum(r.is_decisive for r in natural)
        return ShardReport(
            path=path,
            records=records,
            unfinished=unfinished,
            positions=counted[0],
            terminations=termination_histogram(natural),
            non_decisive_rate=1.0 - decisive / len(natural) if natural else 0.0,
            seconds=elapsed,
            searches=after["searches"] - before["searches"],
            evaluations=after["evaluations"] - before["evaluations"],
            batches=after["batches"] - before["batches"],
            conversion=conversion_counts(natural),
            odds=OddsCounts(len(odds), sum(r.is_decisive for r in odds), conversion_counts(odds)),
            random_opponent=OddsCounts(len(sparring), sum(r.is_decisive for r in sparring),
                                       conversion_counts(sparring)),
            diagnostics=cap_diagnostics(records),
            fast_searches=after["fast_searches"] - before["fast_searches"],
            policy_moves=after["policy_moves"] - before["policy_moves"],
        )

    def _top_up_restarts(self) -> None:
        want = min(8, self.settings.games_in_flight)
        while self._native.queued_restarts < want and len(self.archive):
            start = self.archive.pick()
            if start is None:
                return
            game = start.game()
            if not game.is_game_over():  # an alternative that ends the game has nothing to search
                self._native.queue_restart(game)

    def counters(self) -> dict[str, int]:
        """The native actor's running totals (evaluations, searches, fast_searches, ...)."""
        return dict(self._native.counters())

    def close(self) -> None:
        self.archive.close()


__all__ = ["ActorSettings", "LateTail", "OddsCounts", "SelfPlayActor", "ShardReport", "resign_probes"]
