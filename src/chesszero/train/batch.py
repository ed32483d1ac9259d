"""The trainer's input: :class:`TrainBatch`, made from replay rows by one function.

This is where replay and training meet.  :func:`to_train_batch` takes the
replay store's :class:`~chesszero.replay.rows.RowBatch` (packed planes, sparse
policy ids/probabilities, legal bitsets, targets and label masks) and returns
torch tensors, applying file reflection (SPEC 3, SPEC 8) to the rows flagged
for it.  Plane expansion and mirroring are the native core's job
(``core.unpack_planes``, ``core.mirror_planes``, ``core.mirror_action_table``);
:func:`reflection_flags` decides which rows may be reflected.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields

import numpy as np
import torch

from chesszero.config.schema import Reflection
from chesszero.replay.rows import RowBatch

__all__ = ["CASTLING_PLANES", "TrainBatch", "reflection_flags", "to_train_batch"]

CASTLING_PLANES = slice(12, 16)
"""Own/opponent king- and queen-side castling planes (SPEC 2, planes 12-15)."""


@dataclass(frozen=True)
class TrainBatch:
    """One (micro-)batch of training rows as tensors on the training device.

    Sparse policy entries are padded with id 0 and probability 0, so padding
    contributes nothing to any loss.
    """

    planes: torch.Tensor  # float32 [N, 52, 8, 8]
    legal: torch.Tensor  # bool [N, 1880]
    policy_ids: torch.Tensor  # int64 [N, K]
    policy_probs: torch.Tensor  # float32 [N, K], rows sum to 1
    wdl: torch.Tensor  # float32 [N, 3], blurred and blended outcome target
    next_ids: torch.Tensor  # int64 [N, K]
    next_probs: torch.Tensor  # float32 [N, K], all zero where next_mask is False
    next_mask: torch.Tensor  # bool [N]
    length: torch.Tensor  # float32 [N], plies_remaining / 400
    length_mask: torch.Tensor  # bool [N]
    reflected: torch.Tensor  # bool [N], rows that were file-reflected
    endings: torch.Tensor  # uint8 [N], the rows' game-ending-move bits (replay.layout.ENDING_*)

    def __len__(self) -> int:
        return int(self.planes.shape[0])

    def to(self, device: torch.device | str) -> TrainBatch:
        """Copy every tensor to ``device`` (non-blocking where possible)."""
        return TrainBatch(
            **{f.name: getattr(self, f.name).to(device, non_blocking=True) for f in fields(self)}
        )

    def split(self, parts: int) -> list[TrainBatch]:
        """Split into ``parts`` equal consecutive micro-batches."""
        n = len(self)
        if parts < 1 or n % parts != 0:
            raise ValueError(f"cannot split a batch of {n} rows into {parts} equal parts")
        size = n // parts
        return [
            TrainBatch(**{f.name: getattr(self, f.name)[i * size : (i + 1) * size] for f in fields(self)})
            for i in range(parts)
        ]


@functools.cache
def _mirror_table() -> np.ndarray:
    from chesszero import core

    return np.asarray(core.mirror_action_table(), dtype=np.int64)


def reflection_flags(planes: np.ndarray, coins: np.ndarray, mode: Reflection) -> np.ndarray:
    """Rows to reflect: ``coins`` (bool [N]) restricted by ``mode``.

    ``planes`` are the expanded float planes ``[N, 52, 8, 8]``.  In
    ``no_castling`` mode a row is eligible only when neither side holds any
    castling right; ``all`` allows every row; ``off`` none.
    """
    coins = np.asarray(coins, dtype=bool)
    if mode is Reflection.OFF:
        return np.zeros_like(coins)
    if mode is Reflection.ALL:
        return coins.copy()
    no_castling = ~planes[:, CASTLING_PLANES].reshape(len(planes), -1).any(axis=1)
    return coins & no_castling


def _sparse(ids: np.ndarray, probs: np.ndarray, mirror: np.ndarray | None) -> tuple[torch.Tensor, torch.Tensor]:
    ids64 = ids.astype(np.int64)
    present = ids64 >= 0
    ids64 = np.where(present, ids64, 0)
    if mirror is not None:
        ids64 = np.where(mirror[:, None] & present, _mirror_table()[ids64], ids64)
    p = np.where(present, probs, 0.0).astype(np.float32)
    return torch.from_numpy(ids64), torch.from_numpy(p)


def to_train_batch(
    rows: RowBatch, *, mode: Reflection = Reflection.OFF, coins: np.ndarray | None = None
) -> TrainBatch:
    """Convert replay rows to a CPU :class:`TrainBatch`.

    Rows whose coin (bool [N], e.g. a fair coin per row) is set are
    file-reflected when ``mode`` allows it (see :func:`reflection_flags`).
    """
    from chesszero import core

    n = len(rows)
    coins = np.zeros(n, dtype=bool) if coins is None else np.asarray(coins, dtype=bool)
    if coins.shape != (n,):
        raise ValueError(f"reflection coins must have shape ({n},), got {coins.shape}")
    planes = rows.input_planes()
    legal = rows.legal_mask()
    flags = reflection_flags(planes, coins, mode)
    if flags.any():
        # Mirroring the 332-byte packed rows and expanding again is far cheaper
        # than mirroring expanded float planes.
        packed = rows.planes.copy()
        packed[flags] = core.mirror_packed(np.ascontiguousarray(packed[flags]))
        core.unpack_planes(packed, planes)
        mirrored = np.empty_like(legal[flags])
        mirrored[:, _mirror_table()] = legal[flags]
        legal[flags] = mirrored
    policy_ids, policy_probs = _sparse(rows.policy_ids, rows.policy_probs, flags)
    next_ids, next_probs = _sparse(rows.next_ids, rows.next_probs, flags)
    next_mask = np.asarray(rows.next_mask, dtype=bool)
    length_mask = np.asarray(rows.length_mask, dtype=bool)
    return TrainBatch(
        planes=torch.from_numpy(np.ascontiguousarray(planes, dtype=np.float32)),
        legal=torch.from_numpy(legal),
        policy_ids=policy_ids,
        policy_probs=policy_probs,
        wdl=torch.from_numpy(np.asarray(rows.wdl, dtype=np.float32).copy()),
        next_ids=next_ids,
        next_probs=next_probs * torch.from_numpy(next_mask)[:, None],
        next_mask=torch.from_numpy(next_mask.copy()),
        length=torch.from_numpy(np.where(length_mask, rows.length, 0.0).astype(np.float32)),
        length_mask=torch.from_numpy(length_mask.copy()),
        reflected=torch.from_numpy(flags.copy()),
        endings=torch.from_numpy(np.asarray(rows.endings, dtype=np.uint8).copy()),
    )
