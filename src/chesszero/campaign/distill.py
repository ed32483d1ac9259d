"""``chesszero distill``: a compact student from a teacher campaign, published
and measured against its teacher (issue 11).

1. The teacher's training checkpoint is copied (frozen) into the work folder
   ``runs/distill/<name>/`` and the student is trained from one or more replay
   snapshots by ``train.distill`` (resumable; the checkpoint's name carries a
   hash of teacher, snapshots and recipe, so other inputs start afresh).
2. Student and teacher checkpoints go through the normal publication path
   (fold, INT8 calibration and QAT on snapshot rows, ONNX export, the fidelity
   gate on the calibration set); a student that fails the gate is an error.
3. Each published network's search speed is measured as a match runs it
   (``evaluate.speed``), interleaved, and the student's equal-wall-time
   budget is the teacher's visits scaled by the speed ratio.
4. Paired matches on the campaign openings: student vs teacher at equal
   visits and at equal wall time per move; the student's Elo relative to the
   teacher (95% bootstrap interval over opening pairs); optionally student
   and teacher against ladder rungs.
5. The report (``campaign.distill_report``: table, figure, ``summary.json``)
   and an MLflow run of kind ``distill`` tagged with the teacher's campaign
   and run (``mlflow.parentRunId`` nests it under the teacher's run), with
   the student artifact and its fidelity report.

Matches, publications and the speed measurement are kept in the work folder
and reused by a rerun with the same inputs, so a killed run loses at most the
match in progress.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich import progress as rp
from rich.console import Console

from chesszero.campaign.search_settings import evaluation_search
from chesszero.campaign.state import StateStore, write_json_atomic
from chesszero.config import Config

if TYPE_CHECKING:
    from chesszero.evaluate.match import MatchResult
    from chesszero.evaluate.players import Player
    from chesszero.evaluate.speed import EqualTime

__all__ = ["DistillRequest", "Teacher", "latest_snapshot", "run_distill", "teacher_of_campaign"]

TAG_TEACHER_CAMPAIGN = "chesszero.teacher_campaign"
TAG_TEACHER_RUN = "chesszero.teacher_run"
TAG_PARENT = "mlflow.parentRunId"


@dataclass(frozen=True)
class Teacher:
    """The teacher: a training checkpoint and, when known, its campaign and MLflow run."""

    checkpoint: Path
    campaign: str | None = None
    run_id: str | None = None


def teacher_of_campaign(root: Path, campaign: str, checkpoint: Path | None = None) -> Teacher:
    """The campaign's current training checkpoint (or `checkpoint`) and its MLflow run."""
    state = StateStore(root / "runs" / campaign / "state.json")
    if not state.exists():
        raise ValueError(f"no campaign {campaign!r} under {root / 'runs'} (state.json missing)")
    path = checkpoint or root / "runs" / campaign / "train.pt"
    if not path.is_file():
        raise ValueError(f"teacher checkpoint not found: {str(path)!r}")
    return Teacher(path, campaign, state.load().mlflow_run_id)


def latest_snapshot(root: Path, campaign: str) -> Path:
    """The newest replay snapshot of `campaign` (data/replay/snapshots/<campaign>/gen_NNNN)."""
    folder = root / "data" / "replay" / "snapshots" / campaign
    found = sorted(p for p in folder.glob("gen_*") if (p / "meta.json").is_file())
    if not found:
        raise ValueError(f"no replay snapshot under {folder}: run the campaign with campaign.snapshot_every "
                         "set, or name one with --snapshot")
    return found[-1]


@dataclass(frozen=True)
class DistillRequest:
    """One distillation: recipe, teacher, snapshots, where the report goes, what to play."""

    root: Path
    name: str
    cfg: Config
    teacher: Teacher
    snapshots: tuple[Path, ...]
    report_dir: Path
    matches: bool = True
    ladder_rungs: tuple[str, ...] = field(default_factory=tuple)

    @property
    def work(self) -> Path:
        return self.root / "runs" / "distill" / self.name


def _progress(console: Console, enabled: bool) -> rp.Progress:
    return rp.Progress(rp.TextColumn("{task.description}"), rp.BarColumn(), rp.MofNCompleteColumn(),
                       rp.TimeElapsedColumn(), rp.TimeRemainingColumn(), console=console, disable=not enabled)


