"""The learning benchmark (issue 10): curve extraction, the figure and table,
the final evaluation's intervals, and the quick run end to end (smoke preset,
without Prefect, in a throwaway project root) including `dvc repro
learning-figure`."""

from __future__ import annotations

import csv
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from campaign_support import REPO, VENV_BIN, campaign_env, make_dvc_project, make_root

sys.path[:0] = [str(REPO / "benchmarks"), str(REPO / "reports")]

from learning import TARGETS, markdown, redraw  # noqa: E402
from learning_curve import (  # noqa: E402
    Curve,
    conversion_columns,
    curve_from_series,
    read_csv,
    termination_shares,
    write_csv,
)
from learning_final import FinalMatch, rows_for_report, score_interval  # noqa: E402

from chesszero.campaign import metrics as M  # noqa: E402
from chesszero.evaluate.elo import rate  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"
OPPONENTS = ("random", "greedy-r50", "greedy")


def series(generations: int, *, conversion: bool) -> dict[str, dict[int, float]]:
    """Metric histories as a campaign logs them (evaluations every other generation)."""
    s: dict[str, dict[int, float]] = {M.GENERATION: {}, M.WALL_S: {}, M.NON_DECISIVE: {},
                                      M.loss_key("value"): {}, M.loss_key("policy"): {}}
    for g in range(generations):
        s[M.GENERATION][g] = g
        s[M.WALL_S][g] = 90.0 * (g + 1)
        s[M.NON_DECISIVE][g] = 1.0 - 0.1 * g
        s[M.loss_key("value")][g] = 1.1 - 0.05 * g
        s[M.loss_key("policy")][g] = 3.3 - 0.1 * g
        for t, n in (("threefold_repetition", g), ("ply_cap", 4 - g), ("checkmate", 1)):
            s.setdefault(M.termination_key(t), {})[g] = float(max(n, 0))
        if g % 2 == 0:
            for mode in M.EVAL_MODES:
                for rung in OPPONENTS:
                    s.setdefault(M.score_key(mode, rung), {})[g] = 0.5 + 0.1 * g
        if conversion and g > 0:
            s.setdefault("selfplay/conversion", {})[g] = 0.25 * g
            s.setdefault("selfplay/conversion_opportunities", {})[g] = 4.0
            s.setdefault("conversion/searched/random", {})[g] = 0.5
            s.setdefault("conversion/searched/random_opportunities", {})[g] = 2.0
    s["unrelated/metric"] = {0: 1.0}
    return s


def match(opponent: str, mode: str, score: float) -> FinalMatch:
    return FinalMatch(opponent=opponent, mode=mode, visits=None if mode == "policy" else 64, games=100,
                      wins=int(100 * score), draws=0, losses=100 - int(100 * score), score=score,
                      score_lo=max(0.0, score - 0.1), score_hi=min(1.0, score + 0.1), elo=0.0, elo_lo=-50.0,
                      elo_hi=50.0, elo_bound=False, rung_rating=0.0,
                      terminations={"checkmate": int(100 * score), "ply_cap": 100 - int(100 * score)},
                      final_material=3.0, conversion_opportunities=10, conversion_converted=7, seconds=1.0)


def summary(matches: list[FinalMatch]) -> dict[str, Any]:
    return {"campaign": "unit", "preset": "cpu", "hours": 2.0, "command": "python benchmarks/bench_learning.py",
            "machine": {"cpu": "test cpu", "usable_cpus": 2, "cpus": 2}, "git": {"commit": "abc", "dirty": False},
            "wall": {"campaign_s": 7200.0, "campaign_recorded_s": 7100.0, "final_evaluation_s": 600.0},
            "final_artifact": "runs/unit/artifacts/gen_0003/int8.onnx", "active_generation": 3,
            "final_evaluation": {"openings": 50, "games_per_match": 100, "visits": 64, "max_plies": 300,
                                 "opponents": list(OPPONENTS), "ladder": "ladder anchor test",
                                 "matches": [m.to_dict() for m in matches],
                                 "joint": {"searched": {"describe": "joint 1234 [1200, 1260] over random"}}}}


