"""Policy-surprise sampler over the replay ring (SPEC 7).

Per global batch of ``B`` rows, ``round(0.7 * B)`` draws are proportional to the
row's policy surprise capped at 2.0 and the rest are uniform over the eligible
rows; no row appears twice in one global batch and no importance weights are
produced (every sampled row weighs 1.0). Draws are deterministic given the seed
and the sequence of ``sync``/``sample`` calls; ``state_dict`` captures the
generator for checkpoint resume.

Eligible rows are the valid rows except the ``guard_rows`` oldest (at most a
quarter of them): those are the next to be overwritten by a concurrent writer,
so leaving them out makes ``StaleRowsError`` on read rare. An append evicts all
the rows it needs room for at once (appends are atomic), so one larger than the
guard band can still make rows stale; ``StoreSampler`` replaces those.

Weights live in a float32 array over physical slots with float64 sums per block
of 256 slots; ``sync`` updates only the slots that changed since the previous
sync (a full rebuild happens on first use, after ring growth, or when more
than a ring's worth of rows arrived). A proportional draw picks a block by
binary search on the block prefix sums, then a slot inside it.

DDP: every rank may build the same global batch (same seed, same ``sync``
points, ideally against the same header) or rank 0 samples and broadcasts it;
``rank_share`` then gives each rank its contiguous part.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from chesszero.replay.header import StoreHeader
from chesszero.replay.store import ReplayStore

if TYPE_CHECKING:
    from chesszero.config.schema import ReplayConfig

BLOCK = 256
_MAX_ROUNDS = 16


@dataclass(frozen=True)
class SamplerOptions:
    """Sampling recipe (SPEC 7 values as defaults)."""

    surprise_fraction: float = 0.7   # share of each batch drawn by capped surprise
    surprise_cap: float = 2.0        # priorities are min(surprise, cap)
    guard_rows: int = 4096           # oldest rows left out (capped at a quarter of the rows)

    @classmethod
    def from_config(cls, replay: ReplayConfig, **overrides: int) -> SamplerOptions:
        """Options from ``config.schema.ReplayConfig`` (``guard_rows`` may be overridden)."""
        return cls(surprise_fraction=float(replay.surprise_fraction),
                   surprise_cap=float(replay.surprise_cap), **overrides)

    def __post_init__(self) -> None:
        if not 0.0 <= self.surprise_fraction <= 1.0:
            raise ValueError(f"surprise_fraction must be in [0, 1], got {self.surprise_fraction}")
        if not self.surprise_cap > 0:
            raise ValueError(f"surprise_cap must be > 0, got {self.surprise_cap}")
        if self.guard_rows < 0:
            raise ValueError(f"guard_rows must be >= 0, got {self.guard_rows}")


class NotEnoughRowsError(RuntimeError):
    """The store holds fewer eligible rows than one global batch."""


class SurpriseSampler:
    """Draws global batches of physical slots from a ``ReplayStore``."""

    def __init__(self, options: SamplerOptions | None = None, *, seed: int | None = 0) -> None:
        self.options = options or SamplerOptions()
        self._rng = np.random.Generator(np.random.PCG64(seed))
        self._header: StoreHeader | None = None
        self._w = np.zeros(0, dtype=np.float32)
        self._block_sums = np.zeros(0, dtype=np.float64)
        self._block_cum = np.zeros(0, dtype=np.float64)
        self._positive = 0
        self._lo = 0  # first eligible append index

    # ------------------------------------------------------------ state
    @property
    def header(self) -> StoreHeader | None:
        """The store header of the last ``sync``."""
        return self._header

    @property
    def eligible(self) -> int:
        """Number of rows batches are drawn from."""
        return 0 if self._header is None else self._header.total_appended - self._lo

    @property
    def total_priority(self) -> float:
        return float(self._block_cum[-1]) if self._block_cum.size else 0.0

    def state_dict(self) -> dict[str, Any]:
        """JSON-serialisable generator state and options (weights come from the store)."""
        return {"options": asdict(self.options), "rng": self._rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore ``state_dict`` output; call ``sync`` before sampling."""
        try:
            options = SamplerOptions(**state["options"])
            self._rng.bit_generator.state = state["rng"]
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"invalid sampler state: {exc}") from exc
        self.options = options

    # ------------------------------------------------------------ weights
    def _guard(self, size: int) -> int:
        return min(self.options.guard_rows, size // 4)

    def _set(self, slots: np.ndarray, values: np.ndarray) -> None:
        old = self._w[slots]
        self._positive += int(np.count_nonzero(values > 0)) - int(np.count_nonzero(old > 0))
        self._w[slots] = values

    def _priorities(self, store: ReplayStore, slots: np.ndarray) -> np.ndarray:
        p = store.priorities(slots)
        return np.minimum(np.nan_to_num(p, nan=0.0, posinf=0.0, neginf=0.0).clip(0), self.options.surprise_cap)

    def sync(self, store: ReplayStore, header: StoreHeader | None = None) -> None:
        """Bring the weights up to ``header`` (default: ``store``'s newest header).

        Passing an explicit header lets every DDP rank sync to the same state
        (e.g. rank 0's, broadcast); refresh ``store`` first so its reads accept it.
        """
        if header is None:
            store.refresh()
            header = store.header
        elif header.capacity != store.capacity:
            raise ValueError(f"header of a store with capacity {header.capacity} does not fit "
                             f"{store.path} (capacity {store.capacity})")
        new = header
        old = self._header
        lo_new = new.oldest + self._guard(new.size)
        nblocks = -(-new.capacity // BLOCK)
        full = (old is None or old.capacity != new.capacity or old.segments != new.segments
                or old.logical_capacity != new.logical_capacity
                or new.total_appended - old.total_appended >= new.logical_capacity
                or new.total_appended < old.total_appended)
        if full:
            self._w = np.zeros(nblocks * BLOCK, dtype=np.float32)
            self._positive = 0
            idx = np.arange(lo_new, new.total_appended, dtype=np.int64)
            slots = new.append_to_slot(idx)
            self._set(slots, self._priorities(store, slots))
            self._block_sums = self._w.reshape(-1, BLOCK).sum(axis=1, dtype=np.float64)
        else:
            assert old is not None
            leaving = np.arange(self._lo, min(lo_new, old.total_appended), dtype=np.int64)
            arriving = np.concatenate((
                np.arange(lo_new, min(self._lo, new.total_appended), dtype=np.int64),
                np.arange(max(old.total_appended, lo_new), new.total_appended, dtype=np.int64)))
            gone = new.append_to_slot(leaving)
            self._set(gone, np.zeros(gone.size, dtype=np.float32))
            came = new.append_to_slot(arriving)
            self._set(came, self._priorities(store, came))
            touched = np.unique(np.concatenate((gone, came)) // BLOCK)
            if touched.size:
                blocks = self._w.reshape(-1, BLOCK)[touched]
                self._block_sums[touched] = blocks.sum(axis=1, dtype=np.float64)
        self._block_cum = np.cumsum(self._block_sums)
        self._header, self._lo = new, lo_new

    # ------------------------------------------------------------ drawing
    def sample(self, batch_size: int) -> np.ndarray:
        """Physical slots of one global batch (int64, distinct, shuffled)."""
        if self._header is None:
            raise RuntimeError("call sync(store) before sample()")
        if batch_size <= 0:
            raise ValueError(f"batch_size must be > 0, got {batch_size}")
        if batch_size > self.eligible:
            raise NotEnoughRowsError(f"global batch of {batch_size} needs at least that many "
                                     f"eligible rows; the replay has {self.eligible}")
        n_surprise = round(self.options.surprise_fraction * batch_size)
        if self.total_priority <= 0:
            n_surprise = 0
        chosen = self._draw_proportional(min(n_surprise, self._positive))
        chosen = self._draw_uniform(batch_size - chosen.size, chosen)
        return self._rng.permutation(chosen)

    def _draw_proportional(self, k: int) -> np.ndarray:
        chosen = np.zeros(0, dtype=np.int64)
        w2d = self._w.reshape(-1, BLOCK)
        for _ in range(_MAX_ROUNDS):
            need = k - chosen.size
            if need <= 0:
                return chosen
            u = self._rng.random(need) * self.total_priority
            blk = np.minimum(np.searchsorted(self._block_cum, u, side="right"), len(self._block_cum) - 1)
            rest = u - (self._block_cum[blk] - self._block_sums[blk])
            inner = np.cumsum(w2d[blk], axis=1, dtype=np.float64)
            pos = np.minimum((inner <= rest[:, None]).sum(axis=1), BLOCK - 1)
            slots = blk * BLOCK + pos
            slots = slots[self._w[slots] > 0]  # float rounding can land on an empty slot
            chosen = _merge_new(chosen, slots)
        # heavily concentrated weights: finish exactly (Efraimidis-Spirakis keys)
        need = k - chosen.size
        cand = np.flatnonzero(self._w > 0)
        cand = cand[~np.isin(cand, chosen)]
        keys = np.log(self._rng.random(cand.size)) / self._w[cand]
        top = cand[np.argpartition(-keys, need - 1)[:need]] if need < cand.size else cand
        return np.concatenate((chosen, np.sort(top)))

    def _draw_uniform(self, k: int, chosen: np.ndarray) -> np.ndarray:
        assert self._header is not None
        n = self.eligible
        target = chosen.size + k
        for _ in range(_MAX_ROUNDS):
            need = target - chosen.size
            if need <= 0:
                return chosen
            ages = self._rng.integers(0, n, size=need)
            chosen = _merge_new(chosen, self._header.age_to_slot(ages))
        need = target - chosen.size
        rest = self._header.age_to_slot(np.arange(n))
        rest = rest[~np.isin(rest, chosen)]
        return np.concatenate((chosen, self._rng.choice(rest, size=need, replace=False)))


def _merge_new(chosen: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """Append the draws not already chosen, first occurrence only, in draw order."""
    _, first = np.unique(draws, return_index=True)
    fresh = draws[np.sort(first)]
    fresh = fresh[~np.isin(fresh, chosen)]
    return np.concatenate((chosen, fresh.astype(np.int64)))


def rank_share(global_slots: np.ndarray, rank: int, world_size: int) -> np.ndarray:
    """Rank ``rank``'s contiguous share of a global batch (equal shares required)."""
    n = len(global_slots)
    if world_size <= 0 or not 0 <= rank < world_size:
        raise ValueError(f"need 0 <= rank ({rank}) < world_size ({world_size})")
    if n % world_size:
        raise ValueError(f"global batch {n} is not divisible by world size {world_size}")
    per = n // world_size
    return global_slots[rank * per:(rank + 1) * per]
