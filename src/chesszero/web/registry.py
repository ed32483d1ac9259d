"""The model behind the MLflow registry's ``active`` alias (``chesszero web --registry``).

Campaigns register every activated artifact as a version of
``chesszero-<campaign>`` and point the alias ``active`` at it
(``campaign.tracking``), tagging the version with its generation label
(``gen0007``, or ``initial``). ``registry_model`` resolves the alias in the
project's store (``<root>/mlruns/mlflow.db``), downloads that version's ONNX
file into a fresh temporary folder, and reads the rating from the run's
``elo_joint/searched`` metrics (the joint rating with its interval, or its
bound) logged at or after that generation.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from chesszero.campaign import metrics as M
from chesszero.campaign.headline import key_family, rating_from
from chesszero.campaign.tracking import tracking_uri

ALIAS = "active"


@dataclass(frozen=True)
class RegistryModel:
    """A downloaded registry version and what the registry says about it."""

    path: Path
    name: str
    version: str
    generation: int | None
    """From the version's ``artifact`` tag; None for the initial network or no tag."""
    rating: str


def _generation(label: str | None) -> int | None:
    if label and label.startswith("gen") and label[3:].isdigit():
        return int(label[3:])
    return None


def _rating(client: object, run_id: str, since: int | None) -> str:
    """The headline: the searched joint rating (or its bound) logged last at or
    after `since`; a run from before joint ratings falls back to the nearest
    rung, named as such (a swept rung still reads as a bound)."""
    for name, key in (("joint", lambda s: M.joint_elo_key("searched", s)),
                      ("nearest rung", lambda s: M.elo_key("searched", s))):
        history = [m for m in client.get_metric_history(run_id, key(""))  # type: ignore[attr-defined]
                   if since is None or m.step >= since]
        if not history:
            continue
        step = max(m.step for m in history)
        values = {}
        for k in key_family(key):
            at_step = [m.value for m in client.get_metric_history(run_id, k)  # type: ignore[attr-defined]
                       if m.step == step]
            if at_step:
                values[k] = at_step[-1]
        rating = rating_from(values, key)
        if rating is not None:
            return f"rated at generation {step}: {key('')} ({name}) {rating.describe()}"
    return "not rated yet"


def registry_model(root: Path, name: str) -> RegistryModel:
    """Downloads the version of registered model `name` that the ``active`` alias
    names; ValueError naming the store or model when there is none."""
    db = root / "mlruns" / "mlflow.db"
    if not db.is_file():
        raise ValueError(f"no MLflow store at {db}")
    import mlflow
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    uri = tracking_uri(root)
    client = MlflowClient(tracking_uri=uri)
    try:
        version = client.get_model_version_by_alias(name, ALIAS)
    except MlflowException as error:
        raise ValueError(f"registered model {name!r} has no {ALIAS!r} alias in {db}: {error.message}") from None
    target = Path(tempfile.mkdtemp(prefix="chesszero-web-"))
    mlflow.set_tracking_uri(uri)
    mlflow.artifacts.download_artifacts(artifact_uri=f"models:/{name}/{version.version}", dst_path=str(target))
    files = sorted(target.rglob("*.onnx"))
    if not files:
        raise ValueError(f"version {version.version} of {name!r} holds no ONNX file")
    generation = _generation(version.tags.get("artifact"))
    return RegistryModel(path=files[0], name=name, version=str(version.version), generation=generation,
                         rating=_rating(client, version.run_id, generation))
