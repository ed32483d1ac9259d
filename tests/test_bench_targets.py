"""Benchmark targets (`benchmarks/targets.py`): each operator, met / MISSED / no target,
rows as written to JSON, and `chesszero bench --strict`'s exit status on scripted rows
(tiny stand-in scripts, no benchmark runs)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from common import Row  # noqa: E402
from targets import RATIO, TARGETS, Target, Verdict, check, check_row, target  # noqa: E402


@pytest.fixture(scope="module")
def run_all() -> dict[str, Any]:
    import runpy

    return runpy.run_path(str(REPO / "benchmarks" / "run_all.py"))


@pytest.mark.parametrize(("op", "below", "equal", "above"), [
    (">=", False, True, True), (">", False, False, True), ("<=", True, True, False), ("<", True, False, False)])
def test_each_operator_at_and_around_its_value(op: str, below: bool, equal: bool, above: bool) -> None:
    goal = Target("t", op, 2.0, RATIO, "issue 0: test")  # type: ignore[arg-type]
    assert [goal.holds(v) for v in (1.999, 2.0, 2.001)] == [below, equal, above]
    assert goal.describe() == f"{op} 2x"


def test_a_ratio_target_reads_the_ratio_and_a_fixed_target_the_rate() -> None:
    ratio_goal = Target("r", ">=", 50, RATIO, "issue 3: tree")
    assert check(ratio_goal, rate=1e9, unit="sims/s", ratio=35.3) == Verdict(ratio_goal, 35.3, False)
    assert check(ratio_goal, rate=1.0, unit="sims/s", ratio=51.0).label == "met"
    fixed = Target("f", ">=", 200_000, "positions/s", "issue 2: encoding")
    assert fixed.describe() == ">= 200,000 positions/s"
    verdict = check(fixed, rate=199_999.0, unit="positions/s", ratio=9.0)  # the ratio plays no part
    assert (verdict.measured, verdict.met, verdict.label) == (199_999.0, False, "MISSED")
    with pytest.raises(ValueError, match="in 'positions/s', the row is in 'ms'"):
        check(fixed, rate=1.0, unit="ms", ratio=None)


def test_no_target_gives_no_verdict_and_a_missing_measurement_is_missed() -> None:
    assert check(None, rate=5.0, unit="x", ratio=2.0) == Verdict(None)
    assert Verdict(None).label == "" and Verdict(None).met is None
    goal = Target("r", ">=", 6, RATIO, "issue 4: supply")
    assert check(goal, rate=1.0, unit="rows/s", ratio=None).label == "MISSED (not measured)"
    assert check(goal, rate=1.0, unit="rows/s", ratio=math.nan).met is False


def test_targets_refuse_unknown_operators_and_names() -> None:
    with pytest.raises(ValueError, match="unknown operator '=='"):
        Target("t", "==", 1.0, RATIO, "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="finite"):
        Target("t", ">=", math.inf, RATIO, "x")
    with pytest.raises(KeyError, match="no benchmark target 'nope'; known: .*tree-vs-python"):
        target("nope")


def test_every_project_target_cites_where_it_comes_from() -> None:
    assert len(TARGETS) >= 10
    for name, goal in TARGETS.items():
        assert goal.name == name
        assert goal.cited.startswith(("issue ", "fixed")), goal.source
        assert Target.from_dict(goal.as_dict()) == goal
    # the paper's trainer rate is a fixed target, not a ratio's denominator
    assert TARGETS["delivery-vs-paper-trainer"].unit == "samples/s"
    assert TARGETS["delivery-vs-paper-trainer"].value == pytest.approx(1.44 * 25_300)


def test_rows_carry_their_target_and_verdict_into_json() -> None:
    missed = Row("native searcher", 234_662.0, "sims/s", "python PUCT", 35.3, target=target("tree-vs-python"))
    plain = Row("import numpy", 61.0, "ms", "reference")
    data = json.loads(json.dumps([missed.as_dict(), plain.as_dict()]))
    assert data[0]["target"]["name"] == "tree-vs-python" and data[0]["met"] is False
    assert data[1]["target"] is None and data[1]["met"] is None
    assert check_row(data[0]) == missed.verdict()
    assert check_row(data[1]) == Verdict(None)
    assert check_row({"name": "old row", "rate": 1.0, "unit": "x"}) == Verdict(None)  # JSON before targets


SCRIPTED = '''
import argparse, json
from pathlib import Path
p = argparse.ArgumentParser()
p.add_argument("--json", type=Path)
p.add_argument("--quick", action="store_true")
a = p.parse_args()
a.json.write_text(json.dumps({{"title": "scripted", "rows": {rows}}}))
'''


def _row(name: str, ratio: float | None, goal: Target | None, met_flag: bool | None = None) -> dict[str, Any]:
    row = Row(name, 1.0, "sims/s", "reference", ratio, target=goal).as_dict()
    if met_flag is not None:
        row["met"] = met_flag  # what the script claims: run_all re-checks it
    return row


def _scripts(folder: Path, **rows: list[dict[str, Any]]) -> Path:
    folder.mkdir()
    for name, script_rows in rows.items():
        (folder / f"bench_{name}.py").write_text(SCRIPTED.format(rows=repr(script_rows)))
    return folder


def test_strict_fails_on_a_missed_target_and_says_which(run_all: dict[str, Any], tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    goal = target("tree-vs-python")
    folder = _scripts(tmp_path / "benchmarks",
                      fast=[_row("native searcher", 35.3, goal, met_flag=True), _row("python PUCT", None, None)],
                      other=[_row("native self-play", 85.0, goal)])
    out = tmp_path / "out"
    assert run_all["main"](["--quick", "--strict", "--out", str(out)], folder=folder) == 1
    err = capsys.readouterr().err
    assert "targets: 1 met, 1 MISSED" in err
    assert "MISSED fast: native searcher: 35.30x, target >= 50x (issue 3:" in err
    assert "--strict: 1 target MISSED" in err
    md = (out / "benchmarks.md").read_text()
    assert "| native searcher | 1.00 | sims/s | reference | 35.30x | >= 50x (issue 3) | **MISSED** |" in md
    assert "| native self-play | 1.00 | sims/s | reference | 85.00x | >= 50x (issue 3) | met |" in md
    assert "| python PUCT | 1.00 | sims/s | reference |  |  |  |" in md  # no target: no verdict
    assert "`tree-vs-python`: issue 3:" in md
    # the same rows without --strict: reported, exit 0
    assert run_all["main"](["--quick", "--out", str(out)], folder=folder) == 0
    assert "MISSED fast: native searcher" in capsys.readouterr().err


def test_strict_passes_when_every_target_is_met(run_all: dict[str, Any], tmp_path: Path) -> None:
    folder = _scripts(tmp_path / "benchmarks", fast=[_row("native searcher", 51.0, target("tree-vs-python")),
                                                     _row("import numpy", None, None)])
    assert run_all["main"](["--quick", "--strict", "--out", str(tmp_path / "out")], folder=folder) == 0


def test_a_target_without_its_measurement_is_missed(run_all: dict[str, Any], tmp_path: Path) -> None:
    folder = _scripts(tmp_path / "benchmarks", fast=[_row("materialize x0", None, target("materialize-vs-supply"))])
    out = tmp_path / "out"
    assert run_all["main"](["--quick", "--strict", "--out", str(out)], folder=folder) == 1
    assert "MISSED (not measured)" in (out / "benchmarks.md").read_text()


def test_exit_status_counts_failed_scripts_with_or_without_strict(run_all: dict[str, Any], tmp_path: Path) -> None:
    Script, Outcome = run_all["Script"], run_all["Outcome"]
    script = Script("x", tmp_path / "bench_x.py", True, True)
    failed = Outcome(script, "failed (exit 1; see x.log)")
    met = Outcome(script, "ok", 1.0, {"rows": [_row("a", 60.0, target("tree-vs-python"))]})
    missed = Outcome(script, "ok", 1.0, {"rows": [_row("a", 10.0, target("tree-vs-python"))]})
    exit_status = run_all["exit_status"]
    assert exit_status([met], strict=True) == 0
    assert exit_status([missed], strict=False) == 0
    assert exit_status([missed], strict=True) == 1
    assert exit_status([met, failed], strict=False) == 1


def test_learning_gain_rows_carry_issue_22s_targets_only_when_they_decide() -> None:
    import bench_learning

    point = bench_learning.gain_target("searched", {"direction": "", "estimate": 500.0})
    assert point is not None and point["name"] == "learning-gain-searched" and point["value"] == 800.0
    assert bench_learning.gain_target("policy", {"direction": ">", "estimate": 450.0})["value"] == 400.0
    assert bench_learning.gain_target("policy", {"direction": ">", "estimate": 300.0}) is None  # > 300 decides nothing
    assert bench_learning.gain_target("policy", {"direction": "<", "estimate": 300.0})["name"] == "learning-gain-policy"
    assert bench_learning.gain_target("searched", {"direction": "?", "estimate": 0.0}) is None


def test_runtime_keeps_the_previous_int8_ratio_beside_the_new_one(tmp_path: Path) -> None:
    import bench_runtime

    old = tmp_path / "runtime.json"  # the format before shared rows (c092460's reports/bench/runtime.json)
    old.write_text(json.dumps({"network": "4x48 fitted 200 steps to a synthetic task (no checkpoint)",
                               "rows": [{"runtime": "ONNX Runtime INT8", "threads": 1, "vs_ort_fp32": 2.03},
                                        {"runtime": "ONNX Runtime INT8", "threads": 2, "vs_ort_fp32": 1.72}]}))
    previous = bench_runtime.previous_int8_ratios(old)
    assert previous[("4x48", 1, False)][0] == 2.03 and previous[("4x48", 2, False)][0] == 1.72
    rows = bench_runtime.runtime_rows({"PyTorch eager FP32": 100.0, "ONNX Runtime FP32": 100.0,
                                       "ONNX Runtime INT8": 146.0}, 1, "4x48")
    rows += bench_runtime.runtime_rows({"PyTorch eager FP32": 200.0, "ONNX Runtime FP32": 200.0,
                                        "ONNX Runtime INT8": 340.0}, 2, "4x48")
    rows += bench_runtime.runtime_rows({"PyTorch eager FP32": 100.0, "ONNX Runtime FP32": 100.0,
                                        "ONNX Runtime INT8": 100.0}, 1, "6x64")  # no previous 6x64: no row
    rows += bench_runtime.runtime_rows({"ONNX Runtime FP32": 100.0, "ONNX Runtime INT8": 300.0}, 1, "4x48",
                                       int8_stem=True)  # no previous INT8-stem run: no row
    regress = bench_runtime.regression_rows(rows, previous)
    assert [r.verdict().label for r in regress] == ["MISSED", "met"]  # 1.46 vs 2.03 dropped; 1.70 vs 1.72 held
    assert all(r.extra["size"] == "4x48" and r.name.endswith("4x48") for r in regress)
    assert regress[0].rate == pytest.approx(1.46) and regress[0].ratio == pytest.approx(1.46 / 2.03)
    assert bench_runtime.previous_int8_ratios(tmp_path / "absent.json") == {}


def test_runtime_reads_the_result_run_all_kept_beside_the_new_one(tmp_path: Path) -> None:
    import bench_runtime

    kept = tmp_path / "runtime.previous.json"
    kept.write_text(json.dumps({"rows": [{"name": "ONNX Runtime INT8, 1 thread, 6x64, INT8 stem", "ratio": 1.9,
                                          "extra": {"threads": 1, "size": "6x64", "int8_stem": True}}],
                                "run": {"finished": "2026-12-01"}}))
    assert bench_runtime.previous_int8_ratios(tmp_path / "runtime.json") == {("6x64", 1, True): (1.9, "2026-12-01")}
    rows = bench_runtime.runtime_rows({"ONNX Runtime FP32": 100.0, "ONNX Runtime INT8": 150.0}, 1, "6x64",
                                      int8_stem=True)
    assert [r.name for r in rows] == ["ONNX Runtime FP32, 1 thread, 6x64, INT8 stem",
                                      "ONNX Runtime INT8, 1 thread, 6x64, INT8 stem"]
    regress = bench_runtime.regression_rows(rows, bench_runtime.previous_int8_ratios(tmp_path / "runtime.json"))
    assert len(regress) == 1 and regress[0].verdict().label == "MISSED"  # 1.5x after 1.9x
