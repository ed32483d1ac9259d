"""Training the NNUE student: MSE between ``sigmoid(y)`` (``y * 400`` is the
evaluation in centipawns) and the target in [0, 1], on the CPU.

- ``Samples``: feature index arrays ``[n, 32]`` per perspective (side to move
  first, -1 padding) and targets; ``target_of(result, p_teacher, lam)`` is
  ``lambda * result + (1 - lambda) * p_teacher`` (a position without a known
  result takes the teacher alone).
- ``train_student(train, holdout, settings, checkpoint=...)``: AdamW with a
  cosine learning rate from ``lr`` to ``lr_final`` over all steps; every
  step is followed by ``NnueModel.clip_`` (the network stays inside the
  quantisation ranges); after each epoch the held-out loss is measured and
  the best epoch's weights are kept (``TrainOutcome.net``).
- Resumable: every ``checkpoint_every`` steps and at every epoch's end the
  whole state (weights, optimizer, position in the epoch, best so far,
  history) is written atomically to ``checkpoint``; a rerun with the same
  ``identity`` continues from there (each epoch's order is a function of
  ``seed`` and the epoch, so a resumed run takes the same batches); another
  identity starts afresh.
"""

from __future__ import annotations

import io
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from chesszero.fsio import atomic_write_bytes
from chesszero.nnue.model import NnueModel
from chesszero.nnue.quant import MAX_ACTIVE, FloatNet

__all__ = ["EpochStats", "Samples", "TrainOutcome", "TrainSettings", "holdout_loss", "predict_cp", "target_of",
           "train_student"]


@dataclass(frozen=True)
class TrainSettings:
    """The trainer's knobs (``NnueConfig`` holds them in the recipe)."""

    hidden: int
    epochs: int
    batch_size: int
    lr: float
    lr_final: float
    weight_decay: float
    checkpoint_every: int
    seed: int

    def __post_init__(self) -> None:
        for name in ("hidden", "epochs", "batch_size", "checkpoint_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"TrainSettings.{name} must be >= 1, got {getattr(self, name)}")
        if not 0.0 <= self.lr_final <= self.lr:
            raise ValueError(f"need 0 <= lr_final <= lr, got lr {self.lr}, lr_final {self.lr_final}")

    @classmethod
    def from_config(cls, cfg: Any) -> TrainSettings:
        """From an ``NnueConfig``."""
        return cls(hidden=cfg.hidden, epochs=cfg.epochs, batch_size=cfg.batch_size, lr=cfg.lr,
                   lr_final=cfg.lr_final, weight_decay=cfg.weight_decay, checkpoint_every=cfg.checkpoint_every,
                   seed=cfg.seed)


def target_of(result: np.ndarray, p_teacher: np.ndarray, lam: float) -> np.ndarray:
    """``lam * result + (1 - lam) * p_teacher``; where ``result`` is NaN (unknown), ``p_teacher``."""
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lambda must lie in [0, 1], got {lam!r}")
    result = np.asarray(result, np.float64)
    p = np.asarray(p_teacher, np.float64)
    return np.where(np.isnan(result), p, lam * np.nan_to_num(result) + (1.0 - lam) * p).astype(np.float32)


@dataclass(frozen=True)
class Samples:
    """Training examples: features per perspective (int ``[n, 32]``) and targets (float32 ``[n]``)."""

    stm: np.ndarray
    nstm: np.ndarray
    target: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.target)
        if self.stm.shape != (n, MAX_ACTIVE) or self.nstm.shape != (n, MAX_ACTIVE):
            raise ValueError(f"features must be [{n}, {MAX_ACTIVE}] per perspective for {n} targets, "
                             f"got {list(self.stm.shape)} and {list(self.nstm.shape)}")
        if n and not (np.all(self.target >= 0.0) and np.all(self.target <= 1.0)):
            raise ValueError("targets must lie in [0, 1]")

    def __len__(self) -> int:
        return len(self.target)

    def batch(self, idx: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return (torch.from_numpy(self.stm[idx].astype(np.int64)), torch.from_numpy(self.nstm[idx].astype(np.int64)),
                torch.from_numpy(self.target[idx].astype(np.float32)))


@dataclass(frozen=True)
class EpochStats:
    epoch: int
    train_loss: float
    holdout_loss: float
    lr: float
    seconds: float


@dataclass(frozen=True)
class TrainOutcome:
    """The best epoch's network and the run's history."""

    net: FloatNet
    best_epoch: int
    best_holdout_loss: float
    constant_holdout_loss: float  # the loss of always predicting the mean training target
    steps: int
    history: list[EpochStats] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"best_epoch": self.best_epoch, "best_holdout_loss": self.best_holdout_loss,
                "constant_holdout_loss": self.constant_holdout_loss, "steps": self.steps,
                "history": [asdict(h) for h in self.history]}


