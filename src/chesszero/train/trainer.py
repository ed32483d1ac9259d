"""The training quantum runner (SPEC 8).

:class:`Trainer` owns the :class:`~chesszero.model.ChessNet`, a Nesterov SGD
optimizer (momentum 0.9, weight decay 1e-4 on every parameter; AdamW with
``train.optimizer: adamw``), the LR
schedule and, when ``world_size > 1``, the DDP wrapper.  One optimizer step:
split the rank's batch into micro-batches, forward under bfloat16 autocast
(when enabled), backward the SPEC 5 loss (or the ``loss`` given, e.g.
:class:`~chesszero.train.distill.DistillLoss`; gradients all-reduced by DDP), record
the global gradient norm, clip it to 1.0, set the scheduled LR and step.
:meth:`Trainer.run_quantum` runs S such steps and returns a
:class:`~chesszero.train.stats.QuantumStats`; :meth:`Trainer.save` /
:meth:`Trainer.restore` checkpoint everything needed to resume exactly.

The LR of optimizer step ``k`` (0-based) is ``cfg.lr.at(k + 1)``, so the first
step already trains and step 999 of a 1,000-step warmup runs at the peak.
"""

from __future__ import annotations

import contextlib
import copy
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from chesszero.config.schema import OptimizerKind, TrainConfig
from chesszero.config.sizes import ModelSize
from chesszero.model.actions import ActionTable
from chesszero.model.network import ChessNet, NetOutput
from chesszero.train.batch import TrainBatch
from chesszero.train.checkpoint import (
    Checkpoint,
    capture_rng,
    load_checkpoint,
    restore_rng,
    save_checkpoint,
)
from chesszero.train.distributed import DistContext, resolve_world_size
from chesszero.train.loss import LossTerms, compute_loss
from chesszero.train.sources import BatchSource
from chesszero.train.stats import QuantumStats

__all__ = ["LossFn", "Trainer", "build_optimizer"]

LossFn = Callable[[NetOutput, TrainBatch], LossTerms]
"""The loss of one (micro-)batch: the SPEC 5 loss by default, a distillation loss for a student."""


