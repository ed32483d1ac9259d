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

It takes about 10 s (2 s with ``quick``). A run whose two probes differ by
more than ``DRIFT`` had a host whose speed changed under it; runs whose
probes differ by more than that are not comparable by wall clock (only per
generation).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from datetime import datetime, timezone
from typing import Any

from common import best_rate

DRIFT = 0.2
"""Relative difference between two probes beyond which hosts (or one host
over a run) count as different speeds."""


@dataclasses.dataclass(frozen=True)
class HostSpeed:
    perft_nodes_per_s: float
    train_samples_per_s: float
    size: str
    measured_at: str

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HostSpeed:
        return cls(float(data["perft_nodes_per_s"]), float(data["train_samples_per_s"]), str(data["size"]),
                   str(data["measured_at"]))

    def ratios(self, other: HostSpeed) -> tuple[float, float]:
        """This probe's rates over `other`'s: (perft, training)."""
        return self.perft_nodes_per_s / other.perft_nodes_per_s, self.train_samples_per_s / other.train_samples_per_s

    def differs(self, other: HostSpeed, drift: float = DRIFT) -> bool:
        """Whether either rate differs from `other`'s by more than `drift` (relative)."""
        return any(abs(r - 1.0) > drift for r in self.ratios(other))

    def describe(self) -> str:
        return (f"perft {self.perft_nodes_per_s / 1e6:.0f} M nodes/s, training {self.train_samples_per_s:.0f} "
                f"samples/s ({self.size}, batch 128)")


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
    began = time.monotonic()
    speed = probe(args.size, quick=args.quick)
    print(f"{speed.describe()} in {time.monotonic() - began:.1f} s")


if __name__ == "__main__":
    main()