def test_curve_rows_are_generations_and_columns_are_metric_keys(tmp_path: Path) -> None:
    curve = curve_from_series(series(4, conversion=True))
    assert curve.generations == [0, 1, 2, 3]
    assert curve.column("wall_min") == [1.5, 3.0, 4.5, 6.0]
    assert "unrelated/metric" not in curve.columns
    assert curve.rungs("searched") == sorted(OPPONENTS)
    assert math.isnan(curve.rows[1][M.score_key("searched", "greedy")])  # not evaluated at generation 1
    assert conversion_columns(curve) == ["selfplay/conversion", "conversion/searched/random"]
    assert curve.has("selfplay/conversion_opportunities")  # counts kept in the CSV, not drawn as rates
    shares = termination_shares(curve)
    for i in range(4):
        assert sum(shares[t][i] for t in shares) == pytest.approx(1.0)
    again = read_csv(write_csv(curve, tmp_path / "curve.csv"))
    assert again.columns == curve.columns and again.generations == curve.generations
    for a, b in zip(again.rows, curve.rows, strict=True):
        assert all((math.isnan(a[k]) and math.isnan(b[k])) or a[k] == b[k] for k in curve.columns)


def test_curve_without_conversion_metrics_has_none() -> None:
    curve = curve_from_series(series(3, conversion=False))
    assert conversion_columns(curve) == []
    assert not any(c.startswith(("selfplay/conversion", "conversion/")) for c in curve.columns)


def test_bad_curve_files_name_the_problem(tmp_path: Path) -> None:
    bad = tmp_path / "curve.csv"
    bad.write_text("generation,wall_min,x\n0,1\n")
    with pytest.raises(ValueError, match=r"curve.csv:2: 2 cells for 3 columns"):
        read_csv(bad)
    bad.write_text("generation,wall_min\n1,1\n0,2\n")
    with pytest.raises(ValueError, match="increasing"):
        read_csv(bad)
    with pytest.raises(ValueError, match="starts with"):
        Curve(("wall_min", "generation"), ())


def test_figure_and_table_from_a_saved_curve(tmp_path: Path) -> None:
    folder = tmp_path / "unit"
    curve = curve_from_series(series(4, conversion=True))
    write_csv(curve, folder / "curve.csv")
    matches = [match(o, mode, s) for mode in ("policy", "searched")
               for o, s in zip(OPPONENTS, (0.97, 0.8, 0.6), strict=True)]
    (folder / "summary.json").write_text(json.dumps(summary(matches)))
    figure, table = redraw(folder)
    assert figure.read_bytes().startswith(PNG)
    text = table.read_text()
    for o in OPPONENTS:
        assert f"| {o} | policy | 100 |" in text and f"| {o} | searched (64 visits) | 100 |" in text
    assert "| final score vs random, searched | >= 0.95 | 0.97 | met |" in text
    assert "| final score vs greedy, searched | >= 0.75 | 0.60 | not met |" in text
    assert "| self-play non-decisive rate, last generation | < 0.5 | 0.70 | not met |" in text
    assert "| self-play conversion rate, last generation | >= 0.9 | 0.75 | not met |" in text
    assert "conversion self-play" in text and "7/10" in text
    assert "- searched: joint 1234 [1200, 1260] over random" in text
    assert text.count("\n| 3 | 6.0 |") == 1  # one curve row per generation


def progressive_series(generations: int) -> dict[str, dict[int, float]]:
    """A run whose 4x48 -> 6x64 candidate starts at generation 1, fails its
    match at 2, passes at 3 and 4 and is promoted at 4."""
    s = series(generations, conversion=False)
    s[M.PROGRESSIVE_STAGE] = {g: float(g >= 4) for g in range(generations)}
    s[M.CANDIDATE_STARTED] = {1: 1.0}
    s[M.PROMOTION_SCORE] = {2: 0.40, 3: 0.55, 4: 0.60}
    s[M.PROMOTION_ELO] = {2: -70.0, 3: 35.0, 4: 70.0}
    s[f"{M.PROMOTION_ELO}_lo"] = {2: -150.0, 3: -40.0, 4: 0.0}
    s[f"{M.PROMOTION_ELO}_hi"] = {2: 10.0, 3: 110.0, 4: 140.0}
    s[M.PROMOTION_PASSES] = {2: 0.0, 3: 1.0, 4: 2.0}
    s[M.PROMOTION_PROMOTED] = {2: 0.0, 3: 0.0, 4: 1.0}
    return s


