"""Quarantine: a self-play shard that fails validation is kept aside, not lost.

Materialisation validates every shard (records schema, rules, targets). Before
2026-12-05 one bad shard stopped the whole campaign, and since the shard stayed
where it was a resume met it again. Now a bad shard is moved, with its sidecar,
to ``runs/<name>/rejected/gen_NNNN/`` next to a ``<shard>.reason.json`` that
names the failure; the campaign logs it (``replay/shards_rejected`` in MLflow,
the reason file as an artifact, a line in the generation's table) and goes on.

A systematic fault must still stop the run: once more than
``campaign.max_rejected_shard_fraction`` of a generation's shards have failed,
ingest raises ``TooManyRejectedShards`` and moves nothing further, so the
offending shard stays in place for a look and a resume after the fix.

The reason files are the record (one owner): counts are read from the folder,
so a kill between writing the reason and moving the shard costs nothing (the
resume finds the shard again, fails it again and moves it).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from chesszero.campaign.context import CampaignPaths
from chesszero.fsio import write_json_atomic

REASON_SUFFIX = ".reason.json"


class TooManyRejectedShards(RuntimeError):
    """More of a generation's shards failed validation than the recipe allows."""


@dataclass(frozen=True)
class RejectedShard:
    """One quarantined shard: where it was written, where it is kept, and why."""

    shard: str       # path relative to the campaign folder, as self-play wrote it
    kept_at: str     # path relative to the campaign folder, under rejected/
    generation: int
    reason: str
    at: float        # unix time of the quarantine


def rejected_dir(paths: CampaignPaths, generation: int) -> Path:
    return paths.dir / "rejected" / f"gen_{generation:04d}"


def rejected_shards(paths: CampaignPaths, generation: int | None = None) -> list[RejectedShard]:
    """The quarantined shards of one generation (None: of every generation)."""
    root = paths.dir / "rejected"
    pattern = f"gen_{generation:04d}/*{REASON_SUFFIX}" if generation is not None else f"gen_*/*{REASON_SUFFIX}"
    return [RejectedShard(**json.loads(p.read_text())) for p in sorted(root.glob(pattern))]


def quarantine(paths: CampaignPaths, generation: int, shard: Path, reason: str, *,
               generation_shards: int, max_fraction: float) -> RejectedShard:
    """Moves `shard` (and its sidecar) under rejected/ with a reason file, or
    raises ``TooManyRejectedShards`` (moving nothing) when this failure would
    take the generation's rejected share above `max_fraction` of its
    `generation_shards` shards (rejected ones included)."""
    earlier = [r for r in rejected_shards(paths, generation) if Path(r.kept_at).name != shard.name]
    if len(earlier) + 1 > max_fraction * generation_shards:
        detail = "; ".join([f"{r.shard}: {r.reason}" for r in earlier] + [f"{shard}: {reason}"])
        raise TooManyRejectedShards(
            f"{len(earlier) + 1} of generation {generation}'s {generation_shards} game-record shards failed "
            f"validation, above campaign.max_rejected_shard_fraction = {max_fraction}; {shard} stays where it "
            f"is (earlier ones are under {rejected_dir(paths, generation)}). Fix the cause, or raise the "
            f"limit, and resume. {detail}")
    folder = rejected_dir(paths, generation)
    folder.mkdir(parents=True, exist_ok=True)
    kept = folder / shard.name
    record = RejectedShard(shard=str(shard.relative_to(paths.dir)), kept_at=str(kept.relative_to(paths.dir)),
                           generation=generation, reason=reason, at=time.time())
    write_json_atomic(folder / f"{shard.name}{REASON_SUFFIX}", asdict(record))
    os.replace(shard, kept)
    sidecar = shard.with_name(f"{shard.name}.json")
    if sidecar.exists():
        os.replace(sidecar, folder / sidecar.name)
    return record


__all__ = ["REASON_SUFFIX", "RejectedShard", "TooManyRejectedShards", "quarantine", "rejected_dir",
           "rejected_shards"]
