"""The report of an NNUE build: ``summary.json``, ``nnue.md`` and the MLflow run.

The summary (also kept in the work folder beside the student) holds the
position counts, the teacher's value check (std and correlation with
material), lambda and the network size, the training history and best
epoch, the held-out loss (float and quantised network) and the mean absolute
error in centipawns against the teacher's labels, and the student file
(bytes, sha256). The report folder also gets a copy of ``student.nnue``, so
the DVC stage's output is the whole result.

MLflow: one run of kind ``nnue`` named after the build, tagged with the
teacher's campaign and run (nested under it when known), with the recipe's
``nnue`` section as params, the per-epoch losses and the summary numbers as
metrics, and the student file and the report as artifacts. Its id is kept in
``mlflow.json`` in the work folder, so a rerun logs into the same run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chesszero.fsio import atomic_write_text, write_json_atomic

if TYPE_CHECKING:
    from chesszero.nnue.build import BuildRequest

__all__ = ["markdown", "write_report"]

TAG_TEACHER_CAMPAIGN = "chesszero.teacher_campaign"
TAG_TEACHER_RUN = "chesszero.teacher_run"
TAG_PARENT = "mlflow.parentRunId"


def _fmt(value: Any, digits: int = 4) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def markdown(summary: dict[str, Any]) -> str:
    """A one-page table of the build."""
    p, t, e, tr = summary["positions"], summary["teacher_values"], summary["export"], summary["training"]
    check = t["check"]
    lines = [
        f"# NNUE student `{summary['name']}`", "",
        f"Teacher campaign `{summary['teacher']['campaign']}` ({summary['teacher']['labels_from']}); "
        f"hidden {summary['hidden']}, lambda {summary['lambda']}, search label weight "
        f"{summary.get('search_label_weight', 0.0)} (label = w * alpha-beta + (1 - w) * teacher).", "",
        "| quantity | value |", "|---|---|",
        f"| teacher games read | {p['teacher_games']} |",
        f"| alpha-beta games | {p['search_games']} |",
        f"| positions offered / quiet / unique | {p['offered']} / {p['quiet']} / {p['positions']} |",
        f"| held out | {p['holdout']} |",
        f"| teacher value std | {_fmt(check['value_std'], 3)} |",
        f"| teacher value vs material correlation | {_fmt(check['material_corr'], 3)} |",
        f"| teacher searched subset | {t['searched']} |",
        *_search_label_rows(t.get("search_labels"), e),
        f"| best epoch / epochs | {tr['best_epoch']} / {len(tr['history'])} |",
        f"| held-out loss (float / quantised) | {_fmt(e['holdout_loss_float'])} / "
        f"{_fmt(e['holdout_loss_quantised'])} |",
        f"| held-out loss of the constant predictor | {_fmt(tr['constant_holdout_loss'])} |",
        f"| MAE vs teacher, cp (float / quantised) | {_fmt(e['mae_cp_vs_teacher_float'], 4)} / "
        f"{_fmt(e['mae_cp_vs_teacher_quantised'], 4)} |",
        f"| core vs integer reference | "
        f"{'equal on ' + str(e['native_check']['positions']) if e['native_check']['checked'] else 'not checked'} |",
        f"| student file | {e['bytes']} bytes |",
    ]
    if "mae_quantised_vs_trained_cp" in e:  # builds from before quantisation-aware training lack it
        lines.insert(-1, f"| integers vs the trained network, cp (mean / worst) | "
                         f"{e['mae_quantised_vs_trained_cp']:.2f} / {e['max_abs_quantised_vs_trained_cp']:.2f} |")
    if len(summary.get("rounds", [])) > 1:
        lines += ["", "Bootstrap rounds (each round's alpha-beta searches with the previous round's student):", "",
                  "| round | alpha-beta over | positions | held-out loss | MAE vs alpha-beta label, cp |",
                  "|---|---|---|---|---|"]
        lines += [f"| {r['round']} | {r['search_net']} | {r['positions']} | {_fmt(r['holdout_loss'])} | "
                  f"{_fmt(r['mae_cp_vs_search'], 4)} |" for r in summary["rounds"]]
    if check["flat"]:
        lines += ["", f"**Warning:** {t['message']}"]
    return "\n".join(lines) + "\n"


def _search_label_rows(made: dict[str, Any] | None, e: dict[str, Any]) -> list[str]:
    if not made:
        return ["| alpha-beta labels | none |"]
    limit = f"{made['nodes']} nodes" if made["nodes"] else f"depth {made['depth']}"
    return [f"| alpha-beta labels ({made['net']}, {limit}): from its games / searched / none | "
            f"{made['from_games']} / {made['searched']} / {made['unknown']} |",
            f"| alpha-beta label vs teacher value correlation | {_fmt(made['corr_with_teacher'], 3)} |",
            f"| MAE vs alpha-beta label, cp (quantised) | {_fmt(e.get('mae_cp_vs_search_quantised'), 4)} |"]


def _track(req: BuildRequest, summary: dict[str, Any], student: Path) -> str:
    from chesszero.campaign.tracking import Tracker, environment_params, flatten

    marker = req.work / "mlflow.json"
    recorded = json.loads(marker.read_text()) if marker.exists() else {}
    # The same student's run is continued (a report interrupted after the run began); a rebuilt one gets its own.
    run_id = recorded.get("run_id") if recorded.get("sha256") == summary["export"]["sha256"] else None
    teacher = req.teacher
    tags = {TAG_TEACHER_CAMPAIGN: teacher.name, TAG_TEACHER_RUN: teacher.run_id or ""}
    if teacher.run_id:
        tags[TAG_PARENT] = teacher.run_id
    tracker = Tracker(req.root, req.name, run_id=run_id, kind="nnue", tags=tags)
    write_json_atomic(marker, {"run_id": tracker.run_id, "sha256": summary["export"]["sha256"]})
    tracker.log_params(flatten({"nnue": req.cfg.nnue.model_dump(mode="json", by_alias=True),
                                "teacher": {"campaign": teacher.name, "labels_from": summary["teacher"]["labels_from"]}})
                       | environment_params(req.root))
    for h in summary["training"]["history"]:
        tracker.log_metrics({"nnue/train_loss": h["train_loss"], "nnue/holdout_loss": h["holdout_loss"],
                             "nnue/lr": h["lr"]}, step=int(h["epoch"]))
    e, p, check = summary["export"], summary["positions"], summary["teacher_values"]["check"]
    final = {"nnue/positions": p["positions"], "nnue/holdout_positions": p["holdout"],
             "nnue/teacher_value_std": check["value_std"], "nnue/teacher_material_corr": check["material_corr"],
             "nnue/best_holdout_loss": summary["training"]["best_holdout_loss"],
             "nnue/constant_holdout_loss": summary["training"]["constant_holdout_loss"],
             **{f"nnue/{k}": e[k] for k in ("holdout_loss_float", "holdout_loss_quantised", "mae_cp_vs_teacher_float",
                                            "mae_cp_vs_teacher_quantised", "mae_cp_vs_search_quantised",
                                            "bytes") if k in e}}
    tracker.log_metrics({k: float(v) for k, v in final.items() if v is not None},
                        step=len(summary["training"]["history"]))
    tracker.log_artifact(student, "student")
    tracker.log_artifact(req.report_dir, "report")
    tracker.set_terminated()
    return tracker.run_id


def write_report(req: BuildRequest, *, positions: dict[str, Any], labels: dict[str, Any],
                 training: dict[str, Any], export: dict[str, Any],
                 rounds: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Writes the summary and table (work folder and report folder), records MLflow; returns the summary."""
    c = req.cfg.nnue
    summary: dict[str, Any] = {
        "name": req.name, "hidden": c.hidden, "lambda": c.lambda_, "search_label_weight": c.search_label_weight,
        "teacher": {"campaign": req.teacher.name, "artifact": str(req.teacher.artifact or ""),
                    "labels_from": labels["teacher"], "run_id": req.teacher.run_id},
        "positions": positions, "teacher_values": labels, "training": training, "export": export,
        "rounds": rounds or [], "student": export["path"], "bytes": export["bytes"],
        "holdout_loss": export["holdout_loss_quantised"], "mae_cp": export["mae_cp_vs_teacher_quantised"],
        "teacher_value_std": labels["check"]["value_std"], "teacher_material_corr": labels["check"]["material_corr"],
        "recipe": c.model_dump(mode="json", by_alias=True)}
    req.report_dir.mkdir(parents=True, exist_ok=True)
    student = Path(export["path"])
    shutil.copyfile(student, req.report_dir / student.name)
    atomic_write_text(req.report_dir / "nnue.md", markdown(summary))
    write_json_atomic(req.report_dir / "summary.json", summary, sort_keys=False)
    if req.track:
        summary["mlflow_run_id"] = _track(req, summary, student)
    for folder in (req.work, req.report_dir):
        write_json_atomic(folder / "summary.json", summary, sort_keys=False)
    return summary
