"""Self-play: game records (``records``), the native actor driver and restart archive."""

from chesszero.selfplay.records import GameRecord, SearchedPly, read_shard, write_shard

__all__ = ["GameRecord", "SearchedPly", "read_shard", "write_shard"]
