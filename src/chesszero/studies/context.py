"""Where a study runs and what it logs: scales, the work folder, the MLflow parent run.

A study works in ``<work>/<name>-<scale>/`` (default ``runs/studies/``),
which is also a project root for the campaigns it runs: ``params.yaml``
there holds the project's recipe plus the study's presets (a preset of the
project's file with the study's overrides merged in), ``data/`` links to
the project's inputs (openings, calibration positions, ladder table) one by
one, so the campaigns' replay snapshots stay in the work folder, and
``mlruns/mlflow.db`` is the MLflow store of the study's parent run and of
every campaign it starts (tagged as the parent's children).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from chesszero.campaign.tracking import environment_params, flatten, tracking_uri
from chesszero.config.loader import deep_merge

__all__ = ["Scale", "StudyContext", "StudyRun"]

EXPERIMENT = "chesszero-failure-studies"
TAG_STUDY = "chesszero.study"
PARENT_TAG = "mlflow.parentRunId"  # MLflow's own nesting tag


class Scale(str, enum.Enum):
    """How big a study's runs are: ``quick`` (CI, about a minute), ``small`` (< 30 min on 2 cores)."""

    QUICK = "quick"
    SMALL = "small"


@dataclass
class StudyContext:
    """One study invocation: project root, work folder, report folder, scale, seed."""

    name: str
    scale: Scale
    project: Path  # the checkout: params.yaml, data/
    work: Path  # runs/studies/<name>-<scale>
    out: Path  # reports/failures
    seed: int = 0
    started: float = field(default_factory=time.time)
    phases: dict[str, float] = field(default_factory=dict)  # label -> seconds, in the order run

    @contextmanager
    def phase(self, label: str) -> Iterator[None]:
        """Times a named part of the study (a campaign arm, an analysis step) for its report."""
        began = time.perf_counter()
        try:
            yield
        finally:
            self.phases[label] = self.phases.get(label, 0.0) + time.perf_counter() - began

    @classmethod
    def create(cls, name: str, scale: Scale, *, project: Path, work_root: Path | None = None,
               out: Path | None = None, seed: int = 0) -> StudyContext:
        project = project.resolve()
        work = ((work_root or project / "runs" / "studies") / f"{name}-{scale.value}").resolve()
        work.mkdir(parents=True, exist_ok=True)
        data = work / "data"
        if data.is_symlink():  # folders made before the inputs were linked one by one
            data.unlink()
        data.mkdir(exist_ok=True)
        for item in (project / "data").iterdir():  # the inputs, never the replay snapshots the campaigns write
            link = data / item.name
            if item.name != "replay" and not link.exists():
                link.symlink_to(item, target_is_directory=item.is_dir())
        return cls(name, scale, project, work, (out or project / "reports" / "failures").resolve(), seed)

    @property
    def quick(self) -> bool:
        return self.scale is Scale.QUICK

    def write_presets(self, presets: Mapping[str, tuple[str, Mapping[str, Any]]]) -> Path:
        """``<work>/params.yaml``: the project's recipe plus ``{name: (base preset, overrides)}``."""
        source = yaml.safe_load((self.project / "params.yaml").read_text())
        for name, (base, overrides) in presets.items():
            if base not in source["presets"]:
                raise ValueError(f"study {self.name}: no preset {base!r} in {self.project / 'params.yaml'}")
            source["presets"][name] = deep_merge(source["presets"][base] or {}, overrides)
        path = self.work / "params.yaml"
        path.write_text(yaml.safe_dump(source, sort_keys=False))
        return path

    @property
    def tracking_uri(self) -> str:
        return tracking_uri(self.work)

    def command(self) -> str:
        return f"chesszero study {self.name}" + (" --quick" if self.quick else "")


def metric_name(label: str) -> str:
    """A label as an MLflow metric name (letters, digits, ``_-./:`` and spaces; the rest become ``_``)."""
    return "".join(c if c.isalnum() or c in "_-./: " else "_" for c in label)


class StudyRun:
    """The study's MLflow parent run (``sqlite:///<work>/mlruns/mlflow.db``)."""

    def __init__(self, ctx: StudyContext, params: Mapping[str, Any]) -> None:
        from mlflow.tracking import MlflowClient

        (ctx.work / "mlruns" / "artifacts").mkdir(parents=True, exist_ok=True)
        self.uri = ctx.tracking_uri
        self.ctx = ctx
        self.client = MlflowClient(tracking_uri=self.uri)
        exp = self.client.get_experiment_by_name(EXPERIMENT)
        exp_id = exp.experiment_id if exp is not None else self.client.create_experiment(
            EXPERIMENT, artifact_location=(ctx.work / "mlruns" / "artifacts").resolve().as_uri())
        run = self.client.create_run(exp_id, run_name=f"{ctx.name}-{ctx.scale.value}",
                                     tags={TAG_STUDY: ctx.name, "chesszero.scale": ctx.scale.value})
        self.run_id = run.info.run_id
        self.log_params({**flatten(dict(params)), **environment_params(ctx.project)})

    def log_params(self, params: Mapping[str, str]) -> None:
        from mlflow.entities import Param

        items = [Param(k, str(v)[:6000]) for k, v in params.items()]
        for i in range(0, len(items), 90):
            self.client.log_batch(self.run_id, params=items[i:i + 90])

    def log_metrics(self, values: Mapping[str, float], step: int = 0) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        batch = [Metric(metric_name(k), float(v), now, step) for k, v in values.items() if v is not None]
        for i in range(0, len(batch), 900):
            self.client.log_batch(self.run_id, metrics=batch[i:i + 900])

    def adopt(self, run_id: str) -> None:
        """Marks another run of the same store (a campaign's) as this run's child."""
        self.client.set_tag(run_id, PARENT_TAG, self.run_id)

    def log_artifact(self, path: Path, artifact_path: str | None = None) -> None:
        self.client.log_artifact(self.run_id, str(path), artifact_path)

    def finish(self, status: str = "FINISHED") -> dict[str, str]:
        """Ends the run; returns its store (``uri``; ``shown``: relative to the project when inside it)."""
        self.client.set_terminated(self.run_id, status=status)
        store = self.ctx.work / "mlruns" / "mlflow.db"
        shown = store.relative_to(self.ctx.project) if store.is_relative_to(self.ctx.project) else store
        return {"uri": self.uri, "run_id": self.run_id, "shown": f"sqlite:///{shown}"}
