"""The learning benchmark in MLflow: one run per benchmark, tagged with its recipe diff.

Ablations are compared in the MLflow UI (``make mlflow-ui``, experiment
``learning-benchmark``) and in ``reports/learning_compare.py --table``.

- ``recipe_diff(recipe, base)``: the keys (dotted paths) where a resolved
  recipe differs from a base recipe (the ``cpu`` preset), with the recipe's
  value (``<absent>`` where it lacks the key); pure, tested.
- ``recipe_tags(diff)``: those as MLflow tags ``recipe.<key>`` (e.g.
  ``recipe.search.root = gumbel``), with ``recipe.base`` and ``recipe.changes``.
- ``benchmark_metrics(summary)``: the final and control joint ratings per
  mode (``final/<mode>``, ``control/<mode>``), the gains (``gain/<mode>``),
  each with ``_lo``/``_hi``/``_bound`` as ``metrics.joint_elo_key`` logs
  them, every match's score, the policy-only stalemates and conversions, the
  generations and wall minutes.
- ``log_benchmark(root, summary, folder, tags)``: the run in the project's
  store (``sqlite:///<root>/mlruns/mlflow.db``, artifacts under
  ``<root>/mlruns/artifacts``), named and tagged after the campaign (a rerun
  with ``--resume`` updates the same run), with the folder's files as artifacts.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

EXPERIMENT = "learning-benchmark"
BASE_PRESET = "cpu"
TAG_CAMPAIGN = "chesszero.campaign"
ABSENT = "<absent>"
MAX_TAG = 5000


def _flat(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def recipe_diff(recipe: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, str]:
    """Dotted key -> the recipe's value (as text) wherever it differs from `base`."""
    a, b = _flat(recipe), _flat(base)
    return {k: ABSENT if k not in a else str(a[k]) for k in sorted(set(a) | set(b))
            if a.get(k, ABSENT) != b.get(k, ABSENT)}


def recipe_tags(diff: Mapping[str, str], base: str = BASE_PRESET) -> dict[str, str]:
    """``recipe.<key>`` per differing key (values cut to MLflow's tag size),
    plus ``recipe.base`` and ``recipe.changes`` (how many keys differ)."""
    tags = {f"recipe.{k}": v[:MAX_TAG] for k, v in diff.items()}
    return {**tags, "recipe.base": base, "recipe.changes": str(len(diff))}


def _rating_metrics(prefix: str, rating: Mapping[str, Any] | None) -> dict[str, float]:
    """A joint rating or gain dict (``to_dict``) as ``prefix``, ``_lo``, ``_hi``,
    ``_bound`` (+1 lower bound, -1 upper bound, 0 point); nothing when undetermined."""
    if not rating or rating.get("estimate") is None:
        return {}
    direction = rating.get("direction", "")
    out = {prefix: float(rating["estimate"]), f"{prefix}_bound": {">": 1.0, "<": -1.0}.get(direction, 0.0)}
    for end in ("lower", "upper"):
        value = rating.get(end)
        if value is not None and math.isfinite(value):
            out[f"{prefix}_{'lo' if end == 'lower' else 'hi'}"] = float(value)
    return out


def benchmark_metrics(summary: Mapping[str, Any]) -> dict[str, float]:
    """The metrics of a benchmark run, from its ``summary.json`` (module docstring)."""
    final = summary.get("final_evaluation", {})
    out: dict[str, float] = {"generations": float(summary.get("generations", 0))}
    wall = summary.get("wall", {})
    if "campaign_recorded_s" in wall:
        out["wall/campaign_min"] = wall["campaign_recorded_s"] / 60.0
    for when, speed in summary.get("host_speed", {}).items():
        if isinstance(speed, Mapping):  # host_speed.HostSpeed.to_dict(), before and after the run
            out[f"host/{when}/perft_nodes_per_s"] = float(speed["perft_nodes_per_s"])
            out[f"host/{when}/train_samples_per_s"] = float(speed["train_samples_per_s"])
    for arm, modes in final.get("joints", {}).items():
        for mode, rating in modes.items():
            out.update(_rating_metrics(f"{arm}/{mode}", rating))
    for mode, gain in final.get("gain", {}).items():
        out.update(_rating_metrics(f"gain/{mode}", gain))
    for m in final.get("matches", []):
        arm = m.get("arm", "final")
        out[f"score/{arm}/{m['mode']}/{m['opponent']}"] = float(m["score"])
        if m["mode"] == "policy":
            out[f"stalemates/{arm}/policy/{m['opponent']}"] = float(m["terminations"].get("stalemate", 0))
            if m.get("conversion_opportunities"):
                out[f"conversion/{arm}/policy/{m['opponent']}"] = float(m["conversion_rate"])
            if m.get("mate_in_one_available"):
                out[f"mate_in_one/{arm}/policy/{m['opponent']}"] = m["mate_in_one_played"] / m["mate_in_one_available"]
    return out


def log_benchmark(root: Path, summary: Mapping[str, Any], folder: Path, tags: Mapping[str, str]) -> str:
    """Logs the run (module docstring); returns its id."""
    from mlflow.entities import Metric, RunTag
    from mlflow.tracking import MlflowClient

    from chesszero.campaign.tracking import ensure_store, tracking_uri

    artifacts = root / "mlruns" / "artifacts"
    artifacts.mkdir(parents=True, exist_ok=True)
    ensure_store(root)
    client = MlflowClient(tracking_uri=tracking_uri(root))
    exp = client.get_experiment_by_name(EXPERIMENT)
    exp_id = exp.experiment_id if exp is not None else client.create_experiment(
        EXPERIMENT, artifact_location=artifacts.resolve().as_uri())
    name = str(summary["campaign"])
    found = client.search_runs([exp_id], f"tags.`{TAG_CAMPAIGN}` = '{name}'", max_results=1)
    run_id = found[0].info.run_id if found else client.create_run(exp_id, run_name=name).info.run_id
    git = summary.get("git", {})
    all_tags = {TAG_CAMPAIGN: name, "preset": str(summary.get("preset")), "hours": str(summary.get("hours")),
                "git.commit": str(git.get("commit")), "git.dirty": str(git.get("dirty")), **tags}
    now = int(time.time() * 1000)
    metrics = [Metric(k, v, now, 0) for k, v in benchmark_metrics(summary).items()]
    run_tags = [RunTag(k, v) for k, v in all_tags.items()]
    for i in range(0, len(metrics), 900):  # MLflow's batch limits: 1000 metrics, 100 tags
        client.log_batch(run_id, metrics=metrics[i:i + 900])
    for i in range(0, len(run_tags), 100):
        client.log_batch(run_id, tags=run_tags[i:i + 100])
    for path in sorted(folder.iterdir()):
        if path.is_file():
            client.log_artifact(run_id, str(path))
    client.set_terminated(run_id, "FINISHED")
    return run_id


__all__ = ["EXPERIMENT", "benchmark_metrics", "log_benchmark", "recipe_diff", "recipe_tags"]
