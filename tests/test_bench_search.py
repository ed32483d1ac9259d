"""`benchmarks/bench_search.py`'s paired self-play/inference measurement on a slow evaluator:
windows shorter than one search still report a searches/s measured over real searches."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_search import paired_ratio  # noqa: E402

from chesszero.search import UniformEvaluator  # noqa: E402


class SlowEvaluator(UniformEvaluator):
    """Uniform answers after a fixed delay per batch (a slow host's network)."""

    def evaluate(self, planes: np.ndarray):  # type: ignore[no-untyped-def]
        time.sleep(0.004)
        return super().evaluate(planes)


def test_searches_per_s_counts_whole_searches_when_windows_are_shorter_than_one() -> None:
    # 16 games x 64 visits, one leaf per game every other batch: a search takes ~128 batches
    # (~0.5 s here), far longer than the three 0.01 s windows the ratio is measured on.
    paired = paired_ratio(SlowEvaluator(), batch=8, depth=2, rounds=3, seconds=0.01)
    assert paired.rounds == 3 and paired.mean_batch == 8
    assert paired.searches_per_s > 0
    assert 0 < paired.ratio < 2 and paired.evaluations_per_s > 0
