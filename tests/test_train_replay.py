"""The trainer fed by a live replay store: ReplayStore -> StoreSampler -> SampledBatches."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from train_support import make_raw_rows, one_thread, requires_core

from chesszero.config import load_config
from chesszero.replay import ReplayStore, SamplerOptions, StoreSampler
from chesszero.train import SampledBatches, Trainer

pytestmark = requires_core
__all__ = ["one_thread"]  # autouse fixture


def test_quantum_from_a_replay_store_and_exact_resume(tmp_path: Path) -> None:
    cfg = load_config(preset="smoke", overrides={"train.global_batch": 16}).train
    store = ReplayStore.create(tmp_path / "replay.bin", capacity=128, logical_capacity=96)
    store.append(make_raw_rows(80, seed=31))

    def source(seed: int) -> SampledBatches:
        sampler = StoreSampler(store, SamplerOptions(guard_rows=0), seed=seed)
        return SampledBatches(sampler, global_batch=16, reflection=cfg.reflection, seed=seed)

    trainer = Trainer(cfg, "2x16")
    src = source(1)
    drawn = src.sampler.draw(16)
    assert len(np.unique(drawn)) == 16  # a row appears at most once per global batch
    stats = trainer.run_quantum(src, steps=2)
    assert stats.samples == 32 and np.isfinite(stats.loss_total)
    ckpt = trainer.checkpoint(extra={"source": src.state_dict()})
    store.append(make_raw_rows(24, seed=32))  # the ring wraps and evicts while training
    tail = trainer.run_quantum(src, steps=2)

    resumed = Trainer(cfg, "2x16")
    src2 = source(7)
    src2.load_state_dict(resumed.restore(ckpt)["source"])
    again = resumed.run_quantum(src2, steps=2)
    assert again.loss_total == tail.loss_total
    for a, b in zip(trainer.model.parameters(), resumed.model.parameters(), strict=True):
        assert torch.equal(a, b)
    store.close()


def test_quantum_job_is_gated_by_credit_and_resumes(tmp_path: Path) -> None:
    from chesszero.cli import main as cli_main
    from chesszero.train.checkpoint import load_checkpoint
    from chesszero.train.run import EXIT_UNFUNDED

    def main(argv: list[str]) -> int:
        return cli_main(["train", *argv])

    replay, ckpt, stats = tmp_path / "replay.bin", tmp_path / "train.pt", tmp_path / "q.json"
    store = ReplayStore.create(replay, capacity=256)
    store.append(make_raw_rows(40, seed=33))
    argv = ["--preset", "smoke", "--replay", str(replay), "--checkpoint", str(ckpt),
            "--stats-out", str(stats), "--set", "train.global_batch=16", "--set", "train.steps_per_quantum=4"]
    # 4 steps x 16 rows = 64 presentations need 16 admitted rows at reuse 4.
    assert main(argv) == 0
    first = load_checkpoint(ckpt)
    assert first.step == 4 and first.extra["ledger"]["spent_presentations"] == 64
    assert "source" in first.extra and stats.exists()
    assert main(argv) == 0  # 40 rows fund 160 presentations: two quanta
    assert load_checkpoint(ckpt).step == 8
    assert main(argv) == EXIT_UNFUNDED
    assert load_checkpoint(ckpt).step == 8  # nothing trained, nothing written
    store.append(make_raw_rows(8, seed=34))
    assert main(argv) == 0
    assert load_checkpoint(ckpt).step == 12
    store.close()
