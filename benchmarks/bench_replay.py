"""Replay throughput: batch delivery vs trainer demand, durable appends, materialisation.

Prints one table; every ratio divides two rates measured in this run on this
machine, and fixed numbers from elsewhere are targets (``targets.py``):

- ``trainer``: training samples/s of the preset's network at its global
  batch in one process (``bench_train.measure``: the trainer ``bench_train``
  measures), the better of one torch thread and every usable core;
- ``delivery``: global batches from a filled store, each one incremental
  ``sync`` + ``SurpriseSampler.sample`` + ``ReplayStore.read`` + planes expanded
  with ``core.unpack_planes`` (samples/s), against that trainer (target, issue
  4: >= 1.44x, the paper's loader headroom); the same delivery rate checked
  against the fixed target of 1.44 x the paper's 25,300 samples/s trainer;
- ``append``: durable appends (validate, write, msync, header commit), rows/s,
  against the admission the measured trainer needs at the preset's reuse ratio;
- ``self-play supply``: searched positions/s (= replay rows/s) of the native
  self-play actor with the preset's settings (``params.yaml``: games in
  flight, batch, search, visit cap and ply cap of generation 0) and a randomly
  initialised network of the preset's size exported to ONNX (FP32, one
  intra-op thread), for ``--selfplay-seconds``: one actor alone, then the
  preset's number of actors running together, each in its own process (their
  timed windows start together), summed;
- ``materialize xW``: Parquet shards of random games -> rows in ``W`` worker
  processes (and in-process), rows/s, against that measured supply of all the
  preset's actors (target, issue 4: >= 6x). When self-play cannot run here
  (missing module, export failure, ``--selfplay-seconds 0``) the output says
  the supply is not measured and the target is reported as missed.

Usage::

    python benchmarks/bench_replay.py --rows 200000 --global-batch 2048 --workers 2 \
        --preset cpu --selfplay-seconds 15 [--json reports/bench/replay.json] [--quick]

``--quick`` shrinks the store, the games, the trainer and the self-play
measurements (``QUICK``) for a smoke check; explicit options still win.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import queue
import tempfile
import time
import traceback
import warnings
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
from common import Row, best_rate, report
from targets import PAPER_TRAINER_RATE, target

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


QUICK = {"rows": 40_000, "games": 24, "games_per_shard": 12, "batches": 10, "selfplay_seconds": 3.0,
         "trainer_steps": 3}
"""Reduced budgets of ``--quick`` (each applies only where the option was not given)."""
FULL = {"rows": 200_000, "games": 96, "games_per_shard": 48, "batches": 30, "selfplay_seconds": 15.0,
        "trainer_steps": 20}


def export_network(size: str, path: Path) -> Path:
    """A randomly initialised inference network of ``size`` as ONNX (planes -> logits, WDL)."""
    import torch

    from chesszero.model import ChessNet

    class Deployable(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = ChessNet(size, aux_heads=False).inference_view()

        def forward(self, planes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            policy, wdl = self.net(planes)
            return policy, torch.softmax(wdl, dim=-1)

    torch.manual_seed(0)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the legacy exporter is what we want
        torch.onnx.export(Deployable().eval(), (torch.zeros(2, core.NUM_PLANES, 8, 8),), str(path),
                          input_names=["planes"], output_names=["policy_logits", "wdl"],
                          dynamic_axes={"planes": {0: "n"}, "policy_logits": {0: "n"}, "wdl": {0: "n"}},
                          opset_version=17, dynamo=False)
    return path


@contextlib.contextmanager
def actor_pipeline(preset: str, folder: Path, *, network: Path | None = None,
                   actor: int = 0) -> Iterator[tuple[Any, Any, dict[str, float | int | str]]]:
    """One self-play actor of ``preset`` as the campaign builds it (actor settings,
    one-thread ONNX Runtime, the visit cap and ply cap of generation 0), warmed up:
    (the native actor, its running batch pipeline, what it plays).

    ``network``: the ONNX file to play with (default: export the preset's size
    into ``folder``)."""
    from chesszero.config import load_config
    from chesszero.search import BatchPipeline, OnnxEvaluator
    from chesszero.selfplay.actor import ActorSettings

    cfg = load_config(Path(__file__).resolve().parents[1] / "params.yaml", preset=preset)
    archive = folder / f"archive{actor}.sqlite"
    try:  # the campaign's own mapping of the recipe onto actor settings
        from chesszero.campaign.selfplay_stage import actor_settings

        settings = actor_settings(cfg, actor=actor, seed=actor, archive_path=archive)
    except ImportError:
        sp = cfg.selfplay
        settings = ActorSettings(games_in_flight=sp.games_in_flight, batch_size=sp.batch_size, seed=actor,
                                 search={"c_puct": cfg.search.c_puct_selfplay,
                                         "leaves_per_tree": cfg.search.leaves_per_tree})
    from chesszero import _core

    if network is None:
        network = export_network(str(cfg.model.size), folder / "net.onnx")
    evaluator = OnnxEvaluator(network, threads=1)
    visits, ply_cap = cfg.search.visit_cap.at(0), cfg.selfplay.ply_cap.at(0)
    native = _core.Actor(settings.native_options())
    native.set_limits(visits, ply_cap, None)
    batch = settings.effective_batch_size()
    with BatchPipeline(native, evaluator, batch_size=batch, depth=settings.pipeline_depth) as pipe:
        for _ in range(4 * settings.pipeline_depth):  # warm up: trees and buffers reach size
            pipe.step()
        yield native, pipe, {"model": str(cfg.model.size), "visits": int(visits),
                             "games_in_flight": settings.games_in_flight, "batch": batch,
                             "actors": int(cfg.selfplay.actors)}
        pipe.flush()


def selfplay_supply(preset: str, folder: Path, seconds: float, *, network: Path | None = None,
                    actor: int = 0, start: Any = None) -> tuple[float, dict[str, float | int | str]]:
    """Searched positions/s of one self-play actor of ``preset`` (steady state).

    ``network``: as :func:`actor_pipeline`; ``start``: a barrier waited on after
    the warm-up, so that actors in several processes time the same window.
    """
    with actor_pipeline(preset, folder, network=network, actor=actor) as (native, pipe, info):
        if start is not None:
            start.wait()
        before = native.counters()
        begin = time.perf_counter()
        while time.perf_counter() - begin < seconds:
            pipe.step()
            native.take_finished()
        elapsed = time.perf_counter() - begin
    after = native.counters()
    searches = after["searches"] - before["searches"]
    return searches / elapsed, {**info, "searches": int(searches), "seconds": round(elapsed, 2)}


def _supply_process(results: Any, start: Any, preset: str, folder: str, seconds: float, network: str,
                    actor: int) -> None:
    try:
        rate, _ = selfplay_supply(preset, Path(folder), seconds, network=Path(network), actor=actor, start=start)
        results.put((actor, rate, None))
    except BaseException:  # noqa: BLE001 - reported by the parent
        start.abort()  # the others stop waiting
        results.put((actor, None, traceback.format_exc()))


def selfplay_supply_together(preset: str, folder: Path, seconds: float, network: Path,
                             actors: int) -> list[float]:
    """Searched positions/s of each of ``actors`` self-play actors playing at the same time,
    each in its own process (as the campaign runs them), timed over one common window."""
    ctx = multiprocessing.get_context("spawn")
    results, start = ctx.Queue(), ctx.Barrier(actors)
    procs = [ctx.Process(target=_supply_process, args=(results, start, preset, str(folder), seconds,
                                                      str(network), i)) for i in range(actors)]
    for proc in procs:
        proc.start()
    rates: dict[int, float] = {}
    errors = []
    try:
        for _ in procs:
            actor, rate, error = results.get(timeout=300 + 2 * seconds)
            if error is not None:
                errors.append(f"actor {actor}: {error}")
            else:
                rates[actor] = rate
    except queue.Empty:
        errors.append("an actor process sent no result")
    finally:
        for proc in procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.kill()
    if errors:
        raise RuntimeError("self-play actors together failed:\n" + "\n".join(errors))
    return [rates[i] for i in range(actors)]


def trainer_rate(preset: str, steps: int) -> tuple[float, dict[str, float | int | str]]:
    """Training samples/s of ``preset``'s network at its global batch: ``bench_train``'s
    single-process measurement, the better of one torch thread and every usable core
    (on a loaded machine extra threads can slow torch down; the faster trainer is the
    harder demand to meet)."""
    import torch
    from bench_train import measure, random_rows

    from chesszero.config import load_config

    cfg = load_config(Path(__file__).resolve().parents[1] / "params.yaml", preset=preset)
    from chesszero.train.threads import usable_cpus

    cores = usable_cpus()
    args = argparse.Namespace(size=str(cfg.model.size), global_batch=cfg.train.global_batch, bf16=False,
                              device="cpu", warmup=1, steps=steps)
    rows = random_rows(max(4 * args.global_batch, 512), seed=0)
    previous = torch.get_num_threads()
    rates: dict[int, float] = {}
    try:
        for threads in sorted({1, cores}):
            torch.set_num_threads(threads)
            rates[threads] = measure(args, 1, rows).samples_per_s
    finally:
        torch.set_num_threads(previous)
    best = max(rates, key=rates.__getitem__)
    return rates[best], {"model": args.size, "global_batch": args.global_batch, "threads": best, "steps": steps,
                         **{f"samples_per_s_{t}_threads": round(r, 1) for t, r in rates.items()}}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=None, help="rows in the store for delivery (200,000)")
    ap.add_argument("--global-batch", type=int, default=2048)
    ap.add_argument("--batches", type=int, default=None, help="batches per delivery timing run (30)")
    ap.add_argument("--trainer-steps", type=int, default=None,
                    help="timed steps of the trainer measurement (20)")
    ap.add_argument("--games", type=int, default=None, help="random games materialised (96)")
    ap.add_argument("--games-per-shard", type=int, default=None, help="(48)")
    ap.add_argument("--max-plies", type=int, default=160)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--preset", default="cpu",
                    help="params.yaml preset: the trainer, reuse ratio and self-play supply it measures")
    ap.add_argument("--selfplay-seconds", type=float, default=None,
                    help="self-play measurement time (15; 0: skip, the supply target is not measured)")
    ap.add_argument("--json", "--out", dest="json", type=Path, default=None,
                    help="write JSON results here (common.report layout)")
    ap.add_argument("--quick", action="store_true", help=f"reduced budgets {QUICK}")
    args = ap.parse_args(argv)
    for key, value in (QUICK if args.quick else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    from chesszero.config import load_config

    reuse = float(load_config(Path(__file__).resolve().parents[1] / "params.yaml", preset=args.preset).replay.reuse_ratio)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        shards = write_shards(folder, args.games, args.games_per_shard, args.max_plies, seed=0)
        print(f"wrote {len(shards)} shards of random games in {time.perf_counter() - t0:.1f}s")

        trainer, setup = trainer_rate(args.preset, args.trainer_steps)
        trainer_label = (f"trainer {setup['model']}, batch {setup['global_batch']}, "
                         f"1 process x {setup['threads']} thread" + ("s" if int(setup["threads"]) > 1 else ""))
        rows.append(Row(f"trainer ({args.preset}: {setup['model']}, batch {setup['global_batch']})", trainer,
                        "samples/s", "reference (bench_train's single process)", None, setup))
        admission = trainer / reuse

        supply: float | None = None
        missing = "skipped (--selfplay-seconds 0)"
        if args.selfplay_seconds > 0:
            try:
                per_actor, info = selfplay_supply(args.preset, folder, args.selfplay_seconds)
                actors = int(info["actors"])
                together = (selfplay_supply_together(args.preset, folder, args.selfplay_seconds, folder / "net.onnx",
                                                     actors) if actors > 1 else [per_actor])
            except Exception as exc:  # self-play not usable here: say so
                missing = f"{type(exc).__name__}: {exc}"
                traceback.print_exc()
            else:
                supply = sum(together)
                rows.append(Row(f"self-play supply ({args.preset}, 1 actor alone)", per_actor, "rows/s",
                                f"{info['model']} ONNX, {info['visits']} visits, "
                                f"{info['games_in_flight']} games", None, info))
                rows.append(Row(f"self-play supply ({args.preset}, {actors} actors together)", supply, "rows/s",
                                "1 actor alone", supply / per_actor,
                                {"processes": actors, "per_actor": ", ".join(f"{r:,.0f}" for r in together),
                                 "seconds": args.selfplay_seconds}))
        if supply is None:
            print(f"NOTE: self-play supply not measured ({missing}); the materialisation target is not checked")

        for workers in sorted({0, args.workers}):
            with ReplayStore.create(folder / f"m{workers}.bin", capacity=200_000) as store, \
                    Materializer(TargetOptions(beta=0.05), workers=workers) as mat:
                if workers:
                    mat.convert(shards[:workers])  # start the worker processes first
                report_ = mat.run(shards, store)
            rate = report_.rows_per_second
            extra: dict[str, float | int | str] = {"rows": report_.rows, "games": report_.games,
                                                   "vs_admission": round(rate / admission, 2)}
            reference = (f"self-play supply {supply:,.0f} rows/s" if supply is not None
                         else f"self-play supply not measured ({missing})")
            rows.append(Row(f"materialize x{workers}", rate, "rows/s", reference,
                            None if supply is None else rate / supply, extra, target("materialize-vs-supply")))
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
            rows.append(Row("append (durable)", append_rate, "rows/s",
                            f"admission {admission:,.0f} rows/s (trainer / reuse {reuse:g})", append_rate / admission))

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
            rows.append(Row(f"delivery (batch {args.global_batch})", rate, "samples/s", trainer_label,
                            rate / trainer, target=target("delivery-vs-trainer")))
            rows.append(Row(f"delivery (batch {args.global_batch}) vs the paper's trainer", rate, "samples/s",
                            f"fixed target: 1.44 x the paper's {PAPER_TRAINER_RATE:,.0f} samples/s (not measured here)",
                            target=target("delivery-vs-paper-trainer")))
            sample_rate = best_rate(lambda: sum(len(sampler.sample(args.global_batch))
                                                for _ in range(args.batches)))
            rows.append(Row("  of which sampling only", sample_rate, "samples/s", trainer_label,
                            sample_rate / trainer))
    report(f"replay throughput ({args.rows:,} rows, {args.games} games)", rows, args.json)


if __name__ == "__main__":
    main()