def _frozen_teacher(req: DistillRequest) -> Path:
    from chesszero.fsio import file_sha256

    sha = file_sha256(req.teacher.checkpoint)
    copy = req.work / f"teacher-{sha[:12]}.pt"
    if not copy.exists():
        req.work.mkdir(parents=True, exist_ok=True)
        tmp = copy.with_suffix(".tmp")
        shutil.copyfile(req.teacher.checkpoint, tmp)
        tmp.replace(copy)
    return copy


def _train(req: DistillRequest, teacher: Path, progress: rp.Progress) -> Any:
    from chesszero.train.distill import DistillJob, distill_student

    probe = DistillJob(req.cfg.train, req.cfg.distill, teacher, req.snapshots, Path())
    key = hashlib.sha256(json.dumps(probe.identity(), sort_keys=True).encode()).hexdigest()[:12]
    job = DistillJob(req.cfg.train, req.cfg.distill, teacher, req.snapshots, req.work / f"student-{key}.pt")
    task = progress.add_task(f"distilling {req.cfg.distill.student_size}", total=req.cfg.distill.steps)
    outcome = distill_student(job, on_step=lambda k: progress.update(task, completed=k))
    progress.update(task, completed=req.cfg.distill.steps)
    return outcome


def _publish(req: DistillRequest, checkpoint: Path, label: str, tune: Any) -> dict[str, Any]:
    """Publishes `checkpoint` into work/artifacts/<label> (reused when already done for it)."""
    from chesszero.fsio import file_sha256
    from chesszero.publish import PublishSettings, load_calibration_set, publish

    out = req.work / "artifacts" / label
    marker = out / "publish.json"
    sha = file_sha256(checkpoint)
    if marker.exists():
        data = json.loads(marker.read_text())
        if data["checkpoint_sha256"] == sha:
            return data
    cfg = req.cfg
    calib = load_calibration_set(req.root / "data" / "calibration" / "positions.jsonl",
                                 limit=cfg.publish.calibration_positions)
    settings = PublishSettings.from_config(cfg.publish, moves_left=cfg.search.moves_left.enabled)
    result = publish(checkpoint, out, calib, settings=settings, tune=tune)
    data = {"checkpoint_sha256": sha, "passed": result.gate.passed, "artifact": str(Path(result.int8.path).resolve()),
            "fidelity": str(result.directory / "fidelity.json"),
            "metrics": {} if result.gate.report is None else result.gate.report.summary(),
            "error": result.gate.error or (None if result.gate.report is None else "; ".join(result.gate.report.failures))}
    write_json_atomic(marker, data)
    return data


def _play(req: DistillRequest, label: str, first: Callable[[], Player], second: Callable[[], Player],
          openings: list[Any], progress: rp.Progress) -> MatchResult:
    """A paired match saved as work/matches/<label>.json (+ .pgn), reused when already played."""
    from chesszero.evaluate.match import MatchResult, play_match

    path = req.work / "matches" / f"{label}.json"
    a, b = first(), second()
    try:
        if path.exists():
            old = MatchResult.from_dict(json.loads(path.read_text()))
            if (old.first, old.second, len(old.games)) == (a.name, b.name, 2 * len(openings)):
                return old
        task = progress.add_task(f"{a.name} vs {b.name}", total=2 * len(openings))
        result = play_match(a, b, openings, max_plies=req.cfg.evaluate.ply_cap, event=f"distill {label}",
                            on_game=lambda _: progress.advance(task))
    finally:
        a.close()
        b.close()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_suffix(".pgn").write_text(result.pgn())
    write_json_atomic(path, result.to_dict(), sort_keys=False)
    return result


def _match_summary(result: MatchResult, first_visits: int, second_visits: int, resamples: int) -> dict[str, Any]:
    elo = result.elo(0.0, resamples=resamples)
    return {"student": result.first, "opponent": result.second, "student_visits": first_visits,
            "opponent_visits": second_visits, "games": len(result.games), "wins": result.wins,
            "draws": result.draws, "losses": result.losses, "score": result.score,
            "pentanomial": list(result.pentanomial()), "elo": elo.estimate, "elo_lower": elo.lower,
            "elo_upper": elo.upper, "elo_is_bound": elo.is_bound}


