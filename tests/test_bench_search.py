"""Benchmark helpers: `bench_search.paired_ratio` on a slow evaluator (windows shorter than one
search still report searches/s over real searches) and `eval_generation.gated_artifact`'s refusals."""

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


def test_eval_generation_refuses_a_missing_failed_or_unreadable_publication(tmp_path: Path) -> None:
    import json

    import pytest
    from eval_generation import gated_artifact

    folder = tmp_path / "run" / "artifacts" / "gen_0003"
    with pytest.raises(ValueError, match="generation 3 of run has no published artifact"):
        gated_artifact(tmp_path / "run", 3)
    folder.mkdir(parents=True)
    (folder / "publish.json").write_text("{bad")
    with pytest.raises(ValueError, match="generation 3 of run: unreadable .*publish.json"):
        gated_artifact(tmp_path / "run", 3)
    (folder / "publish.json").write_text(json.dumps({"passed": False, "artifact": str(folder / "int8.onnx")}))
    with pytest.raises(ValueError, match="failed its fidelity gate"):
        gated_artifact(tmp_path / "run", 3)
    (folder / "publish.json").write_text(json.dumps({"passed": True, "artifact": str(folder / "int8.onnx")}))
    with pytest.raises(ValueError, match="int8.onnx is missing"):
        gated_artifact(tmp_path / "run", 3)
    (folder / "int8.onnx").write_bytes(b"x")
    assert gated_artifact(tmp_path / "run", 3) == folder / "int8.onnx"


def test_eval_generation_search_changes_and_output_names() -> None:
    import pytest
    from eval_generation import search_changes, suffix

    changes = search_changes(["root=puct", "c_puct_eval=0.7", "gumbel={considered: 8}"])
    assert changes == {"search.root": "puct", "search.c_puct_eval": 0.7, "search.gumbel": {"considered": 8}}
    assert suffix({}, None) == ""
    assert suffix({"search.root": "puct", "search.c_puct_eval": 0.7}, None) == "-root=puct_c_puct_eval=0.7"
    assert suffix({"search.gumbel": {"considered": 8}}, None) == "-gumbel=considered8"
    assert suffix(changes, "puct-root") == "-puct-root"
    with pytest.raises(ValueError, match="--search: override must look like KEY=VALUE"):
        search_changes(["root"])
