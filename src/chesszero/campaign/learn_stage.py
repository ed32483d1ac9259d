"""Materialise, train and recalibrate resignation: the learning phases.

Ingest is exactly-once: before a shard's rows are appended the state records
``{shard, store total before}``; a single store append is all-or-nothing, so
after a crash the store's total tells whether that shard landed. Training is
exactly-once per generation: the checkpoint written atomically at the end of
a quantum carries the generation it trained for (and the credit ledger and
sampler state), so a rerun never trains a generation twice. A shard that
fails validation is kept aside under ``rejected/`` and the campaign goes on,
up to ``campaign.max_rejected_shard_fraction`` of a generation's shards
(``chesszero.campaign.quarantine``).
"""

from __future__ import annotations

import json
import logging
import subprocess
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from functools import partial
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from chesszero.campaign import phaselog
from chesszero.campaign.context import Campaign
from chesszero.campaign.quarantine import quarantine, rejected_shards
from chesszero.campaign.selfplay_stage import shard_files
from chesszero.campaign.state import CampaignState

log = logging.getLogger(__name__)


def open_store(campaign: Campaign, generation: int) -> Any:
    """Opens (or creates) the replay ring and applies the capacity schedule."""
    from chesszero.replay import ReplayStore

    rc = campaign.cfg.replay
    logical = min(rc.logical_capacity.at(generation), rc.capacity)
    if campaign.paths.replay.exists():
        store = ReplayStore.open(campaign.paths.replay)
        if logical > store.logical_capacity:
            store.set_logical_capacity(logical)
        return store
    return ReplayStore.create(campaign.paths.replay, capacity=rc.capacity, logical_capacity=logical)


def ingest(campaign: Campaign, state: CampaignState, generation: int) -> dict[str, Any]:
    """Appends every not-yet-admitted shard of the generation to the store; a
    shard that fails validation is quarantined (``campaign.quarantine``) and
    listed under "rejected" with the generation's earlier ones. "surprise_at_cap"
    is the share of the rows added now whose policy surprise reaches
    ``replay.surprise_cap`` (NaN when none were added): near 1, the surprise
    sampler draws almost uniformly. "with_mate" and "with_stalemate" are the
    shares of those rows whose position has a checkmating / stalemating move
    (the rows ``train.loss_weights.mate_rows`` / ``stalemate_rows`` weigh)."""
    from chesszero.replay import convert_shard
    from chesszero.replay.layout import ENDING_MATE, ENDING_STALEMATE
    from chesszero.replay.materialize import target_options_from_config

    options = target_options_from_config(campaign.cfg.replay, generation)
    store = open_store(campaign, generation)
    added = at_cap = with_mate = with_stalemate = 0
    cap = campaign.cfg.replay.surprise_cap
    try:
        pending = state.pending_shard
        if pending is not None:  # a crash hit between recording and marking a shard
            landed = store.total_appended - pending["store_total_before"]
            if landed:
                expected = len(convert_shard(campaign.paths.dir / pending["shard"], options, generation=generation))
                if landed != expected:
                    raise RuntimeError(f"replay store {campaign.paths.replay} advanced by {landed} rows while "
                                       f"shard {pending['shard']} holds {expected}: the store was changed outside "
                                       "this campaign")
                state.admitted_shards.append(pending["shard"])
                state.counters.rows_materialized += landed
                state.counters.rows_admitted += landed
            state.pending_shard = None
            campaign.save_state(state)
        listed = shard_files(campaign.paths, generation)
        todo = [s for s in listed if str(s.relative_to(campaign.paths.dir)) not in state.admitted_shards]
        generation_shards = len(listed) + len(rejected_shards(campaign.paths, generation))
        with _converted(todo, options, generation, campaign.cfg.campaign.materialize_workers) as converted:
            for shard, (rows, reason) in zip(todo, converted, strict=True):
                key = str(shard.relative_to(campaign.paths.dir))
                if rows is None:  # kept under rejected/ with its reason, or too many: stop
                    kept = quarantine(campaign.paths, generation, shard, reason,
                                      generation_shards=generation_shards,
                                      max_fraction=campaign.cfg.campaign.max_rejected_shard_fraction)
                    log.warning("quarantined game-record shard %s (%s), kept at %s", key, reason, kept.kept_at)
                    continue
                state.pending_shard = {"shard": key, "store_total_before": store.total_appended}
                campaign.save_state(state)
                if len(rows):
                    store.append(rows)
                state.admitted_shards.append(key)
                state.counters.rows_materialized += len(rows)
                state.counters.rows_admitted += store.total_appended - state.pending_shard["store_total_before"]
                state.pending_shard = None
                campaign.save_state(state)
                added += len(rows)
                at_cap += int((rows["surprise"] >= cap).sum())
                with_mate += int(((rows["endings"] & ENDING_MATE) != 0).sum())
                with_stalemate += int(((rows["endings"] & ENDING_STALEMATE) != 0).sum())
        return {"rows_added": added, "size": store.size, "occupancy": store.size / store.logical_capacity,
                "surprise_at_cap": at_cap / added if added else float("nan"),
                "with_mate": with_mate / added if added else float("nan"),
                "with_stalemate": with_stalemate / added if added else float("nan"),
                "total_appended": store.total_appended,
                "rejected": rejected_shards(campaign.paths, generation)}
    finally:
        store.close()


