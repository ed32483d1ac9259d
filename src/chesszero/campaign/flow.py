"""The `final-recipe` Prefect flow: ``dispatch.drive`` with Prefect tasks.

Each stage of a generation runs as a Prefect task (named after the stage) and
the self-play actors are mapped over a task runner the flow picks from the
campaign's recipe when it starts (``actor_runner``: the Dask scheduler at
``campaign.dask_address``, else one thread per actor in this process), so a
run started by ``make run`` and one started from a deployment that
``flows/serve.py`` serves (which loads the flow from its entry point, with no
task runner of ours attached) map the actors the same way; a failed actor
job is resubmitted a bounded number of times (``actor_dispatch``: a worker
lost mid-play is Dask's to rerun, a job that keeps failing stops the
campaign naming each worker and error) and, on Dask, only workers that pass
a check at the start of the generation get actors (``dask_actors``). The phase
loop itself is ``dispatch.drive``, the same one ``--no-prefect`` runs; the
durable campaign state decides where to start, so re-running the same
command after Ctrl-C or kill -9 resumes.

    make run                                          # this flow, in-process (ephemeral API)
    prefect deployment run final-recipe/cpu          # with a server + `python flows/serve.py`
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

from chesszero.campaign import dask_actors
from chesszero.campaign.actor_dispatch import JobFuture, run_actor_jobs
from chesszero.campaign.context import Campaign
from chesszero.campaign.dispatch import Limits, Metrics, Stage, StageArgs, drive, run_stage
from chesszero.campaign.progress import Reporter
from chesszero.campaign.selfplay_stage import ActorJob, run_actor_job
from chesszero.config import Config


def _open(root: str, name: str, preset: str) -> Campaign:
    return Campaign.open(Path(root), name, preset=preset)


@task(name="stage", cache_policy=NO_CACHE)
def stage_task(root: str, name: str, preset: str, stage: str, args: StageArgs) -> Metrics:
    return run_stage(_open(root, name, preset), Stage(stage), args)


@task(name="self-play actor", tags=["actor"], cache_policy=NO_CACHE)
def actor_task(job: ActorJob) -> list[dict[str, Any]]:
    return [asdict(s) for s in run_actor_job(job)]


def actor_runner(cfg: Config) -> TaskRunner:
    """Where the self-play actors run: the Dask scheduler at
    ``campaign.dask_address``, or (null) threads of this process, one per
    actor (``publish.placement``: on GPUs, GPUs x actors per GPU)."""
    address = cfg.campaign.dask_address
    if address:
        from prefect_dask import DaskTaskRunner

        return DaskTaskRunner(address=address)
    from chesszero.publish.placement import actor_layout

    return ThreadPoolTaskRunner(max_workers=max(1, actor_layout(cfg).actors))


def _dask_client(runner: TaskRunner) -> Any:
    """The runner's Dask client, or None for a runner without one (threads)."""
    prefect_dask = sys.modules.get("prefect_dask")  # imported by actor_runner when it made a Dask runner
    return runner.client if prefect_dask is not None and isinstance(runner, prefect_dask.DaskTaskRunner) else None


def _submit(runner: TaskRunner, placement: dask_actors.Placement | None, job: ActorJob,
            avoid: Collection[str]) -> JobFuture:
    """Submits an actor job; on Dask restricted to the workers ``placement`` picks for it."""
    workers = placement.workers_for(avoid) if placement is not None else None
    if workers is None:
        return runner.submit(actor_task, {"job": job})
    import dask

    with dask.annotate(workers=workers, allow_other_workers=False):
        return runner.submit(actor_task, {"job": job})


def _locate(runner: TaskRunner, future: JobFuture, exc: BaseException) -> str:
    client = _dask_client(runner)
    return "this process (thread runner)" if client is None else dask_actors.locate(client, future, exc)


def _submit_actors(runner: TaskRunner, camp: Campaign, warn: Callable[[str], None], jobs: list[ActorJob],
                   advance: Callable[[int], None]) -> None:
    """One generation's actor jobs on the runner (``actor_dispatch``); on Dask
    placed on the workers that pass ``dask_actors.check_workers`` now."""
    if not jobs:
        return
    client = _dask_client(runner)
    placement = dask_actors.Placement(client, camp.paths.state, warn) if client is not None else None
    attempts = camp.cfg.campaign.actor_attempts
    run_actor_jobs(jobs, advance, submit=partial(_submit, runner, placement), locate=partial(_locate, runner),
                   attempts=attempts, warn=warn, stranded=placement.stranded if placement is not None else None)


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

    with actor_runner(camp.cfg) as runner, Reporter(camp, enabled=progress) as reporter:
        drive(camp, Limits(generations, hours), stages, partial(_submit_actors, runner, camp, logger.warning),
              reporter)
    return camp.summary()


__all__ = ["actor_runner", "final_recipe"]
