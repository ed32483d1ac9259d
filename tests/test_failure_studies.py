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
    check_values(name, summary, tables_of(tmp_path / "out", name), tmp_path / "work")


def tables_of(out: Path, name: str) -> dict[str, list[dict[str, str]]]:
    return parse_tables((out / f"{name}.md").read_text())


def num(cell: str) -> float | None:
    return float(cell) if _is_number(cell) else None


def close(a: float, b: float) -> bool:
    """Equal up to the tables' 4 significant digits."""
    return math.isclose(a, b, rel_tol=1e-3, abs_tol=1e-9)


def _tally(pgn: Path, first: str) -> tuple[int, int, int]:
    import chess.pgn

    tally = [0, 0, 0]
    with pgn.open() as f:
        while (game := chess.pgn.read_game(f)) is not None:
            result, white = game.headers["Result"], game.headers["White"] == first
            tally[1 if result == "1/2-1/2" else 0 if (result == "1-0") == white else 2] += 1
    return tally[0], tally[1], tally[2]


def check_values(name: str, summary: dict, tables: dict[str, list[dict[str, str]]], work: Path) -> None:
    """The study's numbers are what they claim: shares and scores in [0, 1],
    ratings inside their intervals, fidelity at or past the gate's thresholds
    for the trained teacher's fresh builds, and scores equal to (W + D/2) /
    games of the saved match games."""
    head = summary["headline"]
    if name == "refit-drift":
        from chesszero.config import load_config

        p = load_config(REPO / "params.yaml", preset="cpu").publish  # the study gates with the cpu recipe
        for row in tables["Fresh builds (the campaign's path)"]:
            assert row["gate"] == "pass", row
            assert num(row["top-1 agreement"]) >= p.min_agreement and num(row["legal-policy KL"]) <= p.max_kl
            assert num(row["WDL MAE"]) <= p.max_wdl_mae
        assert head["fresh_kl_max"] <= p.max_kl
        for row in tables["Injected faults at the gate"]:  # each rejection has a threshold it misses
            assert row["gate"] == "rejected" and row["previous artifact still active"] == "yes", row
            agree, kl, wdl = num(row["top-1 agreement"]), num(row["legal-policy KL"]), num(row["WDL MAE"])
            assert agree is None or agree < p.min_agreement or kl > p.max_kl or wdl > p.max_wdl_mae, row
        for row in tables["Refits of one template"]:
            assert (row["gate"] == "pass") == (num(row["top-1 agreement"]) >= p.min_agreement
                                               and num(row["legal-policy KL"]) <= p.max_kl
                                               and num(row["WDL MAE"]) <= p.max_wdl_mae), row
    elif name == "promotion-loss":
        from chesszero.evaluate.gate import MatchStatus, PromotionGate

        rows = tables["By generation while a candidate exists"]
        scored = [r for r in rows if num(r["match score"]) is not None]
        assert len(scored) == head["matches"] >= 1
        assert close(head["mean_match_score"], sum(num(r["match score"]) for r in scored) / len(scored))
        for r in scored:
            assert 0 <= num(r["match score"]) <= 1
            assert num(r["Elo lo"]) <= num(r["Elo diff"]) <= num(r["Elo hi"]), r
        first_loss = next((int(r["generation"]) for r in rows if r["loss rule promotes"] == "1"), -1)
        assert head["loss_rule_generation"] == first_loss
        first_promoted = next((int(r["generation"]) for r in rows if num(r["gate promoted"]) == 1.0), -1)
        assert head["gate_promoted_generation"] == first_promoted
        # each recorded gate score is the saved match games' (W + D/2) / games
        [gate_file] = [f for f in work.rglob("candidate_gate.json") if (f.parent / "state.json").exists()]
        events = [e for e in PromotionGate.load(gate_file).history if e.status is MatchStatus.COMPLETED]
        assert len(events) == len(scored)
        for e in events:
            g = int(e.match_id.removeprefix("gen"))
            w, d, lost = _tally(gate_file.parent / "evals" / f"gen_{g:04d}" / "candidate_match.pgn", "candidate")
            assert w + d + lost > 0 and e.score == pytest.approx((w + d / 2) / (w + d + lost))
            [row] = [r for r in scored if int(r["generation"]) == g]
            assert close(num(row["match score"]), e.score)
    elif name == "draw-cycle":
        by_gen = tables["By generation"]
        for row in tables["Summary by arm"]:
            games = sum(num(r["games"]) or 0 for r in by_gen if r["arm"] == row["arm"])
            assert num(row["games"]) == games > 0, row
            for col in ("capped share (all)", "checkmate share (all)", "score vs random (last eval)"):
                assert num(row[col]) is None or 0 <= num(row[col]) <= 1, (col, row)
            nd = [c for c in row if c.startswith("non-decisive")]
            assert num(row[nd[0]]) is None or 0 <= num(row[nd[0]]) <= 1
        for r in by_gen:
            for col in ("non-decisive rate", "capped share", "conversion"):
                assert num(r[col]) is None or 0 <= num(r[col]) <= 1, (col, r)
        for row in tables["Terminations (share of games, all generations)"]:
            shares = [num(v) for k, v in row.items() if k != "arm"]
            assert all(0 <= x <= 1 for x in shares) and math.isclose(sum(shares), 1.0, abs_tol=1e-3), row
        for key, value in head.items():
            assert value > 0 if key.endswith("value_loss") else 0 <= value <= 1, (key, value)
    elif name == "late-game-targets":
        assert head["positions"] >= 1 and 0 <= head["decisive_outcomes"] <= head["positions"]
        assert 0 <= head["adjudicated"] <= head["positions"] and head["median_plies_after_cut"] >= 0
        for key, value in head.items():
            if key.endswith("_brier"):
                assert 0 <= value <= 2, (key, value)
            elif key.endswith("_ce"):
                assert value >= 0, (key, value)
            elif "share" in key or "rate" in key or "conversion" in key:
                assert 0 <= value <= 1, (key, value)


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
