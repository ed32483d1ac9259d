"""Run one training quantum against a live replay store (torchrun entry point).

::

    chesszero train --preset cpu --replay runs/r1/replay.bin \\
        --checkpoint runs/r1/train.pt [--stats-out runs/r1/quantum.json]
    torchrun --nnodes 2 ... -m chesszero train --preset paper ...

With ``train.world_size > 1`` (0: one rank per visible GPU) and no
torchrun environment, ``chesszero train`` starts the ranks itself on this machine (``torchrun --standalone
--nproc_per_node=<world_size>``); across machines, run torchrun yourself.

One call = one quantum: resume from ``--checkpoint`` when it exists, credit
the rows the store has durably admitted since the last quantum
(:class:`~chesszero.replay.CreditLedger`, reuse ratio from the recipe), run
``train.steps_per_quantum`` steps only if they are funded, then atomically
write the checkpoint with the sampler and ledger state in its ``extra`` dict
(so model, sampler and credit can never disagree after a crash).  Rank 0's
store header is broadcast so every rank draws the same global batches.
Exit status 3 means "not enough admitted rows yet"; nothing was trained.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch.distributed as dist

from chesszero.config import Config, load_config, parse_overrides
from chesszero.fsio import write_json_atomic
from chesszero.replay import CreditLedger, ReplayStore, SamplerOptions, StoreHeader, StoreSampler
from chesszero.train.checkpoint import load_checkpoint
from chesszero.train.distributed import (
    DistContext,
    init_distributed,
    resolve_world_size,
    shutdown_distributed,
)
from chesszero.train.sources import SampledBatches
from chesszero.train.stats import QuantumStats
from chesszero.train.trainer import Trainer

__all__ = [
    "EXIT_UNFUNDED",
    "QuantumJob",
    "command_argv",
    "quantum_funded",
    "run_quantum_job",
    "torchrun_command",
    "train_command",
]

EXIT_UNFUNDED = 3
"""Exit status when the credit ledger does not fund a quantum yet."""


@dataclass(frozen=True)
class QuantumJob:
    """Inputs of one quantum."""

    config: Config
    replay: Path
    checkpoint: Path
    stats_out: Path | None = None
    steps: int | None = None
    """Override of ``train.steps_per_quantum``."""
    extra: dict[str, Any] = field(default_factory=dict)
    catch_up: bool = False
    """A candidate's quantum: runs without funding, recorded as catch-up presentations."""


def _agree(ctx: DistContext) -> Callable[[StoreHeader], StoreHeader]:
    """Header agreement for DDP: every rank adopts rank 0's view of the store."""

    def agree(header: StoreHeader) -> StoreHeader:
        box: list[Any] = [header.to_dict() if ctx.is_main else None]
        dist.broadcast_object_list(box, src=0)
        return StoreHeader.from_dict(box[0])

    return agree


def _ledger(job: QuantumJob, extra: dict[str, Any]) -> CreditLedger:
    if "ledger" in extra:
        return CreditLedger.from_dict(extra["ledger"])
    return CreditLedger(reuse_ratio=job.config.replay.reuse_ratio)


def _steps(job: QuantumJob) -> int:
    return job.steps or job.config.train.steps_per_quantum


def quantum_funded(job: QuantumJob) -> bool:
    """Whether the rows the store has admitted fund ``job`` now (reads, changes nothing)."""
    extra = load_checkpoint(job.checkpoint).extra if job.checkpoint.exists() else {}
    ledger = _ledger(job, extra)
    with ReplayStore.open(job.replay, readonly=True) as store:
        ledger.admit_through(store.total_appended)
    return ledger.can_start(_steps(job), job.config.train.global_batch)


def run_quantum_job(
    job: QuantumJob,
    ctx: DistContext | None = None,
    *,
    on_step: Callable[[int], None] | None = None,
) -> QuantumStats | None:
    """Run one funded quantum; returns its statistics, or ``None`` when unfunded.

    ``on_step(k)`` is called after step ``k`` (1-based) of the quantum.
    """
    ctx = ctx or init_distributed()
    cfg = job.config
    steps = _steps(job)
    checkpoint = load_checkpoint(job.checkpoint, map_location=ctx.device) if job.checkpoint.exists() else None
    # The network's size is the checkpoint's (progressive sizing changes it mid-campaign).
    trainer = Trainer(cfg.train, cfg.model.shape if checkpoint is None else checkpoint.model_size, ctx=ctx)
    extra: dict[str, Any] = {}
    if checkpoint is not None:
        extra = trainer.restore(checkpoint)
    store = ReplayStore.open(job.replay, readonly=True)
    try:
        sampler = StoreSampler(
            store,
            SamplerOptions.from_config(cfg.replay),
            seed=cfg.train.seed,
            agree=_agree(ctx) if ctx.distributed else None,
        )
        source = SampledBatches(
            sampler,
            global_batch=cfg.train.global_batch,
            rank=ctx.rank,
            world_size=ctx.world_size,
            reflection=cfg.train.reflection,
            seed=cfg.train.seed,
        )
        if "source" in extra:
            source.load_state_dict(extra["source"])
        ledger = _ledger(job, extra)
        sampler.sync()
        assert sampler.sampler.header is not None
        ledger.admit_through(sampler.sampler.header.total_appended)
        if not job.catch_up and not ledger.can_start(steps, cfg.train.global_batch):
            return None
        stats = trainer.run_quantum(source, steps, on_step=on_step)
        if job.catch_up:
            ledger.spend_catch_up(steps, cfg.train.global_batch)
        else:
            ledger.spend(steps, cfg.train.global_batch)
    finally:
        store.close()
    extra.update(job.extra, source=source.state_dict(), ledger=ledger.to_dict())
    trainer.save(job.checkpoint, extra=extra)
    if ctx.is_main and job.stats_out is not None:
        write_json_atomic(job.stats_out, stats.as_dict(prefix=""), sort_keys=False)
    return stats


