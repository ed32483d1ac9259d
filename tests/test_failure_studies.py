"""Each failure study's --quick scale end to end: its report, tables of finite numbers, figures,
the MLflow parent run, and the generated index (issue 12)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from chesszero.studies.context import Scale
from chesszero.studies.report import StudyReport, Table, parse_tables, write_report
from chesszero.studies.run import STUDIES, run_study

REPO = Path(__file__).resolve().parents[1]


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def check_report(out: Path, name: str) -> dict:
    md = (out / f"{name}.md").read_text()
    tables = parse_tables(md)
    assert tables, f"{name}: no tables"
    for title, rows in tables.items():
        assert rows, f"{name}: table {title!r} is empty"
        numbers = [float(c) for row in rows for c in row.values() if _is_number(c)]
        assert numbers, f"{name}: table {title!r} holds no numbers"
        assert all(math.isfinite(x) for x in numbers), f"{name}: table {title!r} holds {numbers}"
    summary = json.loads((out / f"{name}.json").read_text())
    for fig in summary["figures"]:
        assert (out / fig).stat().st_size > 1000, fig
        assert f"]({fig})" in md
    assert summary["finding"] and summary["finding"] in md
    assert all(math.isfinite(v) for v in summary["headline"].values())
    machine, phases = summary["machine"], summary["phases"]
    assert machine["cpus"] >= 1 and machine["own_cpu_s"] > 0 and machine["load_15min"] >= 0
    assert 0 <= sum(phases.values()) <= summary["wall_s"]
    if name != "refit-drift":  # every campaign arm is timed on its own
        assert any(label.startswith("campaign `") for label in phases), phases
    assert StudyReport(**{**summary, "tables": []}).timing() in md
    from mlflow.tracking import MlflowClient

    run = MlflowClient(tracking_uri=summary["mlflow"]["uri"]).get_run(summary["mlflow"]["run_id"])
    assert run.info.status == "FINISHED" and run.data.tags["chesszero.study"] == name
    index = (out / "index.md").read_text()
    assert summary["finding"] in index and f"({name}.md)" in index
    assert "Not yet produced: run `chesszero study" in index  # the studies this test did not run
    return summary


@pytest.mark.parametrize("name", ["refit-drift", "late-game-targets", "draw-cycle", "promotion-loss"])
def test_quick_study_writes_a_report_of_finite_numbers(name: str, tmp_path: Path) -> None:
    run_study(name, Scale.QUICK, project=REPO, out=tmp_path / "out", work_root=tmp_path / "work")
    summary = check_report(tmp_path / "out", name)
    if name == "refit-drift":  # the gate rejects every injected fault and keeps the previous artifact
        assert summary["headline"]["faults_caught"] == summary["headline"]["faults"] == 3
        assert summary["headline"]["refit_repeat_max_diff"] == 0.0
    if name == "draw-cycle":  # the campaigns are the parent run's children, in the same store
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=summary["mlflow"]["uri"])
        exp = client.get_experiment_by_name("chesszero")
        children = client.search_runs([exp.experiment_id],
                                      f"tags.`mlflow.parentRunId` = '{summary['mlflow']['run_id']}'")
        assert len(children) == 2
    if name == "promotion-loss":  # the candidate played and the gate's decisions were recorded
        assert summary["headline"]["matches"] >= 1 and summary["headline"]["candidate_quanta"] >= 4


def test_tables_round_trip_and_reject_ragged_rows(tmp_path: Path) -> None:
    report = StudyReport("x", "X", "paper", "finding", "quick",
                         tables=[Table("T one", ["a", "b"], [["r", 0.5], ["s", None]]), Table("T two", ["c"], [[3]])])
    write_report(report, tmp_path)
    tables = parse_tables((tmp_path / "x.md").read_text())
    assert tables == {"T one": [{"a": "r", "b": "0.5"}, {"a": "s", "b": "—"}], "T two": [{"c": "3"}]}
    with pytest.raises(ValueError, match="cells"):
        Table("bad", ["a", "b"], [[1]])


def test_timing_sentence_names_phases_the_rest_and_the_load() -> None:
    report = StudyReport("x", "X", "paper", "finding", "small", wall_s=600.0,
                         phases={"campaign `a`": 240.0, "campaign `b`": 300.0},
                         machine={"cpus": 2.0, "own_cpu_s": 1080.0, "load_1min": 1.5, "load_15min": 1.9})
    assert report.timing() == ("Time: campaign `a` 4.0 min, campaign `b` 5.0 min, the rest 1.0 min. Machine: 2 "
                               "CPUs; the study's own processes kept 1.80 of them busy on average; load average "
                               "at the end 1.50 (1 min), 1.90 (15 min).")
    assert report.timing() in report.markdown()
    assert StudyReport("x", "X", "paper", "finding", "small").timing() == ""


def test_an_unknown_study_is_named() -> None:
    assert all(spec.runner is not None for spec in STUDIES.values())
    done = subprocess.run([sys.executable, "-m", "chesszero", "study", "no-such-study"], capture_output=True,
                          text=True, cwd=REPO)
    assert done.returncode == 2 and "unknown study 'no-such-study'" in done.stderr
