"""The learning benchmark (issues 10 and 22): curve extraction, the figure and
table (control arm, gains, policy-only stalemates and conversion, issue 22's
targets), the final evaluation's intervals, the recipe diff that tags the
MLflow run, and the quick run end to end (smoke preset, without Prefect, in a
throwaway project root: both arms climb the ladder, the MLflow run is logged)
including `dvc repro learning-figure`."""

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

from learning import redraw  # noqa: E402
from learning_curve import (  # noqa: E402
    Curve,
    conversion_columns,
    curve_from_series,
    read_csv,
    termination_shares,
    write_csv,
)
from learning_final import rows_for_report, score_interval  # noqa: E402
from learning_support import OPPONENTS, climb_summary, match, progressive_series, series, summary  # noqa: E402
from learning_table import markdown  # noqa: E402
from learning_targets import TARGETS  # noqa: E402

from chesszero.campaign import metrics as M  # noqa: E402
from chesszero.evaluate.elo import rate  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"


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
    """A run from before issue 22 (no control arm, one joint rating per mode) still draws."""
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
        assert f"| final | {o} | policy | 100 |" in text and f"| final | {o} | searched (64 visits) | 100 |" in text
    assert "| policy only: final score vs greedy | >= 0.6 | 0.60 | met |" in text
    assert "| searched: final minus control, joint Elo | >= 800 | - | not measured |" in text
    assert "| self-play non-decisive rate, last 10 generations | < 0.4 | 0.85 | not met |" in text
    assert "conversion self-play" in text and "7/10" in text
    assert "| searched | joint 1234 [1200, 1260] over random | not played | not measured (no control arm) |" in text
    assert "no control arm (a run from before issue 22)" in text
    assert text.count("\n| 3 | 6.0 |") == 1  # one curve row per generation


def test_the_control_arm_gains_and_policy_only_play_are_reported(tmp_path: Path) -> None:
    folder = tmp_path / "climb"
    write_csv(curve_from_series(series(4, conversion=True)), folder / "curve.csv")
    (folder / "summary.json").write_text(json.dumps(climb_summary()))
    figure, table = redraw(folder)
    assert figure.read_bytes().startswith(PNG)
    text = table.read_text()
    assert "| searched | joint 700 [650, 750] | joint 120 [90, 150] | +580 [+520, +640] |" in text
    assert "| policy | joint 250 [220, 280] | joint < -300 | > +520 (control is a bound (< -300)) |" in text
    assert "the control arm: the campaign's untrained network (`runs/unit/artifacts/initial/int8.onnx`)" in text
    assert "stops after 2 consecutive rungs scoring below 0.25" in text
    assert "| control | sf-n1-r30 | searched (64 visits) | 100 |" in text
    # policy-only stalemates, leads won, mates in one taken (a run that did not count them: "-")
    assert "| final | random | 100 | 0.730 | 47 | 7/10 | 70% | 12/40 |" in text
    assert "| final | all | 300 | 0.343 | 52 | 21/30 | 70% | 15/49 |" in text
    assert "| control | random | 100 | 0.500 | 3 | 7/10 | 70% | - |" in text
    assert "| searched: final score vs sf-n1 | >= 0.5 | 0.10 | not met |" in text
    assert "| searched: final minus control, joint Elo | >= 800 | 580 | not met |" in text
    assert "| policy only: final minus control, joint Elo | >= 400 | > 520 | met |" in text
    assert "| policy only: stalemates per 100 games vs random | <= 5 | 47 | not met |" in text
    assert "recipe diff from the cpu preset (1 keys): `search.root=gumbel`" in text


def test_a_bound_short_of_its_target_is_undetermined() -> None:
    from learning_targets import Measured, Target

    at_least = Target("gain", ">=", 800, lambda c, s: None)
    assert at_least.verdict(Measured(900, ">")) == "met"
    assert at_least.verdict(Measured(500, ">")) == "undetermined (a bound)"
    assert at_least.verdict(Measured(500, "<")) == "not met"
    assert at_least.verdict(Measured(900, "<")) == "undetermined (a bound)"
    at_most = Target("stalemates", "<=", 5, lambda c, s: None)
    assert at_most.verdict(Measured(5)) == "met" and at_most.verdict(Measured(6)) == "not met"
    assert at_most.verdict(None) == "not measured"


