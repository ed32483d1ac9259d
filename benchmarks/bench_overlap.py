"""The trainer beside the self-play actors that overlap it, in one process.

A campaign trains while the first ``campaign.overlap_fraction`` of its actors
keep playing, as threads of the campaign process (docs/campaign.md, "Training
beside the actors"). Each such actor keeps one core busy (tree search, one
ONNX Runtime thread). This benchmark builds that arrangement from the preset:
its network trained on random replay rows (``bench_train.measure``, global
batch and quantum steps of the preset) while its overlap actors
(``bench_replay.actor_pipeline``, a randomly initialised network of the same
size) play in threads beside it. The arrangement is measured twice: once with
torch's default intra-op threads, and once with the count the campaign uses
(``train.threads.threads_beside``: the cores the actors leave).

Rows: the trainer alone (the reference), the trainer beside the actors at
each thread count, and the actors' searches/s over each training window. The
campaign's count must train at least 1.1x as fast as torch's default beside
the actors, with the actors at least 0.95x as fast. On a machine with more
cores than the preset has overlap actors the two counts may be equal (then
the ratio is 1 and the target is missed: the choice buys nothing there).

Usage::

    python benchmarks/bench_overlap.py [--preset cpu] [--size 6x64] [--steps 64] \\
        [--json reports/bench/overlap.json] [--quick]
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

from bench_replay import actor_pipeline, export_network
from bench_train import measure, random_rows
from common import Row, report
from targets import target

from chesszero.config import ConfigError, load_config
from chesszero.train.threads import threads_beside, torch_threads, usable_cpus

ROOT = Path(__file__).resolve().parent.parent


class Actors:
    """``count`` actor threads that play until stopped; each counts its searches
    between :meth:`open_window` and :meth:`close_window`."""

    def __init__(self, preset: str, folder: Path, network: Path, count: int) -> None:
        self.count = count
        self._args = (preset, folder, network)
        self._stop = threading.Event()
        self._window = threading.Event()
        self._ready = threading.Barrier(count + 1)
        self._closed = threading.Barrier(count + 1)
        self._counted: list[tuple[int, float]] = []
        self._errors: list[BaseException] = []
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._play, args=(k,), daemon=True) for k in range(count)]

    def _play(self, k: int) -> None:
        preset, folder, network = self._args
        try:
            with actor_pipeline(preset, folder, network=network, actor=k) as (native, pipe, _):
                self._ready.wait()
                while not self._window.is_set():
                    pipe.step()
                    native.take_finished()
                before, begin = native.counters()["searches"], time.perf_counter()
                while self._window.is_set():
                    pipe.step()
                    native.take_finished()
                searches, seconds = native.counters()["searches"] - before, time.perf_counter() - begin
                with self._lock:
                    self._counted.append((searches, seconds))
                self._closed.wait()
                while not self._stop.is_set():  # keeps its core busy until the measurement ends
                    pipe.step()
                    native.take_finished()
        except BaseException as exc:  # noqa: BLE001 - re-raised by the caller
            self._errors.append(exc)
            self._ready.abort()
            self._closed.abort()

    def __enter__(self) -> Actors:
        for t in self._threads:
            t.start()
        try:
            self._ready.wait(timeout=300)  # warmed up
        except threading.BrokenBarrierError:
            self.__exit__()
            raise RuntimeError("an overlap actor failed before playing") from None
        return self

    def open_window(self) -> None:
        self._window.set()

    def close_window(self) -> float:
        """Ends the window; the actors' searches/s over it, summed."""
        self._window.clear()
        self._closed.wait(timeout=300)
        return sum(s / t for s, t in self._counted)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=60)
        if self._errors:
            raise RuntimeError("an overlap actor failed") from self._errors[0]


