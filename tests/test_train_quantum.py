"""The quantum runner: optimisation, clipping, LR schedule, statistics, checkpoints."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from train_support import make_rows, one_thread, requires_core

from chesszero.config import TrainConfig, load_config
from chesszero.train import (
    ArraySampler,
    SampledBatches,
    Trainer,
    load_checkpoint,
    load_model,
    save_checkpoint,
)

pytestmark = requires_core
__all__ = ["one_thread"]  # autouse fixture
SIZE = "2x16"


def train_cfg(**train: Any) -> TrainConfig:
    return load_config(preset="smoke", overrides={"train": train}).train


def source_for(rows: Any, cfg: TrainConfig, seed: int = 0) -> SampledBatches:
    return SampledBatches(
        ArraySampler(rows, seed=seed), global_batch=cfg.global_batch, reflection=cfg.reflection, seed=seed
    )


def _entropy(p: np.ndarray) -> np.ndarray:
    return -(p * np.log(np.where(p > 0, p, 1.0))).sum(axis=1)


def test_overfitting_a_handful_of_rows_drives_the_loss_down() -> None:
    """Cross-entropy cannot fall below the targets' entropy; the excess (a KL) must shrink."""
    rows = make_rows(8, seed=11)
    floor_policy = _entropy(rows.policy_probs).mean()
    floor_value = _entropy(rows.wdl).mean()
    floor_next = _entropy(rows.next_probs).sum() / len(rows)  # unlabelled rows add 0
    cfg = train_cfg(global_batch=8, lr=[[0, 0.05]], grad_clip=10.0, reflection="off")
    trainer = Trainer(cfg, SIZE)
    source = source_for(rows, cfg)
    first = trainer.run_quantum(source, steps=2)
    trainer.run_quantum(source, steps=60)
    last = trainer.run_quantum(source, steps=2)
    assert first.loss_policy - floor_policy > 1.0
    assert last.loss_policy - floor_policy < 0.3 * (first.loss_policy - floor_policy)
    assert last.loss_value - floor_value < 0.5 * (first.loss_value - floor_value)
    # The next-policy head (weight 0.15, softmax over all 1,880 actions) learns slower.
    assert last.loss_next_policy < first.loss_next_policy - 0.5
    assert last.loss_next_policy > floor_next
    assert last.loss_length < 0.5 * first.loss_length


def test_quantum_statistics_and_lr_schedule() -> None:
    rows = make_rows(64, seed=12)
    cfg = train_cfg(global_batch=16, steps_per_quantum=5, lr=[[0, 0.0], [4, 0.1], [10, 0.01]])
    trainer = Trainer(cfg, SIZE)
    assert trainer.lr_for(0) == pytest.approx(0.025)
    assert trainer.lr_for(3) == pytest.approx(0.1)
    assert trainer.lr_for(6) == pytest.approx(0.1 - 0.09 * 3 / 6)
    progress: list[int] = []
    stats = trainer.run_quantum(source_for(rows, cfg), on_step=progress.append)
    assert progress == [1, 2, 3, 4, 5]  # e.g. a progress bar, advanced after each step
    assert (stats.start_step, stats.end_step, stats.steps) == (0, 5, 5)
    assert trainer.step == 5 and trainer.optimizer.param_groups[0]["lr"] == pytest.approx(trainer.lr_for(4))
    assert stats.lr_first == pytest.approx(0.025) and stats.lr_last == pytest.approx(trainer.lr_for(4))
    assert stats.samples == 80 and stats.samples_per_s > 0 and stats.wall_s > 0
    assert stats.grad_norm_max >= stats.grad_norm_mean > 0 and stats.skipped_steps == 0
    assert 0.0 <= stats.clipped_fraction <= 1.0 and 0.0 < stats.reflected_fraction < 0.5
    total = stats.loss_policy + stats.loss_value + 0.15 * stats.loss_next_policy + 0.1 * stats.loss_length
    assert stats.loss_total == pytest.approx(total, rel=1e-5)
    metrics = stats.as_dict()
    assert metrics["train/steps"] == 5 and "train/loss_policy" in metrics


def test_gradient_is_clipped_after_recording_its_norm() -> None:
    rows = make_rows(16, seed=13)
    cfg = train_cfg(global_batch=16, grad_clip=1e-3, weight_decay=0.0, lr=[[0, 0.5]], reflection="off")
    trainer = Trainer(cfg, SIZE)
    before = torch.nn.utils.parameters_to_vector(trainer.model.parameters()).detach().clone()
    _, norm, lr = trainer.train_step(source_for(rows, cfg).next_batch())
    after = torch.nn.utils.parameters_to_vector(trainer.model.parameters()).detach()
    assert norm.item() > 100 * cfg.grad_clip
    # First Nesterov step: update = lr * (1 + momentum) * clipped gradient.
    expected = lr * (1 + cfg.momentum) * cfg.grad_clip
    assert (after - before).norm().item() == pytest.approx(expected, rel=1e-3)


def test_bf16_autocast_step() -> None:
    rows = make_rows(16, seed=14)
    cfg = train_cfg(global_batch=16, bf16=True)
    trainer = Trainer(cfg, SIZE)
    stats = trainer.run_quantum(source_for(rows, cfg), steps=2)
    assert math.isfinite(stats.loss_total) and stats.skipped_steps == 0


def _state(trainer: Trainer) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in trainer.model.state_dict().items()}