def test_progressive_handoff_is_marked_and_tabled(tmp_path: Path) -> None:
    from learning import size_events

    folder = tmp_path / "prog"
    curve = curve_from_series(progressive_series(6))
    write_csv(curve, folder / "curve.csv")
    run_summary = {**summary([match("random", "searched", 1.0)]), "sizes": ["4x48", "6x64"]}
    events = size_events(curve, run_summary)
    assert [(e.generation, e.kind, e.size) for e in events] == [(1, "candidate", "6x64"), (4, "promoted", "6x64")]
    assert events[1].wall_min == pytest.approx(7.5)
    (folder / "summary.json").write_text(json.dumps(run_summary))
    figure, table = redraw(folder)
    assert figure.read_bytes().startswith(PNG)
    text = table.read_text()
    assert "Sizes: 4x48 -> 6x64." in text
    assert "- generation 1 (3.0 min): 6x64 candidate starts" in text
    assert "- generation 4 (7.5 min): 6x64 promoted" in text
    assert "| 2 | 4.5 | 0.400 | -70 [-150, 10] | 0 | no |" in text
    assert "| 4 | 7.5 | 0.600 | 70 [0, 140] | 2 | yes |" in text
    # a one-size run has no such section
    assert "Progressive sizing" not in markdown(curve_from_series(series(3, conversion=False)), summary([]))


def test_comparison_of_a_run_against_its_baseline(tmp_path: Path) -> None:
    from learning_compare import compare, verdict
    from learning_compare import main as compare_main

    base, run = tmp_path / "fixed", tmp_path / "prog"
    write_csv(curve_from_series(series(4, conversion=False)), base / "curve.csv")
    write_csv(curve_from_series(progressive_series(6)), run / "curve.csv")
    (base / "summary.json").write_text(json.dumps(
        {**summary([match("random", "searched", 0.9), match("greedy", "searched", 0.8),
                    match("random", "policy", 0.7)]), "campaign": "fixed", "sizes": ["6x64"]}))
    (run / "summary.json").write_text(json.dumps(
        {**summary([match("random", "searched", 0.95), match("greedy", "searched", 0.75),
                    match("random", "policy", 0.5)]), "campaign": "prog", "sizes": ["4x48", "6x64"]}))
    figure, table = compare(base, run)
    assert figure.read_bytes().startswith(PNG)
    text = table.read_text()
    assert "against the baseline `fixed`" in text and "sizes 4x48 -> 6x64" in text
    assert "| random | searched | 0.900 [0.800, 1.000] | 0.950 [0.850, 1.000] | +0.050 | met (target) |" in text
    assert "| greedy | searched | 0.800 [0.700, 0.900] | 0.750 [0.650, 0.850] | -0.050 | within interval (target) |" \
        in text
    assert "| random | policy | 0.700 [0.600, 0.800] | 0.500 [0.400, 0.600] | -0.200 | not a target |" in text
    assert "at least the baseline's: **met**" in text
    assert "6x64 promoted" in text
    assert verdict({"score": 0.5, "score_hi": 0.6}, {"score": 0.7}) == "not met"
    assert verdict(None, {"score": 0.7}) == "not measured"
    assert compare_main([str(tmp_path / "missing"), str(run)]) == 2


def test_a_comparison_of_two_recipes_at_the_same_sizes_names_no_target(tmp_path: Path) -> None:
    from learning_compare import compare

    base, run = tmp_path / "head", tmp_path / "odds"
    for folder, name, scores in ((base, "head", (0.9, 0.7)), (run, "odds", (0.6, 0.75))):
        write_csv(curve_from_series(progressive_series(6)), folder / "curve.csv")
        (folder / "summary.json").write_text(json.dumps(
            {**summary([match("random", "searched", scores[0]), match("random", "policy", scores[1])]),
             "campaign": name, "sizes": ["4x48", "6x64"]}))
    text = compare(base, run)[1].read_text()
    assert "Both runs have the same sizes (4x48 -> 6x64)" in text
    assert "issue 11" not in text and "(target)" not in text and "not a target" not in text
    assert "| random | searched | 0.900 [0.800, 1.000] | 0.600 [0.500, 0.700] | -0.300 | worse |" in text
    assert "| random | policy | 0.700 [0.600, 0.800] | 0.750 [0.650, 0.850] | +0.050 | no worse |" in text


def test_targets_are_not_measured_without_their_data() -> None:
    curve = curve_from_series(series(2, conversion=False))
    text = markdown(curve, summary([]))
    assert text.count("| not measured |") == len(TARGETS) - 1  # only the non-decisive rate is there
    assert "recorded no conversion metrics" in text


