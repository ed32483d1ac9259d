"""MLflow tracking of a campaign: one run per campaign, metrics indexed by
generation, artifacts, and a registered model whose `active` alias follows
the activated artifact.

Store: ``sqlite:///<root>/mlruns/mlflow.db`` with artifacts under
``<root>/mlruns/artifacts`` (MLflow 3 refuses a plain ./mlruns file store).
"""

from __future__ import annotations

import os
import platform
import subprocess
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from chesszero.campaign import metrics as M

DEPENDENCIES = ("torch", "onnx", "onnxruntime", "numpy", "polars", "pandera", "prefect", "mlflow",
                "dvc", "chess", "pydantic")


def tracking_uri(root: Path) -> str:
    return f"sqlite:///{(root / 'mlruns' / 'mlflow.db').resolve()}"


def ensure_store(root: Path) -> Path:
    """Creates the MLflow store of `root` once, fully migrated, atomically.

    MLflow builds a new sqlite store through a chain of schema migrations; a
    kill -9 in the middle leaves a store that no later process can open
    (``table _alembic_tmp_experiments already exists``). So a new store is
    migrated under a temporary name and then linked into place (never over an
    existing store); a kill leaves at most a stray temporary file."""
    import os

    db = (root / "mlruns" / "mlflow.db").resolve()
    if db.exists():
        return db
    db.parent.mkdir(parents=True, exist_ok=True)
    tmp = db.with_name(f"{db.name}.init-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    from mlflow.tracking import MlflowClient

    MlflowClient(tracking_uri=f"sqlite:///{tmp}").search_experiments()  # runs the migrations
    try:
        os.link(tmp, db)
    except FileExistsError:  # another process made it first
        pass
    finally:
        tmp.unlink(missing_ok=True)
    return db


def flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested mapping -> {"a.b.c": "value"} for MLflow params."""
    out: dict[str, str] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(flatten(v, key + "."))
        else:
            out[key] = str(v)[:6000]
    return out


def git_revision(root: Path) -> tuple[str, bool]:
    """(commit, dirty) of the project checkout, ("unknown", True) outside git."""
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                    capture_output=True, text=True, check=True).stdout.strip())
        return rev, dirty
    except (OSError, subprocess.CalledProcessError):
        return "unknown", True


def environment_params(root: Path) -> dict[str, str]:
    rev, dirty = git_revision(root)
    params = {"git.revision": rev, "git.dirty": str(dirty), "machine.platform": platform.platform(),
              "machine.cpus": str(os.cpu_count()), "machine.python": platform.python_version()}
    for dep in DEPENDENCIES:
        try:
            params[f"dep.{dep}"] = metadata.version(dep)
        except metadata.PackageNotFoundError:
            params[f"dep.{dep}"] = "absent"
    return params


class Tracker:
    """Thin wrapper over an MLflow client bound to one campaign run."""

    def __init__(self, root: Path, campaign: str, run_id: str | None = None, uid: str | None = None, *,
                 kind: str = "campaign", tags: Mapping[str, str] | None = None) -> None:
        """Binds run `run_id`; without it, the run tagged ``TAG_UID = uid`` (a
        campaign killed between making its run and saving the run's id finds
        it again), or a new run named `campaign` tagged with `kind` and `tags`
        (a distillation run is kind "distill", linked to its teacher's run by tags)."""
        import mlflow
        from mlflow.tracking import MlflowClient

        (root / "mlruns" / "artifacts").mkdir(parents=True, exist_ok=True)
        ensure_store(root)
        self.uri = tracking_uri(root)
        mlflow.set_tracking_uri(self.uri)
        self.client = MlflowClient(tracking_uri=self.uri)
        exp = self.client.get_experiment_by_name(M.EXPERIMENT)
        if exp is None:
            exp_id = self.client.create_experiment(
                M.EXPERIMENT, artifact_location=(root / "mlruns" / "artifacts").resolve().as_uri())
        else:
            exp_id = exp.experiment_id
        self.campaign = campaign
        self.model_name = f"{M.REGISTERED_MODEL_PREFIX}-{campaign}"
        if run_id is None and uid:
            found = self.client.search_runs([exp_id], f"tags.`{M.TAG_UID}` = '{uid}'", max_results=1)
            run_id = found[0].info.run_id if found else None
        if run_id is None:
            all_tags = {M.TAG_CAMPAIGN: campaign, M.TAG_KIND: kind, **({M.TAG_UID: uid} if uid else {}),
                        **(tags or {})}
            run_id = self.client.create_run(exp_id, run_name=campaign, tags=all_tags).info.run_id
        self.run_id = run_id

    def log_params(self, params: Mapping[str, str]) -> None:
        from mlflow.entities import Param

        existing = self.client.get_run(self.run_id).data.params
        fresh = [Param(k, v) for k, v in params.items() if k not in existing]
        for i in range(0, len(fresh), 90):
            self.client.log_batch(self.run_id, params=fresh[i:i + 90])

    def log_metrics(self, values: Mapping[str, float], step: int) -> None:
        """Logs `values` at `step`, leaving out a metric (other than the
        ``metrics.CLOCKS``) already logged at `step` or later: a phase rerun
        after a kill that came between its logging and its state save must
        not log its metrics twice (steps are generations, never going back)."""
        import time

        from mlflow.entities import Metric

        latest = {m.key: m.step for m in self.client.get_run(self.run_id).data.to_proto().metrics}
        now = int(time.time() * 1000)
        batch = [Metric(k, float(v), now, step) for k, v in values.items()
                 if v is not None and (k in M.CLOCKS or latest.get(k, step - 1) < step)]
        for i in range(0, len(batch), 900):
            self.client.log_batch(self.run_id, metrics=batch[i:i + 900])

    def has_artifact(self, path: str) -> bool:
        """True when the run has an artifact at `path` (relative to its root)."""
        parent = str(Path(path).parent)
        listed = self.client.list_artifacts(self.run_id, None if parent == "." else parent)
        return any(a.path == path for a in listed)

    def log_artifact(self, path: Path, artifact_path: str | None = None) -> None:
        if path.is_dir():
            self.client.log_artifacts(self.run_id, str(path), artifact_path)
        else:
            self.client.log_artifact(self.run_id, str(path), artifact_path)

    def register_active(self, onnx_path: Path, label: str) -> str:
        """Logs the ONNX artifact as a model, registers a version tagged
        ``artifact=<label>`` and points the `active` alias at it; returns the
        version. Once per label: a rerun after a kill finds the version (the
        tag is set in the same call that creates it) and only moves the alias."""
        import mlflow
        import onnx

        version = self._version_of(label)
        if version is None:
            with mlflow.start_run(run_id=self.run_id):
                info = mlflow.onnx.log_model(onnx.load(str(onnx_path)), name=f"artifact_{label}")
            self.client.update_run(self.run_id, status="RUNNING")  # start_run's exit marked it FINISHED
            version = str(mlflow.register_model(info.model_uri, self.model_name, tags={"artifact": label}).version)
        self.client.set_registered_model_alias(self.model_name, "active", version)
        return version

    def _version_of(self, label: str) -> str | None:
        from mlflow.exceptions import MlflowException

        try:
            versions = self.client.search_model_versions(f"name = '{self.model_name}'")
        except MlflowException:  # no registered model yet
            return None
        return next((str(v.version) for v in versions if v.tags.get("artifact") == label), None)

    def set_terminated(self, status: str = "FINISHED") -> None:
        self.client.set_terminated(self.run_id, status=status)
