"""The `final-recipe` Prefect flow: a campaign of generations.

Each phase of a generation is a Prefect task wrapping one function of
``chesszero.campaign.runner``; the actors of the self-play phase are mapped
over the flow's task runner (threads locally, a Dask cluster when the recipe
gives ``campaign.dask_address``). The durable campaign state decides where
to start, so re-running the same command after Ctrl-C or kill -9 resumes.

    prefect deployment run final-recipe/cpu          # with a server + `python flows/serve.py`
    make run                                          # same flow, in-process (ephemeral API)
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import cloudpickle
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from chesszero.campaign import runner
from chesszero.campaign.context import Campaign
from chesszero.campaign.progress import Reporter
from chesszero.campaign.selfplay_stage import ActorJob, run_actor_job
from chesszero.campaign.state import Phase

# Ship this module's tasks by value: Dask workers have the chesszero package
# but not the flows/ directory on their path.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _open(root: str, name: str, preset: str) -> Campaign:
    return Campaign.open(Path(root), name, preset=preset)


@task(name="bootstrap", cache_policy=NO_CACHE)
def bootstrap_task(root: str, name: str, preset: str) -> dict[str, Any]:
    campaign = _open(root, name, preset)
    runner.bootstrap(campaign)
    return campaign.summary()


@task(name="self-play actor", tags=["actor"], cache_policy=NO_CACHE)
def actor_task(job: ActorJob) -> list[dict[str, Any]]:
    return [asdict(s) for s in run_actor_job(job)]


@task(name="finish self-play", cache_policy=NO_CACHE)
def finish_selfplay_task(root: str, name: str, preset: str, started: float) -> dict[str, float]:
    return runner.finish_selfplay(_open(root, name, preset), started)


@task(name="materialize", cache_policy=NO_CACHE)
def materialize_task(root: str, name: str, preset: str) -> dict[str, float]:
    return runner.materialize(_open(root, name, preset))


@task(name="train quantum", cache_policy=NO_CACHE)
def train_task(root: str, name: str, preset: str) -> dict[str, float]:
    campaign = _open(root, name, preset)
    return runner.train_quantum(campaign, runner.overlap_player(campaign))


@task(name="publish", cache_policy=NO_CACHE)
def publish_task(root: str, name: str, preset: str) -> dict[str, float]:
    return runner.publish(_open(root, name, preset))


@task(name="resignation", cache_policy=NO_CACHE)
def resign_task(root: str, name: str, preset: str) -> dict[str, float]:
    return runner.resign(_open(root, name, preset))


@task(name="evaluate", cache_policy=NO_CACHE)
def evaluate_task(root: str, name: str, preset: str, generations: int | None,
                  hours: float | None) -> dict[str, float]:
    return runner.evaluate(_open(root, name, preset), generations=generations, hours=hours)


@flow(name="final-recipe", log_prints=True)
def final_recipe(preset: str = "cpu", campaign: str | None = None, root: str = ".",
                 generations: int | None = None, hours: float | None = None,
                 progress: bool = False) -> dict[str, Any]:
    """Runs (or resumes) campaign `campaign` (default `<preset>-main`) of `preset`."""
    import time

    logger = get_run_logger()
    name = campaign or f"{preset}-main"
    root = str(Path(root).resolve())
    camp = _open(root, name, preset)
    bootstrap_task(root, name, preset)
    reporter = Reporter(camp, enabled=progress)
    state = camp.load_state()
    with reporter:
        while True:
            g = state.generation
            phase = state.phase
            if phase is Phase.SELFPLAY:
                if not runner.budget_left(camp, state, generations=generations, hours=hours):
                    break
                started = time.time()
                jobs = runner.plan(camp)
                reporter.selfplay(g, sum(j.positions for j in jobs))
                futures = [actor_task.submit(job) for job in jobs]
                for f in futures:
                    reporter.advance_positions(sum(s["positions"] for s in f.result()))
                reporter.phase("self-play", finish_selfplay_task(root, name, preset, started))
            elif phase is Phase.MATERIALIZE:
                reporter.phase("materialize", materialize_task(root, name, preset))
            elif phase is Phase.TRAIN:
                reporter.phase("train", train_task(root, name, preset))
            elif phase is Phase.PUBLISH:
                reporter.phase("publish", publish_task(root, name, preset))
            elif phase is Phase.RESIGN:
                reporter.phase("resignation", resign_task(root, name, preset))
            elif phase is Phase.EVALUATE:
                reporter.phase("evaluate", evaluate_task(root, name, preset, generations, hours))
                reporter.generation_done(g)
                logger.info("generation %d done", g)
            state = camp.load_state()
    return camp.summary()
