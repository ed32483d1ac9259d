"""A 2-rank gloo DDP quantum matches a single process with the same global batch.

Under DDP each rank normalises its own half of the global batch, so the
single-process reference uses ``micro_batches=2`` (BatchNorm sees the same
halves); parameters and losses must then agree to float tolerance.  BatchNorm
running statistics are not compared: DDP keeps rank 0's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from train_support import make_rows, one_thread, requires_core

from chesszero.config import TrainConfig, load_config
from chesszero.replay.rows import RowBatch
from chesszero.train import (
    ArraySampler,
    SampledBatches,
    Trainer,
    init_distributed,
    spawn_local,
)

pytestmark = requires_core
__all__ = ["one_thread"]  # autouse fixture

SIZE = "2x16"
STEPS = 3


def _cfg(**train: Any) -> TrainConfig:
    base = {"global_batch": 16, "reflection": "all", "lr": [[0, 0.05]], "seed": 5}
    return load_config(preset="smoke", overrides={"train": {**base, **train}}).train


def _run(cfg: TrainConfig, rows: RowBatch, rank: int = 0) -> tuple[Trainer, list[float]]:
    ctx = init_distributed()
    trainer = Trainer(cfg, SIZE, ctx=ctx)
    source = SampledBatches(
        ArraySampler(rows, seed=2),
        global_batch=cfg.global_batch,
        rank=ctx.rank,
        world_size=ctx.world_size,
        reflection=cfg.reflection,
        seed=3,
    )
    losses = [trainer.run_quantum(source, steps=1).loss_total for _ in range(STEPS)]
    return trainer, losses


def _ddp_worker(rows: RowBatch, out: str) -> None:
    trainer, losses = _run(_cfg(world_size=2), rows)
    if trainer.ctx.is_main:
        params = {k: v.detach().clone() for k, v in trainer.model.named_parameters()}
        torch.save({"params": params, "losses": losses, "step": trainer.step}, out)


@pytest.mark.timeout(120)
def test_two_rank_gloo_ddp_matches_single_process(tmp_path: Path) -> None:
    rows = make_rows(48, seed=21)
    out = tmp_path / "rank0.pt"
    spawn_local(_ddp_worker, 2, rows, str(out))
    ddp = torch.load(out, weights_only=True)

    single, losses = _run(_cfg(world_size=1, micro_batches=2), rows)
    assert ddp["step"] == single.step == STEPS
    assert ddp["losses"] == pytest.approx(losses, rel=1e-5)
    initial = dict(Trainer(_cfg(), SIZE).model.named_parameters())
    moved = 0
    for name, param in single.model.named_parameters():
        torch.testing.assert_close(ddp["params"][name], param.detach(), rtol=1e-5, atol=1e-6)
        moved += int(not torch.equal(param.detach(), initial[name].detach()))
    assert moved == len(initial)

    # Whole-batch BatchNorm differs from per-rank BatchNorm: the comparison can fail.
    _, whole_losses = _run(_cfg(world_size=1, micro_batches=1), rows)
    assert whole_losses[-1] != pytest.approx(losses[-1], rel=1e-6)
