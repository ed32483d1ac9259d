"""Run one training quantum against a live replay store (torchrun entry point).

::

    python -m chesszero.train.run --preset cpu --replay runs/r1/replay.bin \\
        --checkpoint runs/r1/train.pt [--stats-out runs/r1/quantum.json]
    torchrun --nproc_per_node=8 -m chesszero.train.run --preset paper ...

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

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch.distributed as dist

from chesszero.config import Config, load_config
from chesszero.replay import CreditLedger, ReplayStore, SamplerOptions, StoreHeader, StoreSampler
from chesszero.train.checkpoint import load_checkpoint
from chesszero.train.distributed import DistContext, init_distributed, shutdown_distributed
from chesszero.train.sources import SampledBatches
from chesszero.train.stats import QuantumStats
from chesszero.train.trainer import Trainer

__all__ = ["EXIT_UNFUNDED", "QuantumJob", "main", "run_quantum_job"]

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


def _agree(ctx: DistContext) -> Callable[[StoreHeader], StoreHeader]:
    """Header agreement for DDP: every rank adopts rank 0's view of the store."""

    def agree(header: StoreHeader) -> StoreHeader:
        box: list[Any] = [header.to_dict() if ctx.is_main else None]
        dist.broadcast_object_list(box, src=0)
        return StoreHeader.from_dict(box[0])

    return agree


def run_quantum_job(job: QuantumJob, ctx: DistContext | None = None) -> QuantumStats | None:
    """Run one funded quantum; returns its statistics, or ``None`` when unfunded."""
    ctx = ctx or init_distributed()
    cfg = job.config
    steps = job.steps or cfg.train.steps_per_quantum
    trainer = Trainer(cfg.train, cfg.model.size, ctx=ctx)
    extra: dict[str, Any] = {}
    if job.checkpoint.exists():
        extra = trainer.restore(load_checkpoint(job.checkpoint, map_location=ctx.device))
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
        ledger = (
            CreditLedger.from_dict(extra["ledger"])
            if "ledger" in extra
            else CreditLedger(reuse_ratio=cfg.replay.reuse_ratio)
        )
        sampler.sync()
        assert sampler.sampler.header is not None
        ledger.admit_through(sampler.sampler.header.total_appended)
        if not ledger.can_start(steps, cfg.train.global_batch):
            return None
        stats = trainer.run_quantum(source, steps)
        ledger.spend(steps, cfg.train.global_batch)
    finally:
        store.close()
    extra.update(job.extra, source=source.state_dict(), ledger=ledger.to_dict())
    trainer.save(job.checkpoint, extra=extra)
    if ctx.is_main and job.stats_out is not None:
        tmp = job.stats_out.with_name(f".{job.stats_out.name}.tmp-{os.getpid()}")
        tmp.write_text(json.dumps(stats.as_dict(prefix=""), indent=2))
        os.replace(tmp, job.stats_out)
    return stats


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="chesszero.train.run", description=__doc__.splitlines()[0])
    p.add_argument("--params", default="params.yaml", help="recipe file")
    p.add_argument("--preset", default="cpu")
    p.add_argument("--set", action="append", default=[], metavar="KEY=YAML",
                   help="override, e.g. --set train.global_batch=64 (repeatable)")
    p.add_argument("--replay", type=Path, required=True, help="replay store file")
    p.add_argument("--checkpoint", type=Path, required=True, help="checkpoint to resume and write")
    p.add_argument("--stats-out", type=Path, default=None, help="write QuantumStats as JSON")
    p.add_argument("--steps", type=int, default=None, help="override steps_per_quantum")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    import yaml

    args = _parser().parse_args(argv)
    overrides: dict[str, Any] = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--set expects KEY=VALUE, got {item!r}")
        overrides[key] = yaml.safe_load(value)
    cfg = load_config(args.params, preset=args.preset, overrides=overrides)
    ctx = init_distributed()
    try:
        stats = run_quantum_job(
            QuantumJob(cfg, args.replay, args.checkpoint, args.stats_out, args.steps), ctx
        )
    finally:
        shutdown_distributed()
    if stats is None:
        print("not enough admitted replay rows for a quantum yet", file=sys.stderr)
        return EXIT_UNFUNDED
    if ctx.is_main:
        print(json.dumps(stats.as_dict(prefix=""), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
