"""Process-group setup for data-parallel training (DDP via ``torch.distributed``).

- :class:`DistContext`: rank, world size, device and backend of this process.
- :func:`init_distributed`: reads the ``torchrun`` environment (``RANK``,
  ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``/``MASTER_PORT``) and joins
  the process group: NCCL on GPU, gloo on CPU.  Without that environment (or
  with ``WORLD_SIZE=1``) it returns a single-process context and creates no
  group.
- :func:`resolve_world_size`: the recipe's ``train.world_size`` on this
  machine (0 means one rank per visible CUDA GPU, 1 without a GPU).
- :func:`spawn_local`: starts ``world_size`` local CPU ranks with
  ``torch.multiprocessing`` (tests and benchmarks; production uses torchrun).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from chesszero.config.schema import TrainConfig

__all__ = [
    "DistContext",
    "free_port",
    "init_distributed",
    "resolve_world_size",
    "shutdown_distributed",
    "spawn_local",
]


@dataclass(frozen=True)
class DistContext:
    """Where this process sits in the data-parallel job."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")
    backend: str | None = None
    """``"gloo"``/``"nccl"`` when a process group exists, else ``None``."""

    @property
    def distributed(self) -> bool:
        """Whether gradients are all-reduced across ranks."""
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        """Rank 0 writes checkpoints and reports."""
        return self.rank == 0


def init_distributed(*, backend: str = "auto", device: str | None = None) -> DistContext:
    """Join the torchrun process group if there is one; see the module docstring.

    ``backend="auto"`` picks NCCL when CUDA is available, else gloo; ``device``
    overrides the default (``cuda:LOCAL_RANK`` or ``cpu``).
    """
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    use_cuda = torch.cuda.is_available() and (device is None or device.startswith("cuda"))
    if device is None:
        device = f"cuda:{local_rank}" if use_cuda else "cpu"
    dev = torch.device(device)
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    if world_size == 1:
        return DistContext(device=dev)
    chosen = ("nccl" if dev.type == "cuda" else "gloo") if backend == "auto" else backend
    if not dist.is_initialized():
        dist.init_process_group(backend=chosen, rank=rank, world_size=world_size)
    return DistContext(rank, world_size, local_rank, dev, chosen)


def resolve_world_size(cfg: TrainConfig, *, gpus: int | None = None) -> TrainConfig:
    """``cfg`` with ``world_size`` 0 replaced by the GPU count (``gpus``, default
    the visible CUDA devices; 1 without any); an explicit world size is kept.
    Raises ``ValueError`` (naming the keys) when the global batch does not
    split over the resolved ranks."""
    if cfg.world_size:
        return cfg
    if gpus is None:
        gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    ranks = max(1, gpus)
    if cfg.global_batch % (ranks * cfg.micro_batches):
        raise ValueError(f"train.global_batch {cfg.global_batch} does not split over {ranks} ranks "
                         f"(train.world_size 0: one per GPU) x train.micro_batches {cfg.micro_batches}")
    return cfg.model_copy(update={"world_size": ranks})


def shutdown_distributed() -> None:
    """Leave the process group if one was joined."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def free_port() -> int:
    """An unused local TCP port for ``MASTER_PORT``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rank_main(rank: int, fn: Callable[..., Any], world_size: int, port: int, args: tuple[Any, ...]) -> None:
    os.environ.update(
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(world_size),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
    )
    torch.set_num_threads(1)
    try:
        fn(*args)
    finally:
        shutdown_distributed()


def spawn_local(fn: Callable[..., Any], world_size: int, *args: Any) -> None:
    """Run ``fn(*args)`` in ``world_size`` CPU rank processes with the torchrun environment set.

    ``fn`` must be importable (module level); each rank should call
    :func:`init_distributed`.  Raises if any rank fails.
    """
    mp.spawn(_rank_main, args=(fn, world_size, free_port(), args), nprocs=world_size, join=True)
