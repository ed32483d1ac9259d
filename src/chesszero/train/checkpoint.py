"""Training checkpoints: atomic writes, exact resume, model loading.

A checkpoint holds the model and optimizer state, the optimizer step, the
torch RNG states, the network size, the core's encoding version and opaque
``extra`` state dicts (e.g. the batch source / sampler state, the replay
credit ledger).  :func:`save_checkpoint` writes a temporary file in the same
directory, fsyncs it and ``os.replace``-s it over the target, so a crash
leaves either the old or the new checkpoint, never a torn one.
:func:`grow_checkpoint` turns a checkpoint into one of a larger network with
the same outputs (:func:`chesszero.model.grow`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from chesszero.config.sizes import ModelSize
from chesszero.fsio import atomic_write
from chesszero.model.actions import ActionTable
from chesszero.model.grow import check_growth, grow
from chesszero.model.network import ChessNet

__all__ = [
    "CHECKPOINT_FORMAT",
    "Checkpoint",
    "capture_rng",
    "grow_checkpoint",
    "load_checkpoint",
    "load_model",
    "restore_rng",
    "save_checkpoint",
]

CHECKPOINT_FORMAT = 1
"""Bumped whenever the checkpoint dictionary changes shape."""


def _encoding_version() -> int:
    from chesszero import core

    return int(core.ENCODING_VERSION)


@dataclass
class Checkpoint:
    """Everything needed to continue training exactly where it stopped."""

    step: int
    model_size: str
    model: dict[str, torch.Tensor]
    optimizer: dict[str, Any]
    rng: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    encoding_version: int = field(default_factory=_encoding_version)
    format: int = CHECKPOINT_FORMAT


def capture_rng() -> dict[str, Any]:
    """Torch CPU (and CUDA, when present) RNG states."""
    state: dict[str, Any] = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng(state: dict[str, Any]) -> None:
    """Inverse of :func:`capture_rng`."""
    if "torch" in state:
        torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(path: str | Path, checkpoint: Checkpoint) -> Path:
    """Atomically write ``checkpoint`` to ``path`` (temp file, fsync, ``os.replace``)."""
    return atomic_write(path, lambda fh: torch.save(asdict(checkpoint), fh))


def load_checkpoint(path: str | Path, *, map_location: str | torch.device = "cpu") -> Checkpoint:
    """Read a checkpoint written by :func:`save_checkpoint`.

    Checkpoints are this project's own files (the opaque ``extra`` state may
    hold arbitrary Python objects), so they are unpickled in full: load only
    trusted files.
    """
    data = torch.load(Path(path), map_location=map_location, weights_only=False)
    if data.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{path}: checkpoint format {data.get('format')!r}, expected {CHECKPOINT_FORMAT}")
    return Checkpoint(**data)


def load_model(
    path: str | Path, *, aux_heads: bool = True, table: ActionTable | None = None
) -> ChessNet:
    """The network stored in a checkpoint (eval mode, CPU).

    Refuses a checkpoint written under another core encoding version.  With
    ``aux_heads=False`` the training-only heads are dropped.
    """
    ckpt = load_checkpoint(path)
    if ckpt.encoding_version != _encoding_version():
        raise ValueError(
            f"{path}: written for encoding version {ckpt.encoding_version}, "
            f"core has {_encoding_version()}"
        )
    net = ChessNet(ckpt.model_size, table=table, aux_heads=aux_heads)
    state = ckpt.model
    if not aux_heads:
        state = {k: v for k, v in state.items() if not k.startswith(("next_policy_head.", "length_head."))}
    net.load_state_dict(state)
    return net.eval()


def grow_checkpoint(
    checkpoint: Checkpoint, size: str | ModelSize, *, seed: int = 0, table: ActionTable | None = None
) -> Checkpoint:
    """``checkpoint`` with its network grown to ``size`` (same outputs in eval mode).

    Kept: the optimizer step (the LR schedule continues where it was), the RNG
    states and the ``extra`` state (sampler position, credit ledger,
    generation), plus ``extra["grown_from"] = {"size", "step"}``.  The
    optimizer starts fresh: no momentum buffers (they belong to the old
    parameters' shapes), the same hyperparameters.  Refuses a smaller
    ``size`` or a checkpoint of another encoding version (``ValueError``).
    """
    if checkpoint.encoding_version != _encoding_version():
        raise ValueError(
            f"checkpoint written for encoding version {checkpoint.encoding_version}, "
            f"core has {_encoding_version()}"
        )
    target = check_growth(checkpoint.model_size, size)
    groups = checkpoint.optimizer.get("param_groups", [])
    if len(groups) != 1:
        raise ValueError(f"expected the trainer's single optimizer parameter group, found {len(groups)}")
    net = ChessNet(checkpoint.model_size, table=table)
    net.load_state_dict(checkpoint.model)
    grown = grow(net.eval(), target, seed=seed, table=table)
    hyper = {k: v for k, v in groups[0].items() if k != "params"}
    params = list(range(len(list(grown.parameters()))))
    return Checkpoint(
        step=checkpoint.step,
        model_size=target.name,
        model={k: v.detach().clone() for k, v in grown.state_dict().items()},
        optimizer={"state": {}, "param_groups": [{**hyper, "params": params}]},
        rng=checkpoint.rng,
        extra={**checkpoint.extra, "grown_from": {"size": checkpoint.model_size, "step": checkpoint.step}},
        encoding_version=checkpoint.encoding_version,
    )
