"""Short campaigns for a study: one per arm, the same recipe but for the arm's overrides.

Each arm becomes a preset of ``<work>/params.yaml`` (``StudyContext.write_presets``)
and a fresh campaign ``<study>-<arm>`` under ``<work>/runs/``, run in this
process by the project's own phase loop (``campaign.dispatch.run_local``:
self-play actors, replay, training quanta, publication and its gate,
resignation, ladder evaluation), with its progress bars. Its MLflow run is
tagged as a child of the study's parent run; :func:`arm_series` reads its
metrics back by generation.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chesszero.campaign import metrics as M
from chesszero.studies.context import StudyContext, StudyRun

__all__ = ["Arm", "ArmResult", "run_arms"]


@dataclass(frozen=True)
class Arm:
    """One configuration of a study's campaigns."""

    slug: str  # campaign name suffix and preset name
    label: str  # as the report shows it
    overrides: Mapping[str, Any]


@dataclass
class ArmResult:
    arm: Arm
    campaign: str
    run_id: str
    series: dict[str, dict[int, float]]  # metric key -> {generation: value}
    generations: int

    def values(self, key: str) -> list[float]:
        """The metric by generation (generations without it left out)."""
        data = self.series.get(key, {})
        return [data[g] for g in sorted(data)]

    def at(self, key: str) -> list[float | None]:
        """The metric at every generation 0..generations-1, None where not logged."""
        data = self.series.get(key, {})
        return [data.get(g) for g in range(self.generations)]

    def total(self, key: str) -> float:
        return float(sum(self.values(key)))


def _series(uri: str, campaign: str) -> tuple[str, dict[str, dict[int, float]]]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(M.EXPERIMENT)
    found = [] if exp is None else client.search_runs(
        [exp.experiment_id], f"tags.`{M.TAG_CAMPAIGN}` = '{campaign}' and tags.`{M.TAG_KIND}` = 'campaign'",
        order_by=["attributes.start_time DESC"], max_results=1)
    if not found:
        raise RuntimeError(f"campaign {campaign!r} logged no MLflow run in {uri}")
    run = found[0]
    return run.info.run_id, {key: {m.step: m.value for m in client.get_metric_history(run.info.run_id, key)}
                             for key in run.data.metrics}


def run_arms(ctx: StudyContext, tracker: StudyRun, *, base_preset: str, arms: list[Arm], generations: int,
             common: Mapping[str, Any]) -> list[ArmResult]:
    """Runs every arm's campaign from scratch for ``generations`` generations."""
    from chesszero.campaign.context import Campaign
    from chesszero.campaign.dispatch import Limits, run_local
    from chesszero.campaign.progress import Reporter
    from chesszero.config.loader import _expand_dotted, deep_merge

    presets = {}
    for arm in arms:
        merged = deep_merge(_expand_dotted(common), _expand_dotted(arm.overrides))
        merged = deep_merge(merged, {"campaign": {"generations": generations}})
        presets[arm.slug] = (base_preset, merged)
    ctx.write_presets(presets)
    results = []
    for arm in arms:
        name = f"{ctx.name}-{arm.slug}"
        shutil.rmtree(ctx.work / "runs" / name, ignore_errors=True)
        campaign = Campaign.open(ctx.work, name, preset=arm.slug)
        with ctx.phase(f"campaign `{arm.slug}`"), Reporter(campaign, enabled=True) as reporter:
            run_local(campaign, Limits(generations=generations, hours=1000.0), reporter)
        run_id, series = _series(ctx.tracking_uri, name)
        tracker.adopt(run_id)
        results.append(ArmResult(arm, name, run_id, series, generations))
    return results