def test_progressive_handoff_is_marked_and_tabled(tmp_path: Path) -> None:
    from learning_summary import size_events

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
    assert "Progressive sizing" not in markdown(curve_from_series(series(3, conversion=False)), summary([]), "x.png")


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


def _speed(perft: float, train: float) -> dict:
    return {"perft_nodes_per_s": perft, "train_samples_per_s": train, "size": "4x48",
            "measured_at": "2026-12-03T07:00:00+00:00"}


def test_host_speed_is_compared_and_shown_per_run(tmp_path: Path) -> None:
    """A run records its host's speed before and after; the table says when the host changed
    and the ablation table shows each run's host (a run without a probe says so)."""
    from host_speed import HostSpeed
    from learning_compare import Run, ablations_markdown
    from learning_table import host_speed_line

    fast, slow = HostSpeed.from_dict(_speed(400e6, 860.0)), HostSpeed.from_dict(_speed(140e6, 300.0))
    assert slow.ratios(fast) == pytest.approx((0.35, 300 / 860))
    assert slow.differs(fast) and fast.differs(slow) and not fast.differs(fast)
    near = HostSpeed.from_dict(_speed(400e6 * 1.15, 860.0 * 0.85))
    assert not near.differs(fast) and near.differs(fast, drift=0.1)
    assert HostSpeed.from_dict(fast.to_dict()) == fast

    steady = {"before": fast.to_dict(), "after": fast.to_dict(), "changed": False}
    changed = {"before": fast.to_dict(), "after": slow.to_dict(), "changed": True}
    base = climb_summary()
    assert host_speed_line(base) == "- host speed: not probed (the run predates benchmarks/host_speed.py)"
    line = host_speed_line({**base, "host_speed": steady})
    assert line.startswith("- host speed: before the campaign perft 400 M nodes/s, training 860 samples/s (4x48)")
    assert "changed" not in line
    assert "the host's speed changed during the run" in host_speed_line({**base, "host_speed": changed})

    folders = []
    for name, host in (("old", None), ("steady", steady), ("moved", changed)):
        folder = tmp_path / name
        write_csv(curve_from_series(series(3, conversion=False)), folder / "curve.csv")
        (folder / "summary.json").write_text(json.dumps(
            {**base, "campaign": name, **({"host_speed": host} if host else {})}))
        folders.append(folder)
    rows = ablations_markdown([Run.load(f) for f in folders]).splitlines()
    from learning_compare import markdown as compare_markdown

    runs = {f.name: Run.load(f) for f in folders}
    assert "Host speed: not probed for `old`" in compare_markdown(runs["old"], runs["steady"])
    assert "Host speed: the same within 20% (perft 1.00x, training 1.00x" in \
        compare_markdown(runs["steady"], runs["steady"])
    slow_run = Run.load(folders[1])
    slow_run.summary["host_speed"] = {"before": slow.to_dict(), "after": slow.to_dict(), "changed": False}
    assert "**Host speed differs** (perft 0.35x, training 0.35x" in compare_markdown(runs["steady"], slow_run)

    for bad, named in (({"before": fast.to_dict()}, "host_speed.after"),
                       ({"before": {**fast.to_dict(), "train_samples_per_s": "fast"}, "after": fast.to_dict()},
                        "host_speed.before: rates must be numbers"),
                       ({"before": {**fast.to_dict(), "perft_nodes_per_s": 0}, "after": fast.to_dict()},
                        "host_speed.before: rates must be positive")):
        with pytest.raises(ValueError, match=named):
            host_speed_line({**base, "host_speed": bad})
    refused = subprocess.run([sys.executable, str(REPO / "benchmarks" / "host_speed.py"), "--size", "4by48"],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "--size '4by48'" in refused.stderr
    head = next(i for i, row in enumerate(rows) if row.startswith("| run |"))
    assert rows[head].split(" | ")[4] == "host training samples/s"
    cells = {row.split(" | ")[0].lstrip("| "): row.split(" | ")[4] for row in rows[head + 2:head + 5]}
    assert cells == {"old": "not probed", "steady": "860 -> 860", "moved": "860 -> 300 (changed)"}
    # the budget beside the campaign's own minutes (a run capped by generations used less)
    assert rows[head].split(" | ")[2] == "hours: budget / campaign minutes"
    budget = {row.split(" | ")[0].lstrip("| "): row.split(" | ")[2] for row in rows[head + 2:head + 5]}
    assert budget == {name: "2.0 / 118" for name in ("old", "steady", "moved")}  # climb_summary's
    timed = Run.load(folders[1])
    timed.summary.update(hours=3.0, wall={"campaign_recorded_s": 3480.4})
    untimed = Run.load(folders[0])
    del untimed.summary["wall"]
    cells = [row.split(" | ")[2] for row in ablations_markdown([timed, untimed]).splitlines()[head + 2:head + 4]]
    assert cells == ["3.0 / 58", "2.0 / -"]


def test_the_stage_table_shows_time_per_stage_and_old_runs_say_they_lack_it() -> None:
    from learning_table import stage_table

    assert "predates the per-stage record" in stage_table({}, 10)[0]
    rows = [{"stage": "train quantum", "spans": 10, "seconds": 600.0, "share": 0.75, "nested": False},
            {"stage": "snapshot", "spans": 1, "seconds": 6.0, "share": None, "nested": True},
            {"stage": "evaluate", "spans": 10, "seconds": 200.0, "share": 0.25, "nested": False}]
    table = stage_table({"stages": rows}, 10)
    assert table[2] == "| train quantum | 10 | 10.0 | 60.0 | 75% |"
    assert table[3] == "| snapshot | 1 | 0.1 | 0.6 | inside another stage |"


def test_publications_that_fine_tuned_are_counted_from_the_curve() -> None:
    from learning_table import qat_lines

    data = series(4, conversion=False)
    assert qat_lines(curve_from_series(data)) == []  # runs before the metric existed say nothing
    data[M.PUBLISH_QAT_STEPS] = {0: 0.0, 1: 10.0, 2: 0.0, 3: 0.0}
    data[M.fidelity_key("agreement")] = {0: 0.981, 1: 0.962, 2: 0.975, 3: 0.99}
    curve = curve_from_series(data)
    assert curve.has(M.PUBLISH_QAT_STEPS) and curve.has(M.fidelity_key("agreement"))
    assert qat_lines(curve)[0] == ("Publications that ran quantisation-aware fine-tuning: 1 of 4 "
                                   "(`publish/qat_steps` > 0); the gate's top-1 agreement was 0.962 at its lowest.")


def test_targets_are_not_measured_without_their_data() -> None:
    curve = curve_from_series(series(2, conversion=False))
    text = markdown(curve, summary([]), "learning.png")
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
           "--only", "learning", "--quick", "--no-prefect", "--hours", "0.05", "--generations", "1",
           "--json", str(tmp_path / "mine.json"),  # a user's own --json leaves run_all's in place
           "--root", str(root), "--name", name]  # one generation, whatever the machine's load
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=1100)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ours = json.loads((root / "bench" / "learning.json").read_text())
    assert json.loads((tmp_path / "mine.json").read_text())["rows"] == ours["rows"]

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
    host = result["host_speed"]  # probed before the campaign and after the final evaluation
    for when in ("before", "after"):
        assert host[when]["perft_nodes_per_s"] > 1e5 and host[when]["train_samples_per_s"] > 1
        assert host[when]["size"] == "2x16"
    assert isinstance(host["changed"], bool)
    assert result["wall"]["campaign_s"] > 0 and result["wall"]["final_evaluation_s"] > 0
    stages = {row["stage"]: row for row in result["stages"]}  # where the campaign's time went
    assert {"bootstrap", "train quantum", "publish", "evaluate"} <= set(stages)
    assert stages["train quantum"]["spans"] == result["generations"]
    assert math.isclose(sum(r["share"] for r in result["stages"] if not r["nested"]), 1.0, abs_tol=1e-3)
    assert result["control_artifact"].endswith(f"runs/{name}/artifacts/initial/int8.onnx")
    assert result["recipe_diff"]["evaluate.openings"] == "1"  # the smoke preset against the cpu preset
    final = result["final_evaluation"]
    order = final["climb"]["order"]
    assert order[:6] == ["random", "greedy", "sf-n1-r30", "sf-n1-r10", "sf-n1", "sf-n300"]
    for arm in ("final", "control"):  # both arms, both modes, each climbing on its own
        for mode in ("policy", "searched"):
            climbed = [m for m in final["matches"] if m["arm"] == arm and m["mode"] == mode]
            assert [m["opponent"] for m in climbed] == order[:len(climbed)] and climbed
            scores = [m["score"] for m in climbed]
            assert len(climbed) == len(order) or (scores[-1] < 0.25 and scores[-2] < 0.25)
            assert not any(a < 0.25 and b < 0.25 for a, b in zip(scores[:-2], scores[1:-1], strict=True))
            assert final["joints"][arm][mode]["games"] == 2 * len(climbed)
    for m in final["matches"]:
        assert m["games"] == 2 and m["wins"] + m["draws"] + m["losses"] == 2
        assert m["score_lo"] <= m["score"] <= m["score_hi"]
        assert sum(m["terminations"].values()) == 2
    assert final["joint"] == final["joints"]["final"]
    assert set(final["gain"]) == {"policy", "searched"}
    for gain in final["gain"].values():
        assert gain["direction"] in ("", ">", "<", "?") and gain["describe"]
    first = final["matches"][0]
    assert first["arm"] == "final" and first["opponent"] == "random" and first["visits"] is None
    assert "c_puct_eval" in final["search"]
    assert (out / "learning.png").read_bytes().startswith(PNG)
    text = (out / "learning.md").read_text()
    assert "## Targets" in text and "final minus control" in text and "## Policy-only play" in text
    assert "| control | random | policy | 2 |" in text
    assert "- host speed: before the campaign perft " in text
    assert "## Where the campaign's time went" in text and "| train quantum | 1 |" in text
    fit = result["own_targets"]  # both arms scored on the run's own self-play positions
    assert fit["generations"] == [0, state["generation"] - 1] and fit["rows"] > 0
    for arm in ("final", "control"):
        agreement, recall = fit[arm]["target_agreement"], fit[arm]["mate_recall"]
        assert 0 <= agreement["agree"] <= agreement["positions"] <= fit["rows"]
        assert recall["rows"] == fit["rows"] and 0 <= recall["top_mates"] <= recall["positions"]
        risk = fit[arm]["stalemate_risk"]
        assert risk["rows"] == fit["rows"] and 0 <= risk["top_stalemates"] <= risk["positions"] <= fit["rows"]
    assert "## Fit to its own targets" in text and "| control |" in text.split("## Fit to its own targets")[1]
    games = root / "runs" / name / "evals" / "final-benchmark"
    assert len(list(games.glob("*.pgn"))) == len(final["matches"])
    assert (games / "control_searched_vs_random.pgn").is_file()

    bench = json.loads((root / "bench" / "learning.json").read_text())
    assert len(bench["rows"]) == len(final["matches"]) + 3  # + the two gains + generations
    assert bench["run"]["command"].endswith(f"--name {name}")
    assert (root / "bench" / "learning.md").exists() and not (root / "bench" / "benchmarks.md").exists()

    # the benchmark is an MLflow run tagged with its recipe diff, ratings and gains as metrics
    from mlflow.tracking import MlflowClient

    from chesszero.campaign.tracking import tracking_uri

    client = MlflowClient(tracking_uri(root))
    exp = client.get_experiment_by_name("learning-benchmark")
    (run,) = client.search_runs([exp.experiment_id], f"tags.`chesszero.campaign` = '{name}'")
    assert run.data.tags["recipe.evaluate.openings"] == "1" and run.data.tags["recipe.base"] == "cpu"
    assert {"final/searched", "control/searched", "final/policy", "control/policy"} <= set(run.data.metrics)
    assert run.data.metrics["host/before/train_samples_per_s"] == host["before"]["train_samples_per_s"]
    assert {a.path for a in client.list_artifacts(run.info.run_id)} >= {"summary.json", "learning.md"}

    # `dvc repro learning-figure` redraws the figure and table from the saved curve
    make_dvc_project(root)
    for rel in ("reports/learning.py", "reports/learning_curve.py", "reports/learning_summary.py",
                "reports/learning_table.py", "reports/learning_targets.py", "reports/learning_host.py"):
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

    # one generation re-evaluated under the same protocol (benchmarks/eval_generation.py): the final
    # artifact's generation replays the final arm's games exactly; a missing generation is refused
    generation = result["active_generation"]
    assert Path(result["final_artifact"]).parent.name == f"gen_{generation:04d}"
    regen = subprocess.run([sys.executable, str(REPO / "benchmarks" / "eval_generation.py"), "--name", name,
                            "--generation", str(generation), "--root", str(root), "--openings", "1"],
                           cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert regen.returncode == 0, regen.stdout[-3000:] + regen.stderr[-3000:]
    again = json.loads((out / f"generation_{generation}.json").read_text())
    assert again["campaign"] == name and again["artifact"] == result["final_artifact"]
    key = ("opponent", "mode", "wins", "draws", "losses", "score")
    assert [[m[k] for k in key] for m in again["matches"]] == \
        [[m[k] for k in key] for m in final["matches"] if m["arm"] == "final"]
    assert again["joint"] == final["joints"]["final"]
    missing = subprocess.run([sys.executable, str(REPO / "benchmarks" / "eval_generation.py"), "--name", name,
                              "--generation", "999", "--root", str(root)],
                             cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "generation 999 of learn-ci has no published artifact" in missing.stderr
    bogus = subprocess.run([sys.executable, str(REPO / "benchmarks" / "eval_generation.py"), "--name", name,
                            "--generation", str(generation), "--root", str(root), "--search", "rooot=puct"],
                           cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert bogus.returncode == 2 and "--search rooot=puct" in bogus.stderr and "rooot" in bogus.stderr
    assert not list(out.glob(f"generation_{generation}-*.json"))


def test_fit_to_own_targets_is_reported_and_compared(tmp_path: Path) -> None:
    """A run that measured how its networks fit its own targets shows it in its report and in the
    ablation table; a run from before shows nothing / "-"."""
    from learning_compare import Run, ablations_markdown
    from learning_table import fit_lines

    def arm(agree: int, top: int) -> dict[str, Any]:
        return {"target_agreement": {"positions": 200, "agree": agree, "target_prob_median": 0.0712},
                "mate_recall": {"rows": 1000, "positions": 20, "target_top_mates": 20, "top_mates": top,
                                "mass_median": 0.04, "mass_mean": 0.06}}

    fit = {"generations": [30, 39], "rows": 1000, "sample_fraction": 0.15, "final": arm(44, 5), "control": arm(20, 1)}
    assert fit_lines(climb_summary()) == []
    text = "\n".join(fit_lines({**climb_summary(), "own_targets": fit}))
    assert "generations 30-39 (1000 rows)" in text and "seeded 15% sample" in text
    assert "| final | 44/200 (22%) | 0.071 | 20 | 20 | 5 (25%) | 0.040 |" in text
    assert "| control | 20/200 (10%) | 0.071 | 20 | 20 | 1 (5%) | 0.040 |" in text
    assert "stalemating" not in text  # a run from before stalemate risk was measured
    fit["final"]["stalemate_risk"] = {"rows": 1000, "positions": 8, "target_top_stalemates": 0,
                                      "top_stalemates": 2, "target_mass_mean": 0.0123, "mass_mean": 0.1}
    text = "\n".join(fit_lines({**climb_summary(), "own_targets": fit}))
    assert "| final | 8 | 0 | 2 (25%) | 0.012 | 0.100 |" in text and "| control | 8 |" not in text
    folders = []
    for name, extra in (("before", {}), ("after", {"own_targets": fit})):
        folder = tmp_path / name
        write_csv(curve_from_series(series(3, conversion=False)), folder / "curve.csv")
        (folder / "summary.json").write_text(json.dumps({**climb_summary(), "campaign": name, **extra}))
        folders.append(folder)
    rows = ablations_markdown([Run.load(f) for f in folders]).splitlines()
    head = next(i for i, row in enumerate(rows) if row.startswith("| run |"))
    assert rows[head].rstrip(" |").endswith("own targets' top move matched: final / control")
    assert [row.rstrip(" |").rsplit(" | ", 1)[1] for row in rows[head + 2:head + 4]] == ["-", "22% / 10%"]
