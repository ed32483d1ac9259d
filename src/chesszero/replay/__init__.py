"""Replay: game records -> training rows -> sampled batches (SPEC 5, 7).

Modules:

- ``layout``: the fixed row dtype (``ROW_DTYPE``) and row helpers.
- ``header``: the versioned file header and ring arithmetic.
- ``store``: ``ReplayStore``, the preallocated memory-mapped ring with durable appends.
- ``rows``: ``RowBatch``, typed rows handed to the trainer.
- ``sampler``: ``SurpriseSampler`` (70% capped surprise, 30% uniform) and ``rank_share``.
- ``source``: ``StoreSampler``, the trainer's ``GlobalSampler`` over a live store.
- ``credit``: ``CreditLedger``, reuse-ratio gating of training quanta.
- ``targets``: pure target computations (outcome blur, root-value blend, WDL of values...).
- ``convert``: one game record / shard -> rows (``convert_shard``, ``TargetOptions``,
  ``ShardError``).
- ``materialize``: ``Materializer``, shards -> durable rows in worker processes.
- ``snapshot``: versioned snapshot folders of a store (``write_snapshot``,
  ``read_snapshot``, ``restore_store``) and ``dvc_track``.
"""

from chesszero.replay.convert import ShardError, TargetOptions, convert_shard
from chesszero.replay.credit import CreditLedger, InsufficientCreditError
from chesszero.replay.header import ReplayFormatError, StoreHeader
from chesszero.replay.layout import (
    LAYOUT_VERSION,
    MAX_POLICY,
    ROW_DTYPE,
    empty_rows,
    pack_legal,
    unpack_legal,
    validate_rows,
)
from chesszero.replay.materialize import Materializer, MaterializeReport, materialize
from chesszero.replay.rows import RowBatch, densify
from chesszero.replay.sampler import (
    NotEnoughRowsError,
    SamplerOptions,
    SurpriseSampler,
    rank_share,
)
from chesszero.replay.snapshot import (
    DvcError,
    SnapshotError,
    SnapshotInfo,
    dvc_track,
    read_snapshot,
    restore_store,
    write_snapshot,
)
from chesszero.replay.source import StoreSampler
from chesszero.replay.store import ReplayLockedError, ReplayStore, StaleRowsError

__all__ = [
    "LAYOUT_VERSION",
    "MAX_POLICY",
    "ROW_DTYPE",
    "CreditLedger",
    "DvcError",
    "InsufficientCreditError",
    "MaterializeReport",
    "Materializer",
    "NotEnoughRowsError",
    "ReplayFormatError",
    "ReplayLockedError",
    "ReplayStore",
    "RowBatch",
    "SamplerOptions",
    "ShardError",
    "SnapshotError",
    "SnapshotInfo",
    "StaleRowsError",
    "StoreHeader",
    "StoreSampler",
    "SurpriseSampler",
    "TargetOptions",
    "convert_shard",
    "densify",
    "dvc_track",
    "empty_rows",
    "materialize",
    "pack_legal",
    "rank_share",
    "read_snapshot",
    "restore_store",
    "unpack_legal",
    "validate_rows",
    "write_snapshot",
]