def test_score_interval_follows_the_bootstrap_and_bounds() -> None:
    elo = rate((5, 10, 20, 10, 5), 1000.0, resamples=2000)
    lo, hi = score_interval(elo)
    assert lo < elo.score < hi and hi - lo < 0.3
    swept = rate((0, 0, 0, 0, 50), 1000.0)
    lo, hi = score_interval(swept)
    assert hi == 1.0 and 0.95 < lo < 1.0  # one-sided Clopper-Pearson bound over 100 games
    lost = rate((50, 0, 0, 0, 0), 1000.0)
    assert score_interval(lost)[0] == 0.0 and score_interval(lost)[1] < 0.05
    rows = rows_for_report([match("random", "searched", 0.9)])
    assert rows[0]["name"] == "vs random, searched (64 visits)" and rows[0]["rate"] == 0.9


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_quick_learning_benchmark_end_to_end(tmp_path: Path) -> None:
    root = make_root(tmp_path / "root")
    env = campaign_env(root)
    name = "learn-ci"
    cmd = [sys.executable, str(REPO / "benchmarks" / "run_all.py"), "--out", str(root / "bench"),
           "--only", "learning", "--quick", "--no-prefect", "--hours", "0.01", "--root", str(root),
           "--name", name]
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=1100)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    out = root / "reports" / "learning" / name
    state = json.loads((root / "runs" / name / "state.json").read_text())
    assert state["finished"] and state["generation"] >= 1
    with open(out / "curve.csv") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["generation"]) for r in rows] == list(range(state["generation"]))
    assert all(float(r["wall_min"]) > 0 for r in rows)
    assert all(r[M.NON_DECISIVE] != "" for r in rows)
    assert all(r[M.loss_key("value")] != "" for r in rows)
    assert any(r.get(M.score_key("searched", "random"), "") != "" for r in rows)  # smoke: evaluated each gen

    result = json.loads((out / "summary.json").read_text())
    assert result["campaign"] == name and result["preset"] == "smoke" and result["generations"] == len(rows)
    assert result["machine"]["nproc"] >= 1 and result["machine"]["cpu"]
    assert len(result["git"]["commit"]) == 40
    assert result["wall"]["campaign_s"] > 0 and result["wall"]["final_evaluation_s"] > 0
    played = {(m["opponent"], m["mode"]): m for m in result["final_evaluation"]["matches"]}
    assert set(played) == {(o, mode) for o in OPPONENTS for mode in ("policy", "searched")}
    for m in played.values():
        assert m["games"] == 2 and m["wins"] + m["draws"] + m["losses"] == 2
        assert m["score_lo"] <= m["score"] <= m["score_hi"]
        assert sum(m["terminations"].values()) == 2
    assert played[("random", "searched")]["visits"] == 64 and played[("random", "policy")]["visits"] is None
    joint = result["final_evaluation"]["joint"]
    assert set(joint) == {"policy", "searched"} and all(j["games"] == 6 for j in joint.values())
    assert "c_puct_eval" in result["final_evaluation"]["search"]
    assert (out / "learning.png").read_bytes().startswith(PNG)
    text = (out / "learning.md").read_text()
    assert all(o in text for o in OPPONENTS) and "## Targets" in text and "- searched: joint" in text
    games = root / "runs" / name / "evals" / "final-benchmark"
    assert len(list(games.glob("*.pgn"))) == 6

    bench = json.loads((root / "bench" / "learning.json").read_text())
    assert len(bench["rows"]) == 7 and bench["run"]["command"].endswith(f"--name {name}")
    assert (root / "bench" / "learning.md").exists() and not (root / "bench" / "benchmarks.md").exists()

    # `dvc repro learning-figure` redraws the figure and table from the saved curve
    make_dvc_project(root)
    for rel in ("reports/learning.py", "reports/learning_curve.py"):
        shutil.copy(REPO / rel, root / rel)
    dvc_yaml = root / "dvc.yaml"
    dvc_yaml.write_text(dvc_yaml.read_text().replace("learning_run: learning-2h", f"learning_run: {name}"))
    before = text
    (out / "learning.png").unlink()
    (out / "learning.md").unlink()
    repro = subprocess.run([str(VENV_BIN / "dvc"), "repro", "learning-figure"], cwd=root, env=env,
                           capture_output=True, text=True, timeout=300)
    assert repro.returncode == 0, repro.stdout + repro.stderr
    assert (out / "learning.png").read_bytes().startswith(PNG)
    assert (out / "learning.md").read_text() == before
