"""How fast this host is now: a probe the learning benchmark runs before the
campaign and after the final evaluation.

Wall-clock learning runs compare recipes by what each achieves in the same
hours, so they are comparable only on hosts of the same speed. Machines of
one kind are not: on 2026-12-03 the same code measured 2.8x fewer training
samples/s and 3.5x fewer perft nodes/s than the stored benchmarks of
2026-12-02 on a host that reports the same CPU model, and two one-hour
ablations had run on the slow host against baselines from the fast one
(docs/learning.md). The probe times the two things a campaign spends its
time on, each best of three windows:

- ``perft_nodes_per_s``: the native core's perft from the start position
  (move generation; self-play's search runs the same code paths);
- ``train_samples_per_s``: the trainer (``bench_train.measure``: the real
  ``Trainer`` and sampler) on the preset's first network size, global batch
  128, one process with torch's default threads.

It takes about 15 s (about 8 s with ``quick``, most of it building the
trainer). What a probe is and when two differ (``DRIFT``, 20%) is
``reports/learning_host.py``.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from common import best_rate

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "reports"))
from learning_host import HostSpeed  # noqa: E402  (reports/learning_host.py: the value every report reads)


def probe(size: str, quick: bool = False) -> HostSpeed:
    """Times perft and the trainer on this host now (see the module docstring)."""
    from bench_train import measure, random_rows

    from chesszero import core

    game = core.Game()
    depth = 4 if quick else 5
    perft = best_rate(lambda: game.perft(depth), repeats=3, min_seconds=0.2 if quick else 1.0)
    rows = random_rows(512, seed=0)
    steps = 2 if quick else 8
    args = argparse.Namespace(size=size, global_batch=128, steps=steps, warmup=1, bf16=False, device="cpu")
    train = max(measure(args, 1, rows).samples_per_s for _ in range(1 if quick else 3))
    return HostSpeed(perft, train, size, datetime.now(timezone.utc).isoformat(timespec="seconds"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="4x48", help="network size the trainer is timed on (4x48: the cpu preset's)")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    from chesszero.config.sizes import parse_size

    try:
        parse_size(args.size)
    except ValueError as exc:
        parser.error(f"--size {args.size!r}: {exc}")
    began = time.monotonic()
    speed = probe(args.size, quick=args.quick)
    print(f"{speed.describe()} in {time.monotonic() - began:.1f} s")


if __name__ == "__main__":
    main()
