"""Where training batches come from: a global-batch sampler, sliced per rank.

Every rank holds an identical :class:`GlobalSampler` (same seed, same state),
so each step all ranks draw the *same* global batch of slots (a row appears
at most once per global batch) and the same reflection coins; each rank then
reads only its own consecutive share.  This makes a ``world_size``-rank run
see exactly the rows of a single-process run with the same global batch.

- :class:`GlobalSampler`: the protocol a replay sampler implements
  (``draw`` slots, ``read`` rows, ``state_dict`` / ``load_state_dict``).
- :class:`ArraySampler`: uniform sampling without replacement from an
  in-memory :class:`RowBatch` (frozen snapshots, tests, benchmarks).
- :class:`SampledBatches`: the trainer's batch source built on a sampler.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Protocol

import numpy as np

from chesszero.config.schema import Reflection
from chesszero.replay.rows import RowBatch
from chesszero.train.batch import TrainBatch, to_train_batch

__all__ = ["ArraySampler", "BatchSource", "GlobalSampler", "SampledBatches", "take_rows"]


class GlobalSampler(Protocol):
    """Replay-side sampling as the trainer needs it (identical on every rank)."""

    def draw(self, n: int) -> np.ndarray:
        """Slots of the next global batch: ``n`` distinct rows, same on every rank."""
        ...

    def read(self, slots: np.ndarray) -> RowBatch:
        """The rows at ``slots`` (one rank's share)."""
        ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


class BatchSource(Protocol):
    """What the trainer consumes: one local batch per optimizer step."""

    def next_batch(self) -> TrainBatch: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


def take_rows(rows: RowBatch, index: np.ndarray) -> RowBatch:
    """The rows of ``rows`` at positions ``index`` (every field indexed)."""
    return RowBatch(**{f.name: np.ascontiguousarray(getattr(rows, f.name)[index]) for f in fields(rows)})


class ArraySampler:
    """Uniform draws without replacement within a batch from rows held in memory."""

    def __init__(self, rows: RowBatch, *, seed: int) -> None:
        if len(rows) == 0:
            raise ValueError("ArraySampler needs at least one row")
        self.rows = rows
        self._rng = np.random.default_rng(seed)

    def draw(self, n: int) -> np.ndarray:
        if n > len(self.rows):
            raise ValueError(f"cannot draw {n} distinct rows from {len(self.rows)}")
        return self._rng.choice(len(self.rows), size=n, replace=False)

    def read(self, slots: np.ndarray) -> RowBatch:
        return take_rows(self.rows, np.asarray(slots, dtype=np.int64))

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self._rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._rng.bit_generator.state = state["rng"]


class SampledBatches:
    """Per-rank batches of a global batch drawn by a :class:`GlobalSampler`.

    Reflection coins (fair, one per global row) come from this object's own
    generator so they, too, are identical across ranks.
    """

    def __init__(
        self,
        sampler: GlobalSampler,
        *,
        global_batch: int,
        rank: int = 0,
        world_size: int = 1,
        reflection: Reflection = Reflection.NO_CASTLING,
        seed: int = 0,
    ) -> None:
        if global_batch % world_size != 0:
            raise ValueError(f"global batch {global_batch} not divisible by world size {world_size}")
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} outside world of {world_size}")
        self.sampler = sampler
        self.global_batch = global_batch
        self.rank = rank
        self.world_size = world_size
        self.reflection = reflection
        self._rng = np.random.default_rng([seed, 0x5EF1EC7])

    @property
    def local_batch(self) -> int:
        """Rows this rank trains on per step."""
        return self.global_batch // self.world_size

    def next_batch(self) -> TrainBatch:
        slots = np.asarray(self.sampler.draw(self.global_batch))
        coins = self._rng.random(self.global_batch) < 0.5
        share = slice(self.rank * self.local_batch, (self.rank + 1) * self.local_batch)
        rows = self.sampler.read(slots[share])
        return to_train_batch(rows, mode=self.reflection, coins=coins[share])

    def state_dict(self) -> dict[str, Any]:
        return {"sampler": self.sampler.state_dict(), "coins": self._rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.sampler.load_state_dict(state["sampler"])
        self._rng.bit_generator.state = state["coins"]