def build_optimizer(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    """The recipe's optimizer, LR set per step: Nesterov SGD with its momentum and
    weight decay, or AdamW (default betas) with decoupled weight decay."""
    if cfg.optimizer is OptimizerKind.ADAMW:
        return torch.optim.AdamW(model.parameters(), lr=cfg.lr.at(0), weight_decay=cfg.weight_decay)
    return torch.optim.SGD(
        model.parameters(),
        lr=cfg.lr.at(0),
        momentum=cfg.momentum,
        nesterov=cfg.nesterov,
        weight_decay=cfg.weight_decay,
    )


class Trainer:
    """Trains one :class:`ChessNet` in quanta of optimizer steps, optionally under DDP."""

    def __init__(
        self,
        cfg: TrainConfig,
        model_size: str | ModelSize,
        *,
        ctx: DistContext | None = None,
        table: ActionTable | None = None,
        loss: LossFn | None = None,
    ) -> None:
        cfg = self.cfg = resolve_world_size(cfg)
        self.loss: LossFn = loss or (lambda out, batch: compute_loss(out, batch, cfg.loss_weights))
        self.ctx = ctx or DistContext()
        if self.ctx.world_size != cfg.world_size:
            raise ValueError(
                f"train.world_size is {cfg.world_size} but the process group has "
                f"{self.ctx.world_size} ranks"
            )
        with torch.random.fork_rng(devices=[]):  # seeded init, global RNG left alone
            torch.manual_seed(cfg.seed)
            net = ChessNet(model_size, table=table)
        self.model = net.to(self.ctx.device)
        self.net: torch.nn.Module = self.model
        if self.ctx.distributed:
            self.net = DistributedDataParallel(self.model)
        self.optimizer = build_optimizer(self.model, cfg)
        self.step = 0

    @property
    def local_batch(self) -> int:
        """Rows per rank per step."""
        return self.cfg.global_batch // self.cfg.world_size

    def lr_for(self, step: int) -> float:
        """Learning rate used by 0-based optimizer step ``step``."""
        return self.cfg.lr.at(step + 1)

    def _autocast(self) -> contextlib.AbstractContextManager[Any]:
        return torch.autocast(self.ctx.device.type, dtype=torch.bfloat16, enabled=self.cfg.bf16)

    def train_step(self, batch: TrainBatch) -> tuple[torch.Tensor, torch.Tensor, float]:
        """One optimizer step on this rank's batch.

        Returns ``(loss terms [5], grad norm before clipping, lr)``; the loss
        terms are this rank's means (total, policy, value, next, length).
        """
        if len(batch) != self.local_batch:
            raise ValueError(f"expected a local batch of {self.local_batch} rows, got {len(batch)}")
        self.net.train()
        batch = batch.to(self.ctx.device)
        parts = batch.split(self.cfg.micro_batches)
        self.optimizer.zero_grad(set_to_none=True)
        terms = torch.zeros(5, device=self.ctx.device)
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            sync = (
                self.net.no_sync()
                if isinstance(self.net, DistributedDataParallel) and not last
                else contextlib.nullcontext()
            )
            with sync:
                with self._autocast():
                    out = self.net(part.planes)
                loss = self.loss(out, part)
                (loss.total / len(parts)).backward()
            terms += loss.detached() / len(parts)
        norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip)
        lr = self.lr_for(self.step)
        if torch.isfinite(norm):
            for group in self.optimizer.param_groups:
                group["lr"] = lr
            self.optimizer.step()
        self.step += 1
        return terms, norm.detach(), lr

    def run_quantum(
        self,
        source: BatchSource,
        steps: int | None = None,
        *,
        on_step: Callable[[int], None] | None = None,
    ) -> QuantumStats:
        """Run ``steps`` (default ``cfg.steps_per_quantum``) optimizer steps from ``source``.

        ``on_step(k)`` is called after the ``k``-th step of the quantum (1-based),
        e.g. to advance a progress bar; it must not touch the model.
        """
        steps = self.cfg.steps_per_quantum if steps is None else steps
        if steps < 1:
            raise ValueError(f"a quantum needs at least one step, got {steps}")
        device = self.ctx.device
        start = self.step
        lr_first = self.lr_for(start)
        loss_sum = torch.zeros(5, device=device)
        norms = torch.zeros(steps, device=device)
        reflected = torch.zeros((), device=device)
        t0 = time.perf_counter()
        for k in range(steps):
            batch = source.next_batch()
            terms, norm, _ = self.train_step(batch)
            loss_sum += terms
            norms[k] = norm
            reflected += batch.reflected.sum().to(device)
            if on_step is not None:
                on_step(k + 1)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        wall = time.perf_counter() - t0
        summary = torch.cat([loss_sum / steps, reflected.reshape(1)])
        if self.ctx.distributed:
            dist.all_reduce(summary)
            summary[:5] /= self.ctx.world_size
        means = summary.tolist()
        finite = norms[torch.isfinite(norms)]
        samples = steps * self.cfg.global_batch
        return QuantumStats(
            start_step=start,
            end_step=self.step,
            world_size=self.ctx.world_size,
            global_batch=self.cfg.global_batch,
            loss_total=means[0],
            loss_policy=means[1],
            loss_value=means[2],
            loss_next_policy=means[3],
            loss_length=means[4],
            lr_first=lr_first,
            lr_last=self.lr_for(self.step - 1),
            grad_norm_mean=float(finite.mean()) if len(finite) else math.nan,
            grad_norm_max=float(finite.max()) if len(finite) else math.nan,
            clipped_fraction=float((finite > self.cfg.grad_clip).float().sum()) / steps,
            skipped_steps=steps - len(finite),
            reflected_fraction=means[5] / samples,
            samples=samples,
            wall_s=wall,
            samples_per_s=samples / wall if wall > 0 else math.inf,
        )

    def checkpoint(self, extra: dict[str, Any] | None = None) -> Checkpoint:
        """A snapshot of the training state (copies: later steps do not alter it)."""
        return Checkpoint(
            step=self.step,
            model_size=self.model.size.name,
            model={k: v.detach().cpu().clone() for k, v in self.model.state_dict().items()},
            optimizer=copy.deepcopy(self.optimizer.state_dict()),
            rng=capture_rng(),
            extra=copy.deepcopy(dict(extra or {})),
        )

    def save(self, path: str | Path, extra: dict[str, Any] | None = None) -> Path | None:
        """Write a checkpoint atomically from rank 0 (other ranks return ``None``)."""
        if not self.ctx.is_main:
            return None
        return save_checkpoint(path, self.checkpoint(extra))

    def restore(self, checkpoint: Checkpoint | str | Path) -> dict[str, Any]:
        """Load model, optimizer, step and RNG state; returns the ``extra`` state dicts."""
        ckpt = checkpoint if isinstance(checkpoint, Checkpoint) else load_checkpoint(checkpoint)
        if ckpt.model_size != self.model.size.name:
            raise ValueError(f"checkpoint is a {ckpt.model_size} network, trainer has {self.model.size}")
        groups = ckpt.optimizer.get("param_groups") or [{}]
        saved = OptimizerKind.ADAMW if "betas" in groups[0] else OptimizerKind.SGD
        if saved is not self.cfg.optimizer:
            raise ValueError(f"checkpoint was trained with train.optimizer {saved.value}, "
                             f"the recipe says {self.cfg.optimizer.value}")
        self.model.load_state_dict(ckpt.model)
        self.optimizer.load_state_dict(ckpt.optimizer)
        self.step = ckpt.step
        restore_rng(ckpt.rng)
        return ckpt.extra