def command_argv(
    *,
    params: str | Path,
    preset: str,
    overrides: Sequence[str] = (),
    replay: Path,
    checkpoint: Path,
    stats_out: Path | None = None,
    steps: int | None = None,
    generation: int | None = None,
    extra: dict[str, int] | None = None,
    catch_up: bool = False,
) -> list[str]:
    """The ``chesszero train`` arguments of a :func:`train_command` call (for torchrun's ranks)."""
    argv = ["train", "--params", str(params), "--preset", preset]
    for item in overrides:
        argv += ["--set", item]
    argv += ["--replay", str(replay), "--checkpoint", str(checkpoint)]
    if stats_out is not None:
        argv += ["--stats-out", str(stats_out)]
    if steps is not None:
        argv += ["--steps", str(steps)]
    if generation is not None:
        argv += ["--generation", str(generation)]
    for key, value in (extra or {}).items():
        argv += ["--record", f"{key}={int(value)}"]
    if catch_up:
        argv.append("--catch-up")
    return argv


def torchrun_command(world_size: int, argv: Sequence[str]) -> list[str]:
    """A single-machine torchrun launch of ``world_size`` ranks of ``chesszero ARGV``."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone",
            f"--nproc_per_node={world_size}", "-m", "chesszero", *argv]


@contextlib.contextmanager
def _progress(show: bool, total: int) -> Iterator[Callable[[int], None] | None]:
    """A rich progress bar on stderr (rank 0 only), advanced by the trainer's ``on_step``."""
    if not show:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    with Progress("training quantum", BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("steps", total=total)
        yield lambda k: bar.update(task, completed=k)


def train_command(
    *,
    params: str | Path,
    preset: str,
    overrides: Sequence[str] = (),
    replay: Path,
    checkpoint: Path,
    stats_out: Path | None = None,
    steps: int | None = None,
    generation: int | None = None,
    extra: dict[str, int] | None = None,
    catch_up: bool = False,
) -> int:
    """``chesszero train``: one quantum; returns 0, or :data:`EXIT_UNFUNDED`.

    ``overrides`` are ``KEY=YAML`` strings; ``generation`` and ``extra``
    (campaign bookkeeping) are stored in the checkpoint's ``extra``;
    ``catch_up`` runs a candidate's unfunded quantum (counted apart).  Bad inputs raise ``ValueError``
    naming them.  With ``train.world_size > 1`` outside a torchrun job, the
    ranks are started with :func:`torchrun_command` and its status returned.
    Rank 0 prints the quantum's statistics as JSON on stdout.
    """
    if steps is not None and steps < 1:
        raise ValueError(f"--steps must be at least 1, got {steps}")
    if not Path(replay).is_file():
        raise ValueError(f"replay store not found: {str(replay)!r}")
    if Path(checkpoint).is_dir():
        raise ValueError(f"--checkpoint must be a file path, {str(checkpoint)!r} is a directory")
    cfg = load_config(params, preset=preset, overrides=parse_overrides(overrides))
    if generation is not None and generation < 0:
        raise ValueError(f"--generation must be >= 0, got {generation}")
    record = dict(extra or {})
    if generation is not None:
        record["generation"] = generation
    job = QuantumJob(cfg, Path(replay), Path(checkpoint), None if stats_out is None else Path(stats_out),
                     steps, record, catch_up)
    world = resolve_world_size(cfg.train).world_size
    if world > 1 and "WORLD_SIZE" not in os.environ:
        if not catch_up and not quantum_funded(job):
            print("not enough admitted replay rows for a quantum yet", file=sys.stderr)
            return EXIT_UNFUNDED
        argv = command_argv(params=params, preset=preset, overrides=overrides, replay=replay,
                            checkpoint=checkpoint, stats_out=stats_out, steps=steps,
                            generation=generation, extra=extra, catch_up=catch_up)
        return subprocess.run(torchrun_command(world, argv), check=False).returncode
    ctx = init_distributed()
    try:
        with _progress(ctx.is_main, _steps(job)) as on_step:
            stats = run_quantum_job(job, ctx, on_step=on_step)
    finally:
        shutdown_distributed()
    if stats is None:
        print("not enough admitted replay rows for a quantum yet", file=sys.stderr)
        return EXIT_UNFUNDED
    if ctx.is_main:
        print(json.dumps(stats.as_dict(prefix=""), indent=2))
    return 0