def test_checkpoint_resume_reproduces_the_next_steps_exactly(tmp_path: Path) -> None:
    rows = make_rows(96, seed=15)
    cfg = train_cfg(global_batch=16, micro_batches=2, reflection="all")
    straight = Trainer(cfg, SIZE)
    src = source_for(rows, cfg, seed=4)
    straight.run_quantum(src, steps=3)
    path = straight.save(tmp_path / "ckpt.pt", extra={"source": src.state_dict(), "ledger": {"credit": 7}})
    assert path is not None and path.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.pt"]  # no temp file left behind
    tail = straight.run_quantum(src, steps=3)

    resumed = Trainer(cfg, SIZE)
    src2 = source_for(rows, cfg, seed=99)  # wrong seed on purpose: state comes from the checkpoint
    extra = resumed.restore(tmp_path / "ckpt.pt")
    src2.load_state_dict(extra["source"])
    assert extra["ledger"] == {"credit": 7} and resumed.step == 3
    again = resumed.run_quantum(src2, steps=3)

    assert again.loss_total == tail.loss_total and again.grad_norm_mean == tail.grad_norm_mean
    a, b = _state(straight), _state(resumed)
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k
    for sa, sb in zip(straight.optimizer.state.values(), resumed.optimizer.state.values(), strict=True):
        assert torch.equal(sa["momentum_buffer"], sb["momentum_buffer"])


def test_checkpoint_model_loading_and_version_guard(tmp_path: Path) -> None:
    cfg = train_cfg()
    trainer = Trainer(cfg, SIZE)
    trainer.run_quantum(source_for(make_rows(40, seed=16), cfg), steps=1)
    path = trainer.save(tmp_path / "sub" / "c.pt")
    assert path is not None
    planes = torch.rand(3, 52, 8, 8)
    trainer.model.eval()
    want = trainer.model(planes)
    full = load_model(path)
    lite = load_model(path, aux_heads=False)
    assert not lite.has_aux_heads
    torch.testing.assert_close(full(planes).policy, want.policy)
    policy, wdl = lite.inference_view()(planes)
    torch.testing.assert_close(policy, want.policy)
    torch.testing.assert_close(wdl, want.wdl)
    ckpt = load_checkpoint(path)
    ckpt.encoding_version += 1
    save_checkpoint(path, ckpt)
    with pytest.raises(ValueError, match="encoding version"):
        load_model(path)
    other = Trainer(train_cfg(), "2x20")
    with pytest.raises(ValueError, match="2x16 network"):
        other.restore(ckpt)


def test_world_size_mismatch_and_bad_batch_are_refused() -> None:
    with pytest.raises(ValueError, match="world_size is 2"):
        Trainer(train_cfg(world_size=2), SIZE)
    cfg = train_cfg(global_batch=16)
    trainer = Trainer(cfg, SIZE)
    small = SampledBatches(ArraySampler(make_rows(16, seed=1), seed=0), global_batch=8)
    with pytest.raises(ValueError, match="local batch of 16"):
        trainer.train_step(small.next_batch())
    assert np.isclose(cfg.lr.at(0), 0.0)


def test_adamw_fits_resumes_exactly_and_refuses_an_sgd_checkpoint(tmp_path: Path) -> None:
    """train.optimizer adamw: decoupled decay, Adam moments checkpointed, kinds never mixed."""
    rows = make_rows(64, seed=17)
    cfg = train_cfg(optimizer="adamw", global_batch=16, lr=[[0, 0.003]], reflection="off")
    straight = Trainer(cfg, SIZE)
    assert isinstance(straight.optimizer, torch.optim.AdamW)
    assert straight.optimizer.param_groups[0]["weight_decay"] == cfg.weight_decay
    src = source_for(rows, cfg, seed=5)
    first = straight.run_quantum(src, steps=2)
    straight.run_quantum(src, steps=40)
    path = straight.save(tmp_path / "adamw.pt", extra={"source": src.state_dict()})
    tail = straight.run_quantum(src, steps=3)
    assert tail.loss_policy < first.loss_policy - 0.5

    resumed = Trainer(cfg, SIZE)
    src2 = source_for(rows, cfg, seed=99)
    src2.load_state_dict(resumed.restore(path)["source"])
    again = resumed.run_quantum(src2, steps=3)
    assert again.loss_total == tail.loss_total
    for sa, sb in zip(straight.optimizer.state.values(), resumed.optimizer.state.values(), strict=True):
        assert torch.equal(sa["exp_avg_sq"], sb["exp_avg_sq"])

    sgd = Trainer(train_cfg(global_batch=16), SIZE)
    with pytest.raises(ValueError, match="train.optimizer adamw, the recipe says sgd"):
        sgd.restore(path)
    sgd_path = sgd.save(tmp_path / "sgd.pt")
    with pytest.raises(ValueError, match="train.optimizer sgd, the recipe says adamw"):
        Trainer(cfg, SIZE).restore(sgd_path)
    with pytest.raises(ValueError, match="optimizer"):
        train_cfg(optimizer="adam")


def test_the_distilled_student_trains_with_sgd_whatever_the_recipe() -> None:
    from chesszero.config import OptimizerKind
    from chesszero.train.distill import student_train_config

    cfg = load_config(preset="smoke", overrides={"train": {"optimizer": "adamw"}})
    assert cfg.train.optimizer is OptimizerKind.ADAMW
    assert student_train_config(cfg.train, cfg.distill).optimizer is OptimizerKind.SGD
