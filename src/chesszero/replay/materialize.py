"""Materialisation: Parquet game-record shards -> durable replay rows, in parallel.

``Materializer`` keeps a pool of worker processes (``spawn`` start method, so
no thread state of polars or the core is forked) that each turn one shard into
rows (``convert.shard_rows``); the calling process appends the rows to the
store in the order the shards were given, so the store has one writer.

A call is all-or-nothing by default: if any shard is unreadable, violates the
records schema or contradicts the rules, ``ShardError`` names every bad file
and nothing is appended (the shards stay on disk, so nothing is lost). With
``errors="skip"`` good shards are appended and bad ones are reported.

``run`` is not exactly-once across crashes: it appends the shards one after
another, so a process killed mid-call leaves the earlier shards admitted and
the later ones not (each shard itself is all-or-nothing, ``ReplayStore.append``
being atomic), and calling ``run`` again with the same paths admits the earlier
shards twice. A campaign that must survive kill -9 ingests shard by shard with
``convert.convert_shard`` and a journal of ``store.total_appended`` (see its
docstring); ``run`` suits one-shot jobs, benchmarks and tests.

Typical use::

    with Materializer(TargetOptions(beta=0.05), workers=4) as mat:
        report = mat.run(shard_paths, store)
    ledger.admit_through(store.total_appended)
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from chesszero.replay.convert import ShardError, TargetOptions, shard_rows
from chesszero.replay.store import ReplayStore

if TYPE_CHECKING:
    from chesszero.config.schema import ReplayConfig

__all__ = ["MaterializeReport", "Materializer", "ShardError", "TargetOptions",
           "materialize", "target_options_from_config"]


@dataclass(frozen=True)
class MaterializeReport:
    """What one ``Materializer.run`` admitted."""

    shards: int                               # shards whose rows were appended
    games: int
    rows: int
    total_appended: int                       # the store's total after the call
    seconds: float
    rejected: tuple[tuple[str, str], ...] = ()  # (path, reason), only with errors="skip"

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else float("inf")


def _convert(path: str, options: TargetOptions) -> tuple[np.ndarray | None, int, str]:
    """Worker entry: (rows, games, "") or (None, 0, reason); never raises."""
    try:
        rows, games = shard_rows(path, options)
    except ShardError as exc:
        return None, 0, exc.rejected[0][1]
    return rows, games, ""


class Materializer:
    """A reusable pool of materialisation workers (``workers=0``: in-process)."""

    def __init__(self, options: TargetOptions | None = None, *, workers: int = 2) -> None:
        if workers < 0:
            raise ValueError(f"workers must be >= 0, got {workers}")
        self.options = options or TargetOptions()
        self.workers = workers
        self._pool: Executor | None = None
        if workers:
            self._pool = ProcessPoolExecutor(max_workers=workers,
                                             mp_context=multiprocessing.get_context("spawn"))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> Materializer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def convert(self, paths: Sequence[str | os.PathLike[str]]) -> list[tuple[np.ndarray | None, int, str]]:
        """Rows of each shard, in order, without touching any store."""
        names = [str(p) for p in paths]
        if self._pool is None:
            return [_convert(p, self.options) for p in names]
        return list(self._pool.map(_convert, names, [self.options] * len(names)))

    def run(self, paths: Sequence[str | os.PathLike[str]], store: ReplayStore, *,
            errors: Literal["raise", "skip"] = "raise") -> MaterializeReport:
        """Convert ``paths`` in the workers, then durably append their rows to ``store``.

        Each shard is appended atomically, in the given order, but the call as
        a whole is not exactly-once across crashes: after a kill some shards
        may be in the store and a rerun appends them again. For exactly-once
        ingest go shard by shard with ``convert_shard`` (module docstring).
        """
        if errors not in ("raise", "skip"):
            raise ValueError(f"errors must be 'raise' or 'skip', got {errors!r}")
        start = time.perf_counter()
        results = self.convert(paths)
        rejected = tuple((str(p), why) for p, (_, _, why) in zip(paths, results, strict=True) if why)
        if rejected and errors == "raise":
            raise ShardError(list(rejected))
        good = [(rows, games) for rows, games, why in results if not why and rows is not None]
        for rows, _ in good:
            if len(rows):
                store.append(rows)
        return MaterializeReport(shards=len(good), games=sum(g for _, g in good),
                                 rows=sum(len(r) for r, _ in good),
                                 total_appended=store.total_appended,
                                 seconds=time.perf_counter() - start, rejected=rejected)


def materialize(paths: Sequence[str | os.PathLike[str]], store: ReplayStore,
                options: TargetOptions | None = None, *, workers: int = 2,
                errors: Literal["raise", "skip"] = "raise") -> MaterializeReport:
    """One-shot ``Materializer(options, workers=workers).run(paths, store)``."""
    with Materializer(options, workers=workers) as mat:
        return mat.run(paths, store, errors=errors)


def target_options_from_config(replay: ReplayConfig, generation: int) -> TargetOptions:
    """``TargetOptions`` from a ``config.schema.ReplayConfig`` at ``generation``
    (beta from its ``value_blend`` schedule)."""
    return TargetOptions(beta=float(replay.value_blend.at(generation)),
                         outcome_discount=float(replay.outcome_discount),
                         length_scale=float(replay.length_scale))