def train_beside(args: argparse.Namespace, folder: Path, network: Path, actors: int, threads: int,
                 rows: object) -> tuple[float, float]:
    """(trainer samples/s, actors' searches/s) with ``actors`` threads playing and torch at ``threads``."""
    with torch_threads(threads), Actors(args.preset, folder, network, actors) as players:
        players.open_window()
        try:
            stats = measure(args, 1, rows)
        finally:
            searches = players.close_window()
    return stats.samples_per_s, searches


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="cpu", help="recipe of params.yaml (overlap actors, batch, steps)")
    parser.add_argument("--size", default=None,
                        help="network size (default: the preset's last progressive stage, where a campaign "
                             "spends most of its hour, else model.size)")
    parser.add_argument("--steps", type=int, default=None, help="steps timed (default: the preset's quantum)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None, help="write results as JSON")
    parser.add_argument("--quick", action="store_true", help="12 steps of a 4x48 network (smoke check)")
    args = parser.parse_args(argv)
    if args.steps is not None and args.steps < 1:
        parser.error(f"--steps must be >= 1, got {args.steps}")
    if args.warmup < 0:
        parser.error(f"--warmup must be >= 0, got {args.warmup}")
    if args.size is not None:
        from chesszero.model import parse_size

        try:
            parse_size(args.size)
        except ValueError as exc:
            parser.error(f"--size {args.size!r}: {exc}")
    return args


def main(argv: list[str] | None = None) -> None:
    import torch

    args = parse_args(argv)
    try:
        cfg = load_config(ROOT / "params.yaml", preset=args.preset)
    except ConfigError as exc:
        raise SystemExit(f"bench_overlap.py: {exc}") from None
    stages = list(cfg.progressive.stages)
    args.size = args.size or ("4x48" if args.quick else str(stages[-1] if stages else cfg.model.size))
    args.steps = args.steps or (12 if args.quick else cfg.train.steps_per_quantum)
    args.global_batch, args.bf16, args.device = cfg.train.global_batch, False, "cpu"
    actors = int(round(cfg.selfplay.actors * cfg.campaign.overlap_fraction))
    if actors < 1:
        raise SystemExit(f"preset {args.preset!r} has no overlap actors (campaign.overlap_fraction "
                         f"{cfg.campaign.overlap_fraction} of {cfg.selfplay.actors})")
    default = torch.get_num_threads()
    chosen = threads_beside(actors)
    rows = random_rows(max(4 * args.global_batch, 512), seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        network = export_network(args.size, folder / "net.onnx")
        alone = measure(args, 1, rows).samples_per_s
        default_train, default_play = train_beside(args, folder, network, actors, default, rows)
        chosen_train, chosen_play = train_beside(args, folder, network, actors, chosen, rows)
    who = f"{actors} actor{'s' if actors > 1 else ''}"
    out = [
        Row(f"trainer alone ({default} threads)", alone, "samples/s"),
        Row(f"trainer beside {who}, torch default ({default} threads)", default_train, "samples/s",
            f"trainer alone ({default} threads)", default_train / alone),
        Row(f"trainer beside {who}, campaign's count ({chosen} thread{'s' if chosen > 1 else ''})", chosen_train,
            "samples/s", "trainer beside the actors, torch default", chosen_train / default_train,
            target=target("overlap-trainer-threads")),
        Row(f"{who} beside the trainer, torch default", default_play, "searches/s"),
        Row(f"{who} beside the trainer, campaign's count", chosen_play, "searches/s",
            f"{who} beside the trainer, torch default", chosen_play / default_play,
            target=target("overlap-actors-threads")),
    ]
    meta = {"preset": args.preset, "size": args.size, "steps": args.steps, "global_batch": args.global_batch,
            "overlap_actors": actors, "usable_cpus": usable_cpus(), "torch_default_threads": default,
            "campaign_threads": chosen}
    report(f"Trainer beside the overlap actors ({args.preset}, {args.size}, {args.steps} steps of "
           f"{args.global_batch})", out, args.json, meta=meta)


if __name__ == "__main__":
    main()
