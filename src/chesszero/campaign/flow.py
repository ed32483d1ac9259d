"""The `final-recipe` Prefect flow: ``dispatch.drive`` with Prefect tasks.

Each stage of a generation runs as a Prefect task (named after the stage) and
the self-play actors are mapped over the flow's task runner (threads locally,
a Dask cluster when the recipe gives ``campaign.dask_address``). The phase
loop itself is ``dispatch.drive``, the same one ``--no-prefect`` runs; the
durable campaign state decides where to start, so re-running the same
command after Ctrl-C or kill -9 resumes.

    make run                                          # this flow, in-process (ephemeral API)
    prefect deployment run final-recipe/cpu          # with a server + `python flows/serve.py`
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from chesszero.campaign.context import Campaign
from chesszero.campaign.dispatch import Limits, Metrics, Stage, StageArgs, drive, run_stage
from chesszero.campaign.progress import Reporter
from chesszero.campaign.selfplay_stage import ActorJob, run_actor_job


def _open(root: str, name: str, preset: str) -> Campaign:
    return Campaign.open(Path(root), name, preset=preset)


@task(name="stage", cache_policy=NO_CACHE)
def stage_task(root: str, name: str, preset: str, stage: str, args: StageArgs) -> Metrics:
    return run_stage(_open(root, name, preset), Stage(stage), args)


@task(name="self-play actor", tags=["actor"], cache_policy=NO_CACHE)
def actor_task(job: ActorJob) -> list[dict[str, Any]]:
    return [asdict(s) for s in run_actor_job(job)]


def _submit_actors(jobs: list[ActorJob], advance: Callable[[int], None]) -> None:
    futures = [actor_task.submit(job) for job in jobs]
    for f in futures:
        advance(sum(s["positions"] for s in f.result()))


@flow(name="final-recipe", log_prints=True)
def final_recipe(preset: str = "cpu", campaign: str | None = None, root: str = ".",
                 generations: int | None = None, hours: float | None = None,
                 progress: bool = False) -> dict[str, Any]:
    """Runs (or resumes) campaign `campaign` (default `<preset>-main`) of `preset`."""
    logger = get_run_logger()
    name = campaign or f"{preset}-main"
    root = str(Path(root).resolve())
    camp = _open(root, name, preset)

    def stages(stage: Stage, args: StageArgs) -> Metrics:
        metrics = stage_task.with_options(name=stage.value)(root, name, preset, stage.value, args)
        if stage is Stage.EVALUATE:
            logger.info("generation %d done", camp.load_state().generation - 1)
        return metrics

    with Reporter(camp, enabled=progress) as reporter:
        drive(camp, Limits(generations, hours), stages, _submit_actors, reporter)
    return camp.summary()


__all__ = ["final_recipe"]
