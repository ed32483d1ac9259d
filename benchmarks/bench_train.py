"""Training throughput: single process vs 2-rank DDP (gloo on CPU, NCCL on GPU).

Prints one table of training samples/s (rows presented per second, batch
preparation included) for the same model and global batch, ratios measured
in this run on this machine:

- ``single``: one process using the threads given by ``--threads`` (the
  reference, ratio 1.0), and the same process with one thread;
- ``ddp x2``: two local ranks (one thread each on CPU), each training half of
  the global batch, gradients all-reduced (on CUDA only with two devices).

Usage::

    python benchmarks/bench_train.py --size 6x64 --global-batch 128 --steps 20 \\
        [--json reports/bench/train.json] [--quick]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import torch
from common import Row, report

from chesszero import core
from chesszero.config import Reflection, load_config
from chesszero.replay.layout import empty_rows, pack_legal
from chesszero.replay.rows import RowBatch
from chesszero.train import (
    ArraySampler,
    QuantumStats,
    SampledBatches,
    Trainer,
    init_distributed,
    spawn_local,
)


def random_rows(n: int, seed: int) -> RowBatch:
    """``n`` rows from random self-play with random sparse policies over legal moves."""
    return RowBatch.from_rows(random_row_array(n, seed), np.arange(n))


def random_row_array(n: int, seed: int) -> np.ndarray:
    """The rows of :func:`random_rows` as a ``ROW_DTYPE`` array (replay store appends)."""
    rng = np.random.default_rng(seed)
    rows = empty_rows(n)
    game = core.Game()
    for i in range(n):
        if game.outcome() is not None or game.ply >= 120:
            game = core.Game()
        legal = np.asarray(game.legal_actions())
        k = min(8, len(legal))
        row = rows[i]
        row["planes"] = game.encode_packed()
        row["legal"] = pack_legal(legal)
        row["policy_ids"][:k] = rng.choice(legal, size=k, replace=False)
        row["policy_probs"][:k] = rng.dirichlet(np.ones(k))
        row["wdl"] = rng.dirichlet(np.ones(3))
        row["next_ids"][:k] = row["policy_ids"][:k]
        row["next_probs"][:k] = row["policy_probs"][:k]
        row["next_mask"] = 1
        row["length"] = 0.25
        row["length_mask"] = 1
        game.push_action(int(rng.choice(legal)))
    return rows


def measure(args: argparse.Namespace, world_size: int, rows: RowBatch) -> QuantumStats:
    """Warm up, then time one quantum of ``args.steps`` steps in this process."""
    cfg = load_config(
        preset="smoke",
        overrides={
            "train": {
                "global_batch": args.global_batch,
                "world_size": world_size,
                "bf16": args.bf16,
                "lr": [[0, 0.01]],
            }
        },
    ).train
    ctx = init_distributed(device=None if args.device == "cuda" else "cpu")  # cuda: LOCAL_RANK
    trainer = Trainer(cfg, args.size, ctx=ctx)
    source = SampledBatches(
        ArraySampler(rows, seed=0),
        global_batch=cfg.global_batch,
        rank=ctx.rank,
        world_size=ctx.world_size,
        reflection=Reflection.NO_CASTLING,
    )
    trainer.run_quantum(source, steps=args.warmup)
    return trainer.run_quantum(source, steps=args.steps)


def _ddp_rank(args: argparse.Namespace, rows: RowBatch, out: str) -> None:
    stats = measure(args, 2, rows)
    if torch.distributed.get_rank() == 0:
        torch.save(stats.as_dict(prefix=""), out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="6x64")
    parser.add_argument("--global-batch", type=int, default=128)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2, help="torch threads of the single process")
    parser.add_argument("--bf16", action="store_true", help="bfloat16 autocast")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                        help="cuda: one device per rank, NCCL (DDP needs two devices)")
    parser.add_argument("--json", type=Path, default=None, help="write results as JSON")
    parser.add_argument("--quick", action="store_true", help="5 timed steps, 1 warmup (smoke check)")
    args = parser.parse_args()
    if args.quick:
        args.steps, args.warmup = min(args.steps, 5), min(args.warmup, 1)

    rows = random_rows(max(4 * args.global_batch, 512), seed=0)
    torch.set_num_threads(1)
    single_one = measure(args, 1, rows).samples_per_s
    torch.set_num_threads(args.threads)
    single = measure(args, 1, rows).samples_per_s
    setup = {"global_batch": args.global_batch, "steps": args.steps, "bf16": str(args.bf16)}
    results = [
        Row(f"{args.size} single process, {args.threads} threads", single, "samples/s",
            "reference", None, setup),
        Row(f"{args.size} single process, 1 thread", single_one, "samples/s",
            f"vs {args.threads} threads", single_one / single, setup),
    ]
    if args.device == "cpu" or torch.cuda.device_count() >= 2:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "ddp.pt"
            spawn_local(_ddp_rank, 2, args, rows, str(out))
            ddp = torch.load(out, weights_only=True)["samples_per_s"]
        backend = "gloo, 1 thread each" if args.device == "cpu" else "nccl"
        results.append(Row(f"{args.size} ddp x2 ({backend})", ddp, "samples/s",
                           f"vs single, {args.threads} threads", ddp / single, setup))
    else:
        print("ddp x2 skipped: needs two CUDA devices")
    report(f"training throughput, {args.size}, global batch {args.global_batch}, "
           f"{args.steps} timed steps, {args.device}", results, args.json)


if __name__ == "__main__":
    main()
