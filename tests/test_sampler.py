"""SurpriseSampler: proportions, no duplicates, determinism, resume, DDP shares, sync."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from replay_support import synthetic_rows

from chesszero.replay import (
    NotEnoughRowsError,
    ReplayStore,
    SamplerOptions,
    SurpriseSampler,
    rank_share,
)


def make_store(path: Path, surprise: np.ndarray, capacity: int | None = None) -> ReplayStore:
    n = surprise.size
    store = ReplayStore.create(path, capacity=capacity or n)
    store.append(synthetic_rows(np.arange(n), surprise=surprise.astype(np.float32)))
    return store


def test_draw_proportions(tmp_path: Path) -> None:
    # 600 rows: 200 with surprise 0, 200 with 1.0, 200 with 5.0 (capped to 2.0)
    groups = np.repeat([0.0, 1.0, 5.0], 200)
    with make_store(tmp_path / "r.bin", groups) as store:
        sampler = SurpriseSampler(SamplerOptions(guard_rows=0), seed=7)
        sampler.sync(store)
        batch, batches = 20, 3000
        counts = np.zeros(3)
        for _ in range(batches):
            slots = sampler.sample(batch)
            assert np.unique(slots).size == batch
            counts += np.bincount(slots // 200, minlength=3)
    # 14 surprise draws per batch split 1:2 between groups 1 and 2 (cap 2.0, so
    # not 1:5), then 6 uniform draws over the 586 rows not already taken
    s_draws, u_draws = 14, 6
    by_surprise = np.array([0.0, s_draws / 3, 2 * s_draws / 3])
    left = 200 - by_surprise
    expect = by_surprise + u_draws * left / left.sum()
    observed = counts / batches
    sigma = np.sqrt(expect * (1 - expect / batch) / batches)
    assert counts.sum() == batch * batches
    assert np.all(np.abs(observed - expect) < 5 * sigma), (observed, expect, sigma)


def test_all_zero_surprise_is_uniform(tmp_path: Path) -> None:
    with make_store(tmp_path / "r.bin", np.zeros(50)) as store:
        sampler = SurpriseSampler(SamplerOptions(guard_rows=0), seed=1)
        sampler.sync(store)
        counts = np.zeros(50)
        for _ in range(2000):
            counts[sampler.sample(10)] += 1
    assert counts.min() > 300 and counts.max() < 500  # mean 400, sd ~18


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 120), frac=st.floats(0, 1), seed=st.integers(0, 2**32 - 1),
       spiky=st.booleans())
def test_batches_never_repeat_a_row(tmp_path_factory: pytest.TempPathFactory, n: int,
                                    frac: float, seed: int, spiky: bool) -> None:
    rng = np.random.default_rng(seed)
    surprise = rng.exponential(1.0, n)
    if spiky:  # most mass on one row: forces the exact fallback path
        surprise = np.where(np.arange(n) == 0, 1e6, 1e-7)
    path = tmp_path_factory.mktemp("s") / "r.bin"
    with make_store(path, surprise) as store:
        sampler = SurpriseSampler(SamplerOptions(guard_rows=0), seed=seed)
        sampler.sync(store)
        batch = max(1, int(frac * n))
        for _ in range(3):
            slots = sampler.sample(batch)
            assert slots.size == batch and np.unique(slots).size == batch
            assert slots.min() >= 0 and slots.max() < n
        assert np.sort(sampler.sample(n)).tolist() == list(range(n))
        with pytest.raises(NotEnoughRowsError):
            sampler.sample(n + 1)


def test_deterministic_and_resumable(tmp_path: Path) -> None:
    surprise = np.linspace(0, 3, 300)
    with make_store(tmp_path / "r.bin", surprise) as store:
        a = SurpriseSampler(seed=123)
        a.sync(store)
        first = [a.sample(32) for _ in range(3)]
        state = json.loads(json.dumps(a.state_dict()))  # checkpoint through JSON
        after = [a.sample(32) for _ in range(3)]

        b = SurpriseSampler(seed=123)
        b.sync(store)
        assert all(np.array_equal(x, y) for x, y in zip(first, [b.sample(32) for _ in range(3)],
                                                        strict=True))
        c = SurpriseSampler(seed=999)
        c.load_state_dict(state)
        c.sync(store)
        assert all(np.array_equal(x, y) for x, y in zip(after, [c.sample(32) for _ in range(3)],
                                                        strict=True))
        with pytest.raises(ValueError, match="invalid sampler state"):
            c.load_state_dict({"rng": {}})


def test_rank_share_partitions_the_batch() -> None:
    batch = np.arange(100, 148)
    shares = [rank_share(batch, r, 4) for r in range(4)]
    assert np.array_equal(np.concatenate(shares), batch)
    assert all(s.size == 12 for s in shares)
    with pytest.raises(ValueError, match="not divisible"):
        rank_share(batch, 0, 5)
    with pytest.raises(ValueError, match="rank"):
        rank_share(batch, 4, 4)


def test_guard_band_leaves_out_the_oldest_rows(tmp_path: Path) -> None:
    with make_store(tmp_path / "r.bin", np.ones(100)) as store:
        sampler = SurpriseSampler(SamplerOptions(guard_rows=10), seed=0)
        sampler.sync(store)
        assert sampler.eligible == 90
        drawn = np.concatenate([sampler.sample(45) for _ in range(40)])
        assert drawn.min() >= 10  # slots 0..9 hold the 10 oldest rows


@settings(max_examples=25, deadline=None)
@given(st.lists(st.one_of(st.tuples(st.just("append"), st.integers(1, 40)),
                          st.tuples(st.just("grow"), st.integers(1, 20))), min_size=1, max_size=20),
       st.integers(0, 6))
def test_incremental_sync_matches_full_rebuild(tmp_path_factory: pytest.TempPathFactory,
                                               ops: list[tuple[str, int]], guard: int) -> None:
    path = tmp_path_factory.mktemp("sync") / "r.bin"
    options = SamplerOptions(guard_rows=guard)
    with ReplayStore.create(path, capacity=200, logical_capacity=30) as store:
        live = SurpriseSampler(options, seed=0)
        for op, n in ops:
            if op == "append":
                t = store.total_appended
                store.append(synthetic_rows(np.arange(t, t + n)))
            else:
                store.set_logical_capacity(min(200, store.logical_capacity + n))
            live.sync(store)
            fresh = SurpriseSampler(options, seed=0)
            fresh.sync(store)
            np.testing.assert_array_equal(live._w, fresh._w)
            np.testing.assert_allclose(live._block_cum, fresh._block_cum)
            assert live.eligible == fresh.eligible
            assert live._positive == np.count_nonzero(fresh._w)
            # weights are exactly the capped surprise of the eligible rows
            elig = store.header.valid_slots()[store.size - live.eligible:]
            expect = np.zeros_like(fresh._w)
            expect[elig] = np.minimum(store.priorities(elig), 2.0)
            np.testing.assert_array_equal(fresh._w, expect)


def test_sample_before_sync_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="sync"):
        SurpriseSampler().sample(4)
    with pytest.raises(ValueError, match="surprise_fraction"):
        SamplerOptions(surprise_fraction=1.5)
