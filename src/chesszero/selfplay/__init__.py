"""Self-play: the native actor driver, game records and the restart archive.

- ``records``: the game-record schema (pandera over polars) and shard I/O.
- ``actor``: ``SelfPlayActor(settings).play(evaluator, ...) -> ShardReport``.
- ``logs``: native game logs -> records, and resumable ``PendingGame`` values.
- ``archive``: the per-actor restart archive (SQLite).
- ``resign``: the resignation threshold calibrator.
"""

from chesszero.selfplay.actor import (
    ActorSettings,
    LateTail,
    SelfPlayActor,
    ShardReport,
    resign_probes,
)
from chesszero.selfplay.archive import ArchiveSettings, RestartArchive
from chesszero.selfplay.logs import PendingGame
from chesszero.selfplay.records import GameRecord, SearchedPly, read_shard, write_shard

__all__ = [
    "ActorSettings",
    "ArchiveSettings",
    "GameRecord",
    "LateTail",
    "PendingGame",
    "RestartArchive",
    "SearchedPly",
    "SelfPlayActor",
    "ShardReport",
    "read_shard",
    "resign_probes",
    "write_shard",
]
