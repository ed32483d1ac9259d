"""StoreSampler: the trainer's GlobalSampler over a live store (DDP agreement, evictions)."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import numpy as np
from replay_support import assert_untorn, synthetic_rows

from chesszero.replay import ReplayStore, SamplerOptions, StoreHeader, empty_rows
from chesszero.replay.rows import RowBatch
from chesszero.replay.source import StoreSampler


def rows_of(batch: RowBatch) -> np.ndarray:
    rows = empty_rows(len(batch))
    for f in fields(batch):
        if f.name != "slots":
            rows[f.name] = getattr(batch, f.name)
    return rows


def test_trainer_batches_from_the_store(tmp_path: Path) -> None:
    from train_support import make_rows

    from chesszero.config.schema import Reflection
    from chesszero.train.sources import SampledBatches

    source_rows = make_rows(64, seed=1)
    with ReplayStore.create(tmp_path / "r.bin", capacity=128) as store:
        store.append(rows_of(source_rows))
        sampler = StoreSampler(store, SamplerOptions(guard_rows=0), seed=3)
        ranks = [SampledBatches(StoreSampler(store, SamplerOptions(guard_rows=0), seed=3),
                                global_batch=16, rank=r, world_size=2,
                                reflection=Reflection.OFF, seed=5) for r in range(2)]
        one = SampledBatches(sampler, global_batch=16, reflection=Reflection.OFF, seed=5)
        for _ in range(3):
            whole = one.next_batch()
            parts = [r.next_batch() for r in ranks]
            # two ranks together see exactly the single-process global batch
            assert (np.concatenate([p.planes.numpy() for p in parts]) == whole.planes.numpy()).all()
            assert whole.planes.shape == (16, 52, 8, 8)
            assert whole.legal.any(dim=1).all()


def test_ranks_agree_on_a_broadcast_header(tmp_path: Path) -> None:
    path = tmp_path / "r.bin"
    with ReplayStore.create(path, capacity=400, logical_capacity=300) as writer:
        writer.append(synthetic_rows(np.arange(200)))
        r0 = ReplayStore.open(path, readonly=True)
        r1 = ReplayStore.open(path, readonly=True)
        shared: dict[str, object] = {}

        def rank0(h: StoreHeader) -> StoreHeader:
            shared.update(h.to_dict())
            return h

        def rank1(h: StoreHeader) -> StoreHeader:
            return StoreHeader.from_dict(shared)  # what a broadcast would deliver

        s0 = StoreSampler(r0, SamplerOptions(guard_rows=8), seed=11, agree=rank0)
        s1 = StoreSampler(r1, SamplerOptions(guard_rows=8), seed=11, agree=rank1)
        for step in range(4):
            a = s0.draw(32)
            writer.append(synthetic_rows(np.arange(200 + 10 * step, 210 + 10 * step)))
            b = s1.draw(32)  # rank 1 syncs later, after more rows arrived
            assert np.array_equal(a, b)
            assert_untorn(s0.read(a[:16]).__dict__)
            assert_untorn(s1.read(b[16:]).__dict__)
        r0.close()
        r1.close()


def test_evicted_rows_are_replaced_not_torn(tmp_path: Path) -> None:
    path = tmp_path / "r.bin"
    with ReplayStore.create(path, capacity=300, logical_capacity=200) as writer:
        writer.append(synthetic_rows(np.arange(200)))
        reader = ReplayStore.open(path, readonly=True)
        source = StoreSampler(reader, SamplerOptions(guard_rows=0), seed=2)
        slots = source.draw(60)
        writer.append(synthetic_rows(np.arange(200, 300)))  # evicts rows 0..99
        batch = source.read(slots)
        assert source.replaced > 0
        assert np.unique(batch.slots).size == 60
        assert (batch.seq >= 100).all()
        assert_untorn(batch.__dict__)
        state = source.state_dict()
        again = StoreSampler(reader, SamplerOptions(guard_rows=0), seed=99)
        again.load_state_dict(state)
        assert np.array_equal(again.draw(20), source.draw(20))
        reader.close()
