"""``RowBatch``: a typed, contiguous copy of sampled replay rows for training.

The store hands out rows as ``RowBatch`` objects (one array per field, each
C-contiguous so it converts to a tensor without another copy) plus helpers
that expand the sparse parts into dense ``[N, 1880]`` arrays and the packed
planes into network input through the native core. File reflection and any
other transformation belong to the trainer.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from chesszero.replay.layout import NUM_ACTIONS, ROW_DTYPE, unpack_legal


@dataclass(frozen=True)
class RowBatch:
    """N replay rows, field by field (see ``layout`` for the meaning of each).

    ``slots`` are the physical store slots the rows came from and ``seq`` their
    global append indices (useful for age statistics and de-duplication).
    """

    slots: np.ndarray             # int64 [N]
    seq: np.ndarray               # int64 [N]
    timestamp: np.ndarray         # float64 [N]
    planes: np.ndarray            # uint8 [N, 332]
    policy_ids: np.ndarray        # int16 [N, 60], -1 padded
    policy_probs: np.ndarray      # float32 [N, 60]
    policy_discarded: np.ndarray  # float32 [N]
    legal: np.ndarray             # uint8 [N, 235] bitsets
    wdl: np.ndarray               # float32 [N, 3]
    root_value: np.ndarray        # float32 [N]
    surprise: np.ndarray          # float32 [N]
    next_ids: np.ndarray          # int16 [N, 60]
    next_probs: np.ndarray        # float32 [N, 60]
    next_mask: np.ndarray         # bool [N]
    length: np.ndarray            # float32 [N]
    length_mask: np.ndarray       # bool [N]
    generation: np.ndarray        # int32 [N]
    ply: np.ndarray               # int16 [N]
    endings: np.ndarray           # uint8 [N], layout.ENDING_* bits

    @classmethod
    def from_rows(cls, rows: np.ndarray, slots: np.ndarray) -> RowBatch:
        """Split a ``ROW_DTYPE`` array into contiguous per-field arrays."""
        if rows.dtype != ROW_DTYPE:
            raise TypeError(f"expected ROW_DTYPE rows, got {rows.dtype}")
        values: dict[str, np.ndarray] = {"slots": np.ascontiguousarray(slots, dtype=np.int64)}
        for f in fields(cls):
            if f.name == "slots":
                continue
            col = np.ascontiguousarray(rows[f.name])
            if f.name.endswith("_mask"):
                col = col.astype(bool)
            values[f.name] = col
        return cls(**values)

    def __len__(self) -> int:
        return int(self.slots.shape[0])

    def legal_mask(self) -> np.ndarray:
        """Boolean legal-action mask ``[N, 1880]``."""
        return unpack_legal(self.legal)

    def dense_policy(self) -> np.ndarray:
        """Search policy as a dense float32 ``[N, 1880]`` distribution."""
        return densify(self.policy_ids, self.policy_probs)

    def dense_next_policy(self) -> np.ndarray:
        """Next searched policy, dense ``[N, 1880]``; all-zero rows where masked."""
        return densify(self.next_ids, self.next_probs)

    def input_planes(self, out: np.ndarray | None = None) -> np.ndarray:
        """Float32 network input ``[N, 52, 8, 8]`` expanded by the native core."""
        from chesszero import core  # the core owns the plane encoding (SPEC 2)

        return core.unpack_planes(self.planes, out)


def densify(ids: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Scatter sparse ``(ids, probs)`` rows (-1 padded) into ``[N, 1880]``."""
    ids = np.asarray(ids)
    n = ids.shape[0]
    dense = np.zeros((n, NUM_ACTIONS + 1), dtype=np.float32)  # column 1880 absorbs padding
    cols = np.where(ids >= 0, ids, NUM_ACTIONS).astype(np.int64)
    np.put_along_axis(dense, cols, np.asarray(probs, dtype=np.float32), axis=1)
    return dense[:, :NUM_ACTIONS].copy()
