"""What relaunching the torchrun trainer ranks costs per quantum.

With ``train.world_size > 1`` the campaign starts ``torchrun --standalone
--nproc_per_node=N -m chesszero train ...`` for every quantum: the ranks
import torch and chesszero, meet at a rendezvous, load the checkpoint, train
``steps_per_quantum`` steps and exit. This benchmark runs that very command
(``train.run.torchrun_command``) on a replay store of random rows and splits
its wall time into the quantum (the trainer's own ``wall_s``: the optimizer
steps) and everything else (the relaunch: interpreter start, imports,
rendezvous, process-group set-up, checkpoint load/save, exit). It prints the
ratio relaunch / quantum: what long-lived trainer ranks would save per
quantum, as a fraction of the training itself.

Usage::

    python benchmarks/bench_relaunch.py [--preset cpu] [--world-size 2] [--repeats 2] \\
        [--json reports/bench/relaunch.json] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from bench_train import random_row_array
from common import Row, report

from chesszero.config import load_config
from chesszero.replay import ReplayStore
from chesszero.train.run import command_argv, torchrun_command

ROOT = Path(__file__).resolve().parent.parent


def launch(args: argparse.Namespace, folder: Path, k: int) -> tuple[float, float]:
    """One torchrun quantum: (wall seconds of the launch, the quantum's own seconds)."""
    stats = folder / f"stats_{k}.json"
    argv = command_argv(params=ROOT / "params.yaml", preset=args.preset, replay=folder / "replay.bin",
                        checkpoint=folder / "train.pt", stats_out=stats, overrides=args.overrides)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    start = time.perf_counter()
    subprocess.run(torchrun_command(args.world_size, argv), cwd=ROOT, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    return wall, float(json.loads(stats.read_text())["wall_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="cpu", help="recipe of params.yaml (model, batch, steps per quantum)")
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2, help="quanta launched (the first one also measured)")
    parser.add_argument("--json", type=Path, default=None, help="write results as JSON")
    parser.add_argument("--quick", action="store_true", help="the smoke preset, one quantum (smoke check)")
    args = parser.parse_args()
    if args.quick:
        args.preset, args.repeats = "smoke", 1
    args.overrides = [f"train.world_size={args.world_size}"]
    cfg = load_config(ROOT / "params.yaml", preset=args.preset).train
    presented = cfg.steps_per_quantum * cfg.global_batch
    reuse = load_config(ROOT / "params.yaml", preset=args.preset).replay.reuse_ratio
    rows_needed = int(presented * args.repeats / reuse) + cfg.global_batch
    walls, quanta = [], []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        with ReplayStore.create(folder / "replay.bin", capacity=rows_needed, logical_capacity=rows_needed) as store:
            store.append(random_row_array(rows_needed, seed=0))
        for k in range(args.repeats):
            wall, quantum = launch(args, folder, k)
            walls.append(wall)
            quanta.append(quantum)
    relaunch = [w - q for w, q in zip(walls, quanta, strict=True)]
    mean = sum(relaunch) / len(relaunch)
    quantum = sum(quanta) / len(quanta)
    setup = {"preset": args.preset, "world_size": args.world_size, "steps": cfg.steps_per_quantum,
             "global_batch": cfg.global_batch, "quanta": args.repeats,
             "launch_wall_s": round(sum(walls) / len(walls), 2), "cpus": os.cpu_count() or 0}
    results = [
        Row("quantum (optimizer steps)", quantum * 1000, "ms", "reference", None, setup),
        Row("relaunch (start, imports, rendezvous, checkpoint, exit)", mean * 1000, "ms", "vs quantum", mean / quantum,
            {"min_s": round(min(relaunch), 2), "max_s": round(max(relaunch), 2)}),
    ]
    report(f"torchrun relaunch per quantum, preset {args.preset}, {args.world_size} ranks", results, args.json)
    print(f"relaunch/quantum = {mean / quantum:.2f} ({mean:.1f} s per launch against {quantum:.1f} s of training)")


if __name__ == "__main__":
    main()