def _loss(model: NnueModel, stm: torch.Tensor, nstm: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return torch.mean((torch.sigmoid(model(stm, nstm)) - target) ** 2)


@torch.no_grad()
def predict_cp(model: NnueModel, samples: Samples, batch: int = 8192) -> np.ndarray:
    """``400 * y`` of every sample (float centipawns, side to move's view)."""
    out = [model(*samples.batch(np.arange(i, min(i + batch, len(samples))))[:2]).numpy()
           for i in range(0, len(samples), batch)]
    return 400.0 * np.concatenate(out) if out else np.zeros(0)


@torch.no_grad()
def holdout_loss(model: NnueModel, samples: Samples, batch: int = 8192) -> float:
    """Mean squared error of ``sigmoid(y)`` against the targets."""
    if not len(samples):
        raise ValueError("no held-out samples to measure the loss on")
    p = 1.0 / (1.0 + np.exp(-predict_cp(model, samples, batch) / 400.0))
    return float(np.mean((p - samples.target) ** 2))


def _lr_at(s: TrainSettings, step: int, total: int) -> float:
    return s.lr_final + 0.5 * (s.lr - s.lr_final) * (1.0 + math.cos(math.pi * min(step, total) / max(total, 1)))


def _save(path: Path, state: dict[str, Any]) -> None:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    atomic_write_bytes(path, buffer.getvalue())


def _fresh(settings: TrainSettings, identity: str) -> dict[str, Any]:
    torch.manual_seed(settings.seed)
    model = NnueModel(settings.hidden)
    model.clip_()
    return {"identity": identity, "settings": asdict(settings), "model": model.state_dict(), "optimizer": None,
            "epoch": 0, "batch": 0, "step": 0, "loss_sum": 0.0, "loss_batches": 0, "best_loss": math.inf,
            "best_epoch": -1, "best_model": None, "history": []}


def train_student(train: Samples, holdout: Samples, settings: TrainSettings, *, checkpoint: Path | None = None,
                  identity: str = "", on_step: Callable[[int, int], None] | None = None) -> TrainOutcome:
    """Trains (or resumes) the student (module docstring); ``on_step(step, total)`` after each step."""
    if not len(train) or not len(holdout):
        raise ValueError(f"need training and held-out samples, got {len(train)} and {len(holdout)}")
    state = None
    if checkpoint is not None and checkpoint.is_file():
        state = torch.load(checkpoint, weights_only=False)
        if state.get("identity") != identity or state.get("settings") != asdict(settings):
            state = None  # another data set or recipe: start afresh
    state = state or _fresh(settings, identity)
    model = NnueModel(settings.hidden)
    model.load_state_dict(state["model"])
    opt = torch.optim.AdamW(model.parameters(), lr=settings.lr, weight_decay=settings.weight_decay)
    if state["optimizer"] is not None:
        opt.load_state_dict(state["optimizer"])
    n, bs = len(train), settings.batch_size
    per_epoch = math.ceil(n / bs)
    total = per_epoch * settings.epochs

    def snapshot() -> None:
        if checkpoint is not None:
            state.update(model=model.state_dict(), optimizer=opt.state_dict())
            _save(checkpoint, state)

    while state["epoch"] < settings.epochs:
        epoch, started = state["epoch"], time.perf_counter()
        order = np.random.default_rng([settings.seed, epoch]).permutation(n)
        for b in range(state["batch"], per_epoch):
            lr = _lr_at(settings, state["step"], total)
            for group in opt.param_groups:
                group["lr"] = lr
            loss = _loss(model, *train.batch(order[b * bs:(b + 1) * bs]))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            model.clip_()
            state["step"] += 1
            state["batch"] = b + 1
            state["loss_sum"] += loss.item()
            state["loss_batches"] += 1
            if on_step is not None:
                on_step(state["step"], total)
            if state["step"] % settings.checkpoint_every == 0 and b + 1 < per_epoch:
                snapshot()
        held = holdout_loss(model, holdout)
        stats = EpochStats(epoch, state["loss_sum"] / max(state["loss_batches"], 1), held,
                           _lr_at(settings, state["step"], total), time.perf_counter() - started)
        state["history"].append(asdict(stats))
        if held < state["best_loss"]:
            state.update(best_loss=held, best_epoch=epoch,
                         best_model={k: v.clone() for k, v in model.state_dict().items()})
        state.update(epoch=epoch + 1, batch=0, loss_sum=0.0, loss_batches=0)
        snapshot()
    best = NnueModel(settings.hidden)
    best.load_state_dict(state["best_model"])
    constant = float(np.mean((np.mean(train.target) - holdout.target) ** 2))
    return TrainOutcome(best.to_float_net(), state["best_epoch"], state["best_loss"], constant, state["step"],
                        [EpochStats(**h) for h in state["history"]])