def _rows_or_reason(shard: Path, options: Any, generation: int) -> tuple[Any, str]:
    """(rows, "") for a valid shard, (None, why) for one ``ShardError`` rejects."""
    from chesszero.replay import ShardError, convert_shard

    try:
        return convert_shard(shard, options, generation=generation), ""
    except ShardError as exc:
        return None, exc.rejected[0][1]


@contextmanager
def _converted(shards: list[Path], options: Any, generation: int,
               workers: int) -> Iterator[Iterable[tuple[Any, str]]]:
    """(rows, "") or (None, reason) for each shard, in order. Conversion
    (validation, replay, targets) runs in worker processes when `workers` > 1;
    appends stay in order."""
    if workers <= 1 or len(shards) <= 1:
        yield (_rows_or_reason(s, options, generation) for s in shards)
        return
    # spawn, not fork: the campaign process runs threads (ONNX Runtime, torch,
    # Prefect) and a forked child can inherit a held lock and hang.
    with ProcessPoolExecutor(max_workers=min(workers, len(shards)), mp_context=get_context("spawn")) as pool:
        yield pool.map(partial(_rows_or_reason, options=options, generation=generation), shards)


class UnfundedQuantum(RuntimeError):
    """The replay store does not yet fund the generation's quantum."""


def checkpoint_extra(path: Path) -> dict[str, Any]:
    from chesszero.train import load_checkpoint

    if not path.exists():
        return {}
    return dict(load_checkpoint(path, map_location="cpu").extra)


def available_presentations(campaign: Campaign) -> float:
    """Unspent training credit according to the checkpoint's ledger."""
    from chesszero.replay import CreditLedger

    extra = checkpoint_extra(campaign.paths.checkpoint)
    ledger = (CreditLedger.from_dict(extra["ledger"]) if "ledger" in extra
              else CreditLedger(reuse_ratio=campaign.cfg.replay.reuse_ratio))
    if campaign.paths.replay.exists():
        from chesszero.replay import ReplayStore

        with ReplayStore.open(campaign.paths.replay, readonly=True) as store:
            ledger.admit_through(store.total_appended)
    return ledger.available_presentations


def run_quantum(campaign: Campaign, checkpoint: Path, stats_out: Path, extra: dict[str, Any], *,
                catch_up: bool = False) -> dict[str, Any] | None:
    """One quantum of the network in `checkpoint` on the campaign's replay
    (in this process, or under torchrun when the world size is above 1;
    `train.world_size` 0: one rank per visible GPU); its statistics, or None
    when the ledger does not fund it (never for a `catch_up` quantum, which
    runs unfunded and is counted apart)."""
    from chesszero.train.distributed import resolve_world_size
    from chesszero.train.run import (
        EXIT_UNFUNDED,
        QuantumJob,
        command_argv,
        run_quantum_job,
        torchrun_command,
    )

    cfg = campaign.cfg
    world = resolve_world_size(cfg.train).world_size
    if world == 1:
        stats = run_quantum_job(QuantumJob(cfg, campaign.paths.replay, checkpoint, stats_out, extra=extra,
                                           catch_up=catch_up))
        return None if stats is None else stats.as_dict(prefix="")
    cmd = torchrun_command(world, command_argv(
        params=campaign.root / "params.yaml", preset=campaign.preset, replay=campaign.paths.replay,
        checkpoint=checkpoint, stats_out=stats_out, extra=extra, catch_up=catch_up))
    proc = subprocess.run(cmd, cwd=campaign.root)
    if proc.returncode == EXIT_UNFUNDED:
        return None
    if proc.returncode != 0:
        raise RuntimeError(f"torchrun training failed with exit code {proc.returncode}")
    return json.loads(stats_out.read_text())


def train(campaign: Campaign, generation: int) -> dict[str, Any] | None:
    """Runs this generation's quantum unless the checkpoint already has it.

    Returns the quantum statistics (None when the quantum was already done
    before a restart); raises UnfundedQuantum when the ledger does not fund it.
    """
    paths = campaign.paths
    stats_out = paths.dir / f"quantum_gen{generation:04d}.json"
    if checkpoint_extra(paths.checkpoint).get("generation", -1) >= generation:
        return json.loads(stats_out.read_text()) if stats_out.exists() else None
    stats = run_quantum(campaign, paths.checkpoint, stats_out, {"generation": generation})
    if stats is None:
        raise UnfundedQuantum(f"generation {generation}: the replay store does not fund a quantum")
    return stats