def _matches(req: DistillRequest, student: str, teacher: str, progress: rp.Progress) -> dict[str, Any]:
    from chesszero.evaluate.engine_player import EnginePlayer
    from chesszero.evaluate.openings import load_openings
    from chesszero.evaluate.speed import equal_time_visits
    from chesszero.publish.loading import load_evaluator

    cfg, d = req.cfg, req.cfg.distill
    suite = load_openings(req.root / "data" / "openings" / "openings.epd")
    if d.openings > len(suite):
        raise ValueError(f"distill.openings is {d.openings}, the suite has {len(suite)} openings")
    openings = suite[: d.openings]
    s_eval, t_eval = load_evaluator(student, plain_onnx=False), load_evaluator(teacher, plain_onnx=False)
    games = [_opening_game(o) for o in (suite * (d.speed_positions // len(suite) + 1))[: d.speed_positions]]
    speed = _speed(req, (student, teacher), lambda: equal_time_visits(
        t_eval, s_eval, games, visits=d.visits, options=evaluation_search(cfg)))
    size = d.student_size

    def player(evaluator: Any, visits: int, name: str) -> Callable[[], Player]:
        return lambda: EnginePlayer(evaluator, visits=visits, name=name, options=evaluation_search(cfg))

    out: dict[str, Any] = {"speed": {"teacher_visits_per_s": speed.reference_speed,
                                     "student_visits_per_s": speed.other_speed, "ratio": speed.speed_ratio,
                                     "positions": len(games), "repeats": speed.repeats}}
    budgets = {"equal_visits": d.visits, "equal_time": speed.other_visits}
    for label, visits in budgets.items():
        result = _play(req, label, player(s_eval, visits, f"student-{size}-v{visits}"),
                       player(t_eval, d.visits, f"teacher-v{d.visits}"), openings, progress)
        out[label] = _match_summary(result, visits, d.visits, cfg.evaluate.bootstrap_resamples)
    return out


def _speed(req: DistillRequest, artifacts: tuple[str, str], measure: Callable[[], EqualTime]) -> EqualTime:
    """The equal-time measurement of these artifacts, measured once and kept in work/speed.json
    (a rerun replays the same budgets, so finished matches are reused)."""
    from chesszero.evaluate.speed import EqualTime
    from chesszero.fsio import file_sha256

    path = req.work / "speed.json"
    key = [file_sha256(a) for a in artifacts] + [req.cfg.distill.visits, req.cfg.distill.speed_positions]
    if path.exists():
        data = json.loads(path.read_text())
        if data["key"] == key:
            return EqualTime(**data["speed"])
    speed = measure()
    write_json_atomic(path, {"key": key, "speed": asdict(speed)})
    return speed


def _opening_game(opening: Any) -> Any:
    from chesszero import core

    game = core.Game(opening.start_fen)
    for uci in opening.moves:
        game.push_uci(uci)
    return game


def _ladder(req: DistillRequest, artifacts: dict[str, str], progress: rp.Progress) -> dict[str, Any]:
    """Each network (student, teacher) against each requested rung at `evaluate.visits`."""
    from chesszero.evaluate.engine_player import EnginePlayer
    from chesszero.evaluate.ladder import LadderTable, rung_player
    from chesszero.evaluate.openings import load_openings
    from chesszero.publish.loading import load_evaluator

    if not req.ladder_rungs:
        return {}
    ev = req.cfg.evaluate
    table = LadderTable.load(req.root / "data" / "ladder.json")
    openings = load_openings(req.root / "data" / "openings" / "openings.epd")[: ev.openings]
    out: dict[str, Any] = {}
    for label, artifact in artifacts.items():
        evaluator = load_evaluator(artifact, plain_onnx=False)
        out[label] = {}
        for name in req.ladder_rungs:
            rung = table.rung(name)
            result = _play(req, f"ladder_{label}_{name}", lambda e=evaluator, n=label: EnginePlayer(
                e, visits=ev.visits, name=f"{n}-v{ev.visits}", options=evaluation_search(req.cfg)),
                lambda rung=rung: rung_player(rung, seed=0, engines=2), openings, progress)
            out[label][name] = (_match_summary(result, ev.visits, 0, ev.bootstrap_resamples)
                                | {"rung_rating": table.rating(name)})
    return out


def _track(req: DistillRequest, summary: dict[str, Any], student_artifact: Path) -> str:
    from chesszero.campaign.tracking import Tracker, environment_params, flatten

    marker = req.work / "mlflow.json"
    run_id = json.loads(marker.read_text())["run_id"] if marker.exists() else None
    tags = {TAG_TEACHER_CAMPAIGN: req.teacher.campaign or "", TAG_TEACHER_RUN: req.teacher.run_id or ""}
    if req.teacher.run_id:
        tags[TAG_PARENT] = req.teacher.run_id
    tracker = Tracker(req.root, req.name, run_id=run_id, kind="distill", tags=tags)
    write_json_atomic(marker, {"run_id": tracker.run_id})
    tracker.log_params(flatten({"distill": req.cfg.distill.model_dump(mode="json"),
                                "teacher": {"checkpoint": str(req.teacher.checkpoint),
                                            "campaign": req.teacher.campaign or ""},
                                "snapshots": ",".join(str(p) for p in req.snapshots)}) | environment_params(req.root))
    for q in summary["training"]["quanta"]:
        tracker.log_metrics({f"distill/{k}": q[k] for k in ("loss_total", "loss_policy", "loss_value",
                                                            "loss_next_policy", "loss_length", "lr_last")},
                            step=int(q["end_step"]))
    flat = {f"distill/holdout_{k}": v for k, v in summary["training"]["agreement"].items()}
    for label in ("equal_visits", "equal_time"):
        if label in summary:
            flat |= {f"distill/{label}_{k}": summary[label][k] for k in ("score", "elo", "elo_lower", "elo_upper",
                                                                          "student_visits")}
    for key, value in summary.get("speed", {}).items():
        flat[f"distill/speed_{key}"] = value
    for label, rungs in summary.get("ladder", {}).items():
        for rung, m in rungs.items():
            flat[f"distill/ladder_{label}_{rung}_score"] = m["score"]
    for label in ("student", "teacher"):
        flat |= {f"distill/{label}_fidelity_{k}": v for k, v in summary["publish"][label]["metrics"].items()}
    tracker.log_metrics({k: float(v) for k, v in flat.items() if isinstance(v, (int, float))},
                        step=summary["training"]["steps"])
    tracker.log_artifact(req.report_dir, "report")
    tracker.log_artifact(student_artifact, "student")
    tracker.log_artifact(student_artifact.with_name("fidelity.json"), "student")
    tracker.set_terminated()
    return tracker.run_id


def run_distill(req: DistillRequest, *, console: Console | None = None, progress: bool = True) -> dict[str, Any]:
    """Trains, publishes, measures and reports one distillation (module docstring); returns the summary."""
    from chesszero.campaign.distill_report import write_report
    from chesszero.publish.calibration import tuning_set_from_rows
    from chesszero.train.distill import snapshot_rows

    console = console or Console(stderr=True)
    teacher = _frozen_teacher(req)
    with _progress(console, progress) as bars:
        outcome = _train(req, teacher, bars)
        tune = tuning_set_from_rows(snapshot_rows(req.snapshots), limit=req.cfg.publish.calibration_positions,
                                    seed=req.cfg.distill.seed, origin="snapshots " + ", ".join(p.name for p in req.snapshots))
        published = {"student": _publish(req, outcome.checkpoint, "student", tune),
                     "teacher": _publish(req, teacher, "teacher", tune)}
        for label, data in published.items():
            if not data["passed"]:
                raise RuntimeError(f"the {label} artifact failed the fidelity gate: {data['error']} "
                                   f"({data['fidelity']})")
        summary: dict[str, Any] = {
            "name": req.name, "teacher": {"checkpoint": str(req.teacher.checkpoint), "frozen_copy": str(teacher),
                                          "campaign": req.teacher.campaign, "run_id": req.teacher.run_id},
            "snapshots": [str(p) for p in req.snapshots], "distill": req.cfg.distill.model_dump(mode="json"),
            "training": outcome.to_dict(), "publish": published}
        if req.matches:
            summary |= _matches(req, published["student"]["artifact"], published["teacher"]["artifact"], bars)
        ladder = _ladder(req, {k: v["artifact"] for k, v in published.items()}, bars)
        if ladder:
            summary["ladder"] = ladder
    write_report(summary, req.report_dir)
    summary["mlflow_run_id"] = _track(req, summary, Path(published["student"]["artifact"]))
    write_json_atomic(req.report_dir / "summary.json", summary, sort_keys=False)
    return summary
