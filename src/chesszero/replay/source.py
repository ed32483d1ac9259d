"""``StoreSampler``: the trainer's global-batch sampler over a live ``ReplayStore``.

It implements ``chesszero.train.sources.GlobalSampler``: ``draw(n)`` gives the
slots of one global batch (``SurpriseSampler``, SPEC 7) and ``read(slots)`` one
rank's rows. Before every ``sync_every``-th draw it adopts the store's newest
header; with DDP pass ``agree``, a function that returns the header every rank
must use (typically rank 0's, broadcast via ``StoreHeader.to_dict``), so all
ranks draw identical global batches.

A read can find rows evicted since the sync when a writer outran the guard
band; those rows are replaced by distinct rows among the newest of the
refreshed store (never ones of the current global batch), drawn from a
generator keyed by the seed and the draw count, so the trainer never sees a
torn row and never stops. ``replaced`` counts such rows for monitoring.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from chesszero.replay.header import StoreHeader
from chesszero.replay.rows import RowBatch
from chesszero.replay.sampler import SamplerOptions, SurpriseSampler
from chesszero.replay.store import ReplayStore, StaleRowsError

_MAX_RETRIES = 8


class StoreSampler:
    """Global batches from ``store`` (see the module docstring)."""

    def __init__(self, store: ReplayStore, options: SamplerOptions | None = None, *,
                 seed: int = 0, sync_every: int = 1,
                 agree: Callable[[StoreHeader], StoreHeader] | None = None) -> None:
        if sync_every <= 0:
            raise ValueError(f"sync_every must be >= 1, got {sync_every}")
        self.store = store
        self.sampler = SurpriseSampler(options, seed=seed)
        self.sync_every = sync_every
        self.agree = agree
        self.replaced = 0
        self._seed = seed
        self._draws = 0
        self._batch = np.zeros(0, dtype=np.int64)

    def sync(self) -> None:
        """Adopt the newest (or agreed) store header."""
        self.store.refresh()
        header = self.store.header
        if self.agree is not None:
            header = self.agree(header)
        self.sampler.sync(self.store, header)

    def draw(self, n: int) -> np.ndarray:
        """Slots of the next global batch: ``n`` distinct rows."""
        if self._draws % self.sync_every == 0 or self.sampler.header is None:
            self.sync()
        self._draws += 1
        self._batch = self.sampler.sample(n)
        return self._batch

    def read(self, slots: np.ndarray) -> RowBatch:
        """Rows at ``slots``; rows evicted meanwhile are replaced (see ``replaced``)."""
        slots = np.asarray(slots, dtype=np.int64).copy()
        rng = np.random.default_rng([self._seed, self._draws, 0xE51C7])
        for _ in range(_MAX_RETRIES):
            try:
                return self.store.read(slots)
            except StaleRowsError as exc:
                stale = np.isin(slots, exc.slots)
                self.store.refresh()
                slots[stale] = self._fresh_slots(int(stale.sum()), slots[~stale], rng)
                self.replaced += int(stale.sum())
        return self.store.read(slots)

    def _fresh_slots(self, k: int, keep: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        h = self.store.header
        taken = np.union1d(self._batch, keep)
        window = min(h.size, max(4 * (k + taken.size), 1024))  # the newest rows
        candidates = h.age_to_slot(np.arange(window))
        candidates = candidates[~np.isin(candidates, taken)]
        if candidates.size < k:
            raise RuntimeError(f"{self.store.path}: too few rows left to replace {k} evicted rows")
        return rng.choice(candidates, size=k, replace=False)

    def state_dict(self) -> dict[str, Any]:
        return {"sampler": self.sampler.state_dict(), "draws": self._draws,
                "replaced": self.replaced, "seed": self._seed}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore ``state_dict`` output; the next ``draw`` syncs with the store."""
        sampler = SurpriseSampler(self.sampler.options, seed=None)
        sampler.load_state_dict(state["sampler"])
        self.sampler = sampler
        self._draws = int(state["draws"])
        self.replaced = int(state.get("replaced", 0))
        self._seed = int(state.get("seed", self._seed))
        self._batch = np.zeros(0, dtype=np.int64)
