"""Running a study by name: context, the study itself, the report files, the index."""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from chesszero.studies.context import Scale, StudyContext
from chesszero.studies.report import StudyReport, write_report

__all__ = ["STUDIES", "StudySpec", "run_study"]


@dataclass(frozen=True)
class StudySpec:
    name: str
    title: str
    paper: str  # section
    runner: str | None  # "module:function", None when not produced yet
    why_missing: str = ""

    def load(self) -> Callable[[StudyContext], StudyReport]:
        import importlib

        if self.runner is None:
            raise ValueError(f"study {self.name!r} is not implemented yet: {self.why_missing}")
        module, func = self.runner.split(":")
        return getattr(importlib.import_module(module), func)  # type: ignore[no-any-return]


STUDIES: dict[str, StudySpec] = {s.name: s for s in (
    StudySpec("late-game-targets", "Late-game target poisoning", "paper 6.1",
              "chesszero.studies.late_targets:run_late_targets"),
    StudySpec("refit-drift", "Prediction drift under refit", "paper 6.2",
              "chesszero.studies.refit_drift:run_refit_drift"),
    StudySpec("promotion-loss", "Promotion from incomparable training losses", "paper 6.3",
              "chesszero.studies.promotion_loss:run_promotion_loss"),
    StudySpec("draw-cycle", "The draw cycle", "reference 004", "chesszero.studies.draw_cycle:run_draw_cycle"),
)}


def _cpu_seconds() -> float:
    """CPU seconds used so far by this process (all threads) and its finished children."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def run_study(name: str, scale: Scale, *, project: Path, out: Path | None = None,
              work_root: Path | None = None, seed: int = 0) -> Path:
    """Runs study ``name`` at ``scale``; writes its report and the index; returns the report path."""
    from chesszero.studies.index import write_index

    if name not in STUDIES:
        raise ValueError(f"unknown study {name!r}; known: {', '.join(STUDIES)}")
    runner = STUDIES[name].load()
    ctx = StudyContext.create(name, scale, project=project, work_root=work_root, out=out, seed=seed)
    started, cpu_before = time.perf_counter(), _cpu_seconds()
    report = runner(ctx)
    report.wall_s = time.perf_counter() - started
    report.phases = dict(ctx.phases)
    load_1, _, load_15 = os.getloadavg()
    report.machine = {"cpus": float(os.cpu_count() or 0), "own_cpu_s": _cpu_seconds() - cpu_before,
                      "load_1min": load_1, "load_15min": load_15}
    path = write_report(report, ctx.out)
    if report.mlflow.get("run_id"):
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=report.mlflow["uri"])
        client.log_artifact(report.mlflow["run_id"], str(path))
    write_index(ctx.out)
    return path