def initial_checkpoint(campaign: Campaign) -> None:
    """Writes the step-0 checkpoint (seeded initial network) once."""
    from chesszero.train import Trainer, init_distributed

    if campaign.paths.checkpoint.exists():
        return
    import torch

    torch.manual_seed(campaign.cfg.train.seed)
    # One process writes step 0 whatever the ranks (nothing is stepped yet; every
    # rank count starts from the same seeded network and an empty optimizer).
    single = campaign.cfg.train.model_copy(update={"world_size": 1, "micro_batches": 1})
    trainer = Trainer(single, campaign.cfg.model.shape, ctx=init_distributed())
    campaign.paths.dir.mkdir(parents=True, exist_ok=True)
    trainer.save(campaign.paths.checkpoint, extra={"generation": -1})


def load_resign(campaign: Campaign) -> tuple[Any, set[str], int]:
    """(calibrator, shards already recorded, generation last published for)."""
    from chesszero.selfplay.resign import ResignCalibrator

    rc = campaign.cfg.selfplay.resign
    path = campaign.paths.resign
    if path.exists():
        data = json.loads(path.read_text())
        return (ResignCalibrator.from_dict(data["calibrator"]), set(data["seen"]),
                int(data["published_for"]))
    return (ResignCalibrator(window=rc.window_games, min_triggers=rc.min_triggers,
                             max_false_rate=rc.max_false_rate, confidence=rc.confidence), set(), -1)


def recalibrate_resignation(campaign: Campaign, generation: int) -> dict[str, float | None]:
    """Feeds the generation's continuation games to the calibrator and
    publishes a threshold (tighten at once, relax by at most 0.01), once per
    generation: calibrator, recorded shards and the publication mark are
    one atomically written file."""
    import polars as pl

    from chesszero.campaign.state import write_json_atomic
    from chesszero.selfplay.actor import resign_probes
    from chesszero.selfplay.records import frame_to_records, read_shard

    calibrator, seen, published_for = load_resign(campaign)
    if published_for < generation:
        for shard in shard_files(campaign.paths, generation):
            if shard.name in seen:
                continue
            # Only finished continuation games calibrate. Validating and building
            # records costs ~0.2 s a shard (a generation has ~15), so two columns
            # say first whether the shard holds any (materialisation validated it).
            evidence = pl.col("is_continuation") & (pl.col("termination") != "ply_cap")
            if pl.read_parquet(shard, columns=["is_continuation", "termination"]).filter(evidence).height:
                for record in frame_to_records(read_shard(shard).filter(evidence)):
                    calibrator.record_game(resign_probes(record), {"1-0": True, "0-1": False}.get(record.result))
            seen.add(shard.name)
        if campaign.cfg.selfplay.resign.enabled:
            calibrator.publish()
        write_json_atomic(campaign.paths.resign, {"calibrator": calibrator.to_dict(), "seen": sorted(seen),
                                                  "published_for": generation})
    threshold = calibrator.threshold if campaign.cfg.selfplay.resign.enabled else None
    bound = None
    if threshold is not None:
        bound = next((s.upper_bound for s in calibrator.stats() if s.threshold == threshold), None)
    return {"threshold": threshold, "false_rate_upper": bound}


def snapshot_replay(campaign: Campaign, generation: int) -> int:
    """Writes a replay snapshot under data/replay/snapshots/<campaign>/ and,
    when the project root is a DVC repository, tracks and pushes it."""
    with phaselog.span(campaign.paths.phase_log, generation, "snapshot"):
        return _snapshot(campaign, generation)


def _snapshot(campaign: Campaign, generation: int) -> int:
    from chesszero.replay import ReplayStore
    from chesszero.replay.snapshot import dvc_push, dvc_track, write_snapshot

    out = campaign.root / "data" / "replay" / "snapshots" / campaign.name / f"gen_{generation:04d}"
    if not out.exists():
        with ReplayStore.open(campaign.paths.replay, readonly=True) as store:
            info = write_snapshot(store, out)
        rows = int(info.rows)
    else:
        rows = int(json.loads((out / "meta.json").read_text()).get("rows", 0))
    if (campaign.root / ".dvc").is_dir():
        dvc_file = out.with_name(out.name + ".dvc")
        if not dvc_file.exists():
            dvc_track(out, campaign.root)
        else:  # a rerun: the push after `dvc add` may have been cut (pushing again uploads only what is missing)
            dvc_push(dvc_file, campaign.root)
    return rows
