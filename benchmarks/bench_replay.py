"""Replay throughput: batch delivery vs trainer demand, durable appends, materialisation.

Prints one table:

- ``delivery``: global batches from a filled store, each one incremental
  ``sync`` + ``SurpriseSampler.sample`` + ``ReplayStore.read`` + planes expanded
  with ``core.unpack_planes`` (samples/s), against ``--trainer-rate`` (default
  25,300 samples/s, the paper's training-only rate; the paper's loader had 44%
  headroom, so the target ratio is >= 1.44x);
- ``append``: durable appends (validate, write, msync, header commit), rows/s;
- ``materialize xW``: Parquet shards of random games -> rows in ``W`` worker
  processes (and in-process), rows/s, against the admission rate the trainer
  needs at the reuse ratio (trainer rate / reuse).

Usage::

    python benchmarks/bench_replay.py --rows 200000 --global-batch 2048 --workers 2
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import fields
from pathlib import Path

import numpy as np
from common import Row, best_rate, report

from chesszero import core
from chesszero.replay import (
    Materializer,
    ReplayStore,
    SamplerOptions,
    SurpriseSampler,
    TargetOptions,
    empty_rows,
)
from chesszero.selfplay.records import GameRecord, SearchedPly, write_shard


def random_game(rng: np.random.Generator, gid: str, max_plies: int) -> GameRecord:
    """A random game with random sparse visit policies, as self-play would record it."""
    game = core.Game()
    prefix = []
    for _ in range(int(rng.integers(0, 9))):  # unsearched random opening
        uci = str(rng.choice(game.legal_uci()))
        game.push_uci(uci)
        prefix.append(uci)
    moves: list[str] = []
    plies: list[SearchedPly] = []
    while game.outcome() is None and len(moves) < max_plies:
        legal = np.asarray(game.legal_actions())
        k = min(len(legal), 30)
        ids = rng.choice(legal, size=k, replace=False)
        plies.append(SearchedPly(
            ply=len(moves), policy_ids=[int(a) for a in ids],
            policy_counts=[float(c) for c in rng.integers(1, 40, size=k)],
            policy_prior=[float(p) for p in rng.dirichlet(np.ones(k))], policy_discarded=0.0,
            root_value=float(rng.uniform(-1, 1)), raw_value=0.0,
            policy_surprise=float(rng.exponential(0.5)), best_q=0.0, visits=400))
        uci = game.uci_of(int(rng.choice(ids)))
        game.push_uci(uci)
        moves.append(uci)
    outcome = game.outcome()
    if outcome is None:  # stopped at the ply cap: add the cut-position search
        legal = np.asarray(game.legal_actions())
        k = min(len(legal), 30)
        plies.append(SearchedPly(
            ply=len(moves), policy_ids=[int(a) for a in legal[:k]],
            policy_counts=[1.0] * k, policy_prior=[1.0 / len(legal)] * k, policy_discarded=0.0,
            root_value=0.1, raw_value=0.0, policy_surprise=0.1, best_q=0.0, visits=400,
            is_cap_search=True))
        result, termination, cap = "1/2-1/2", "ply_cap", 0.1
    else:
        result, termination, cap = outcome.result, outcome.termination.name.lower(), None
    return GameRecord(game_id=gid, model_id="bench", generation=1, start_type="random",
                      start_fen=core.STARTING_FEN, prefix_moves=prefix, moves=moves, plies=plies,
                      result=result, termination=termination, cap_value=cap,  # type: ignore[arg-type]
                      searches=len(plies))


def write_shards(folder: Path, games: int, per_shard: int, max_plies: int, seed: int) -> list[Path]:
    rng = np.random.default_rng(seed)
    paths = []
    for s in range(0, games, per_shard):
        recs = [random_game(rng, f"g{s + i}", max_plies) for i in range(min(per_shard, games - s))]
        paths.append(write_shard(recs, folder / f"shard{s // per_shard:04d}.parquet"))
    return paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=200_000, help="rows in the store for delivery")
    ap.add_argument("--global-batch", type=int, default=2048)
    ap.add_argument("--batches", type=int, default=30, help="batches per delivery timing run")
    ap.add_argument("--trainer-rate", type=float, default=25_300.0,
                    help="trainer consumption, samples/s (paper: 25.3k training alone)")
    ap.add_argument("--reuse", type=float, default=4.0)
    ap.add_argument("--games", type=int, default=96)
    ap.add_argument("--games-per-shard", type=int, default=48)
    ap.add_argument("--max-plies", type=int, default=160)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None, help="write JSON results here")
    args = ap.parse_args()

    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        shards = write_shards(folder, args.games, args.games_per_shard, args.max_plies, seed=0)
        print(f"wrote {len(shards)} shards of random games in {time.perf_counter() - t0:.1f}s")

        admission = args.trainer_rate / args.reuse
        for workers in sorted({0, args.workers}):
            with ReplayStore.create(folder / f"m{workers}.bin", capacity=200_000) as store, \
                    Materializer(TargetOptions(beta=0.05), workers=workers) as mat:
                if workers:
                    mat.convert(shards[:workers])  # start the worker processes first
                report_ = mat.run(shards, store)
            rows.append(Row(f"materialize x{workers}", report_.rows_per_second, "rows/s",
                            f"admission {admission:,.0f} rows/s", report_.rows_per_second / admission,
                            {"rows": report_.rows, "games": report_.games}))
            with ReplayStore.open(folder / f"m{workers}.bin", readonly=True) as done:
                seed_rows = done.read_valid()

        # a big store tiled from the materialised rows (real planes and policies)
        base = empty_rows(len(seed_rows))
        for f in fields(seed_rows):
            if f.name != "slots":
                base[f.name] = getattr(seed_rows, f.name)
        with ReplayStore.create(folder / "big.bin", capacity=args.rows) as store:
            chunk = np.resize(base, 20_000)
            t0 = time.perf_counter()
            while store.total_appended < args.rows:
                store.append(chunk[: args.rows - store.total_appended])
            append_rate = args.rows / (time.perf_counter() - t0)
            rows.append(Row("append (durable)", append_rate, "rows/s", f"admission {admission:,.0f} rows/s",
                            append_rate / admission))

            sampler = SurpriseSampler(SamplerOptions(), seed=0)
            sampler.sync(store)
            out = np.empty((args.global_batch, core.NUM_PLANES, 8, 8), dtype=np.float32)

            def deliver() -> int:
                for _ in range(args.batches):
                    sampler.sync(store)
                    batch = store.read(sampler.sample(args.global_batch))
                    core.unpack_planes(batch.planes, out)
                return args.batches * args.global_batch

            rate = best_rate(deliver, repeats=3)
            rows.append(Row(f"delivery (batch {args.global_batch})", rate, "samples/s",
                            f"trainer {args.trainer_rate:,.0f}/s (target >= 1.44x)",
                            rate / args.trainer_rate))
            sample_rate = best_rate(lambda: sum(len(sampler.sample(args.global_batch))
                                                for _ in range(args.batches)))
            rows.append(Row("  of which sampling only", sample_rate, "samples/s",
                            f"trainer {args.trainer_rate:,.0f}/s", sample_rate / args.trainer_rate))
    report(f"replay throughput ({args.rows:,} rows, {args.games} games)", rows, args.out)


if __name__ == "__main__":
    main()
