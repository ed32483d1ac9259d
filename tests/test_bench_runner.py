"""`benchmarks/run_all.py`: opt-in scripts, argument pass-through, the markdown
report for every row layout, `bench_replay.py --json` on a tiny store, and a
quick-scale run of real benchmarks through the runner (targets checked)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def run_all() -> dict[str, Any]:
    import runpy

    return runpy.run_path(str(REPO / "benchmarks" / "run_all.py"))


ECHO_BENCH = '''
import argparse, json, sys
from pathlib import Path
{opt_in}
p = argparse.ArgumentParser()
p.add_argument("--json", type=Path)
p.add_argument("--quick", action="store_true")
p.add_argument("--hours", type=float, default=0.0)
a = p.parse_args()
rows = [{{"name": "hours seen", "rate": a.hours, "unit": "h", "reference": "", "ratio": None, "extra": {{}}}}]
a.json.write_text(json.dumps({{"title": "echo", "rows": rows}}))
'''


def _scripts(run_all: dict[str, Any], folder: Path) -> dict[str, Any]:
    folder.mkdir()
    (folder / "bench_fast.py").write_text(ECHO_BENCH.format(opt_in=""))
    (folder / "bench_slow.py").write_text(ECHO_BENCH.format(opt_in="OPT_IN = True  # hours"))
    return {s.name: s for s in run_all["discover"](folder)}


def test_opt_in_scripts_run_only_when_named(run_all: dict[str, Any], tmp_path: Path) -> None:
    scripts = _scripts(run_all, tmp_path / "benchmarks")
    assert scripts["slow"].opt_in and not scripts["fast"].opt_in
    select = run_all["select"]
    assert [s.name for s in select(list(scripts.values()), None)] == ["fast"]
    assert [s.name for s in select(list(scripts.values()), ["slow"])] == ["slow"]
    with pytest.raises(ValueError, match=r"unknown benchmarks \['nope'\]"):
        select(list(scripts.values()), ["nope"])
    assert run_all["report_name"]([scripts["slow"]]) == "slow.md"
    assert run_all["report_name"]([scripts["fast"], scripts["slow"]]) == "benchmarks.md"


def test_the_repository_keeps_learning_out_of_the_default_set(run_all: dict[str, Any]) -> None:
    scripts = {s.name: s for s in run_all["discover"]()}
    assert scripts["learning"].opt_in
    default = {s.name for s in run_all["select"](list(scripts.values()), None)}
    assert "learning" not in default and {"core", "replay", "runtime", "search", "train"} <= default
    for name in default:  # every default benchmark runs in `make bench` and in `chesszero bench --quick`
        assert scripts[name].skip_reason(quick=False) is None, name
        assert scripts[name].skip_reason(quick=True) is None, name


def test_extra_arguments_reach_the_script(run_all: dict[str, Any], tmp_path: Path) -> None:
    scripts = _scripts(run_all, tmp_path / "benchmarks")
    out = tmp_path / "out"
    out.mkdir()
    done = run_all["run_script"](scripts["slow"], out, quick=False, timeout=60, extra=["--hours", "2.5"])
    assert done.status == "ok", done.status
    stored = json.loads((out / "slow.json").read_text())
    assert stored["rows"][0]["rate"] == 2.5
    assert stored["run"]["command"].endswith("--hours 2.5")
    assert not (out / "slow.log").exists()  # opt-in: attached to the terminal


def test_main_refuses_script_arguments_without_only(run_all: dict[str, Any], capsys) -> None:
    with pytest.raises(SystemExit) as done:
        run_all["main"](["--hours", "2"])
    assert done.value.code == 2
    assert "script arguments need --only" in capsys.readouterr().err


def test_markdown_draws_rows_of_any_layout(run_all: dict[str, Any], tmp_path: Path) -> None:
    """`bench_runtime` rows have no name/rate/unit: the report used to stop at them (KeyError)."""
    scripts = _scripts(run_all, tmp_path / "benchmarks")
    Outcome = run_all["Outcome"]
    runtime = Outcome(scripts["fast"], "ok", 12.0, {
        "title": "inference runtimes", "run": {"command": "python benchmarks/bench_runtime.py"},
        "rows": [{"runtime": "ONNX Runtime INT8", "threads": 2, "positions_per_s": 5123.4,
                  "vs_ort_fp32": 1.8, "vs_torch_fp32": 2.2},
                 {"runtime": "PyTorch | eager", "threads": 1, "positions_per_s": 901.0,
                  "vs_ort_fp32": 0.5, "vs_torch_fp32": 1.0}]})
    plain = Outcome(scripts["slow"], "ok", 3.0, {
        "title": "echo", "run": {"command": "python bench_slow.py"},
        "rows": [{"name": "hours seen", "rate": 2.0, "unit": "h", "reference": "", "ratio": None}]})
    empty = Outcome(scripts["fast"], "ok", 1.0, {"title": "nothing", "rows": []})
    md = run_all["markdown"]([runtime, plain, empty], {"cpu": "test"}, quick=False)
    assert "| runtime | threads | positions_per_s | vs_ort_fp32 | vs_torch_fp32 |" in md
    assert "| ONNX Runtime INT8 | 2 | 5,123 | 1.80 | 2.20 |" in md
    assert "PyTorch \\| eager" in md  # a pipe in a cell does not split it
    assert "| hours seen | 2.00 | h |  |  |  |  |" in md  # no target: empty target and met cells
    assert "(no rows)" in md


def test_replay_benchmark_writes_json_for_the_runner(run_all: dict[str, Any], tmp_path: Path) -> None:
    target = tmp_path / "replay.json"
    cmd = [sys.executable, str(REPO / "benchmarks" / "bench_replay.py"), "--json", str(target), "--quick",
           "--rows", "4000", "--games", "4", "--games-per-shard", "2", "--max-plies", "16",
           "--selfplay-seconds", "0", "--workers", "0", "--batches", "2", "--global-batch", "64"]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(target.read_text())
    names = [row["name"] for row in result["rows"]]
    assert "materialize x0" in names and "append (durable)" in names and "delivery (batch 64)" in names
    assert all(row["rate"] > 0 for row in result["rows"])
    rows = {row["name"]: row for row in result["rows"]}
    trainer = next(row for name, row in rows.items() if name.startswith("trainer ("))
    delivery = rows["delivery (batch 64)"]
    assert delivery["target"]["name"] == "delivery-vs-trainer"  # a ratio to the trainer measured in this run
    assert delivery["ratio"] == pytest.approx(delivery["rate"] / trainer["rate"])
    paper = rows["delivery (batch 64) vs the paper's trainer"]
    assert paper["ratio"] is None and paper["target"]["unit"] == "samples/s"  # the paper's rate: a fixed target
    assert paper["met"] == (paper["rate"] >= 1.44 * 25_300)
    # self-play skipped: the supply target is reported as not measured, never compared with a constant
    assert rows["materialize x0"]["ratio"] is None and rows["materialize x0"]["met"] is False
    script = {s.name: s for s in run_all["discover"]()}["replay"]
    md = run_all["markdown"]([run_all["Outcome"](script, "ok", 1.0, result)], {}, quick=True)
    assert "| delivery (batch 64) |" in md


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_quick_benchmarks_through_the_cli_carry_their_targets(tmp_path: Path) -> None:
    """`chesszero bench --quick` on the scripts whose quick mode is newest (runtime, web) and
    on core: each measures, every row states its target (or none) and a verdict, and the
    report has no holes. Targets may be missed on a loaded machine: no --strict here."""
    out = tmp_path / "bench"
    done = subprocess.run([sys.executable, "-m", "chesszero", "bench", "--quick", "--only", "core", "runtime", "web",
                           "--out", str(out)], cwd=REPO, capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "targets: " in done.stderr and " met, " in done.stderr
    md = (out / "benchmarks.md").read_text()
    assert "Not measured" not in md and "skipped" not in md
    for name in ("core", "runtime", "web"):
        result = json.loads((out / f"{name}.json").read_text())
        assert result["run"]["quick"] is True
        rows = result["rows"]
        assert rows and all("target" in row and "met" in row for row in rows), name
        with_target = [row for row in rows if row["target"]]
        assert with_target, f"{name}: no row carries a target"
        assert all(isinstance(row["met"], bool) for row in with_target)
        assert all(row["met"] is None for row in rows if not row["target"])
    assert md.count("| benchmark | rate | unit | compared with | ratio | target | met |") == 3


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_overlap_benchmark_times_the_trainer_at_both_thread_counts(tmp_path: Path) -> None:
    """`bench_overlap.py --quick`: the trainer alone and beside the cpu preset's one overlap
    actor at torch's default and at the campaign's count, each ratio between two rows of
    the same run, the campaign's count the one `train.threads` gives. Timings are not
    checked (a loaded machine may miss the targets)."""
    target = tmp_path / "overlap.json"
    cmd = [sys.executable, str(REPO / "benchmarks" / "bench_overlap.py"), "--json", str(target), "--quick",
           "--steps", "4", "--warmup", "1"]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    result = json.loads(target.read_text())
    meta, rows = result, result["rows"]  # report() writes the meta entries at the top level
    assert meta["overlap_actors"] == 1 and meta["size"] == "4x48" and meta["steps"] == 4
    assert meta["campaign_threads"] == min(meta["torch_default_threads"], max(1, meta["usable_cpus"] - 1))
    assert len(rows) == 5 and all(row["rate"] > 0 for row in rows)
    alone, default, chosen, play_default, play_chosen = rows
    assert alone["ratio"] is None and alone["target"] is None
    assert default["ratio"] == pytest.approx(default["rate"] / alone["rate"])
    assert f"({meta['campaign_threads']} thread" in chosen["name"]
    assert chosen["ratio"] == pytest.approx(chosen["rate"] / default["rate"])
    assert chosen["target"]["name"] == "overlap-trainer-threads" and isinstance(chosen["met"], bool)
    assert play_chosen["ratio"] == pytest.approx(play_chosen["rate"] / play_default["rate"])
    assert play_chosen["target"]["name"] == "overlap-actors-threads"
    assert play_default["unit"] == play_chosen["unit"] == "searches/s"


@pytest.mark.parametrize(("argv", "message"), [
    (["--steps", "0"], "--steps must be >= 1, got 0"),
    (["--warmup", "-1"], "--warmup must be >= 0, got -1"),
    (["--size", "3y9"], "--size '3y9': model size must look like"),
    (["--preset", "nope"], "unknown preset 'nope'"),
])
def test_overlap_benchmark_refuses_bad_arguments_by_name(argv: list[str], message: str) -> None:
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_overlap.py"), *argv], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and message in done.stderr, done.stderr[-2000:]
    assert "Traceback" not in done.stderr


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_eval_benchmark_times_the_same_matches_one_at_a_time_and_side_by_side(tmp_path: Path) -> None:
    """`bench_eval.py --quick`: the cpu preset's first evaluation rungs, played by the
    campaign's own rate_model with parallel_matches 1 and the preset's setting; the
    ratio between two rows of the same run. Timings are not checked."""
    target = tmp_path / "eval.json"
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_eval.py"), "--json", str(target),
                           "--quick"], cwd=REPO, capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    result = json.loads(target.read_text())
    assert result["preset"] == "cpu" and result["openings"] == 1 and result["visits"] == 8
    assert result["rungs"] == ["random", "greedy-r50"] and set(result["scores"]) == set(result["rungs"])
    serial, side = result["rows"]
    assert serial["ratio"] is None and serial["rate"] > 0 and side["rate"] > 0
    assert side["ratio"] == pytest.approx(side["rate"] / serial["rate"])
    assert side["target"]["name"] == "eval-parallel-matches" and isinstance(side["met"], bool)
    assert f"({result['workers']} at once)" in side["name"]


@pytest.mark.parametrize(("argv", "message"), [
    (["--openings", "0"], "--openings and --visits must be >= 1"),
    (["--preset", "nope"], "unknown preset 'nope'"),
])
def test_eval_benchmark_refuses_bad_arguments_by_name(argv: list[str], message: str) -> None:
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_eval.py"), *argv], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and message in done.stderr, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
