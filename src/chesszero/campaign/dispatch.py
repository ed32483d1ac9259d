"""The one phase loop of a campaign, shared by the Prefect flow and ``--no-prefect``.

The durable campaign state says which phase comes next; ``drive`` runs it
through two executors it is given: a ``StageRunner`` for the phase functions
of ``runner`` (in this process, or as Prefect tasks by ``flow``) and an
``ActorRunner`` for the self-play actor jobs (threads of this process here,
mapped over the flow's task runner there). Progress goes to an ``Observer``
(``progress.Reporter`` draws it). Stopping (Ctrl-C, kill -9) anywhere and
running the same command again resumes from the saved phase.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import asdict, dataclass
from functools import partial
from typing import Protocol

from chesszero.campaign import phaselog, runner
from chesszero.campaign.actor_dispatch import DEFAULT_ATTEMPTS, run_actor_jobs
from chesszero.campaign.context import Campaign
from chesszero.campaign.selfplay_stage import ActorJob, run_actor_job
from chesszero.campaign.state import CampaignState, Phase

Metrics = dict[str, float]


@dataclass(frozen=True)
class Limits:
    """How long the campaign runs: generations and/or wall hours (None: the recipe's)."""

    generations: int | None = None
    hours: float | None = None


class Stage(enum.Enum):
    """A unit of work the loop hands to the stage runner (its value names the task)."""

    BOOTSTRAP = "bootstrap"
    FINISH_SELFPLAY = "finish self-play"
    MATERIALIZE = "materialize"
    TRAIN = "train quantum"
    PUBLISH = "publish"
    RESIGN = "resignation"
    EVALUATE = "evaluate"


@dataclass(frozen=True)
class StageArgs:
    """What a stage needs beyond the durable state: when self-play started
    (finish self-play) and the campaign's limits (evaluation decides whether
    its generation is the last)."""

    started: float | None = None
    generations: int | None = None
    hours: float | None = None


_STAGE_OF_PHASE = {Phase.MATERIALIZE: Stage.MATERIALIZE, Phase.TRAIN: Stage.TRAIN, Phase.PUBLISH: Stage.PUBLISH,
                   Phase.RESIGN: Stage.RESIGN, Phase.EVALUATE: Stage.EVALUATE}


def run_stage(campaign: Campaign, stage: Stage, args: StageArgs = StageArgs()) -> Metrics:
    """Runs one stage in this process (a Prefect task body calls this too),
    between its start and end lines in the phase log."""
    with phaselog.span(campaign.paths.phase_log, campaign.load_state().generation, stage.value):
        return _run_stage(campaign, stage, args)


def _run_stage(campaign: Campaign, stage: Stage, args: StageArgs) -> Metrics:
    if stage is Stage.BOOTSTRAP:
        runner.bootstrap(campaign)
        return {}
    if stage is Stage.FINISH_SELFPLAY:
        return runner.finish_selfplay(campaign, time.time() if args.started is None else args.started)
    if stage is Stage.MATERIALIZE:
        return runner.materialize(campaign)
    if stage is Stage.TRAIN:
        return runner.train_quantum(campaign, runner.overlap_player(campaign))
    if stage is Stage.PUBLISH:
        return runner.publish(campaign)
    if stage is Stage.RESIGN:
        return runner.resign(campaign)
    return runner.evaluate(campaign, generations=args.generations, hours=args.hours)


StageRunner = Callable[[Stage, StageArgs], Metrics]
"""Runs a stage with its arguments and returns its metrics."""

ActorRunner = Callable[[list[ActorJob], Callable[[int], None]], None]
"""Runs the actor jobs, calling the second argument with the positions each job wrote."""


class Observer(Protocol):
    def selfplay(self, generation: int, positions: int) -> None: ...

    def advance_positions(self, n: int) -> None: ...

    def phase(self, name: str, metrics: Metrics) -> None: ...

    def generation_done(self, generation: int) -> None: ...


class Silent:
    """An observer that shows nothing."""

    def selfplay(self, generation: int, positions: int) -> None:
        pass

    def advance_positions(self, n: int) -> None:
        pass

    def phase(self, name: str, metrics: Metrics) -> None:
        pass

    def generation_done(self, generation: int) -> None:
        pass


def drive(campaign: Campaign, limits: Limits, stages: StageRunner, actors: ActorRunner,
          observer: Observer | None = None) -> CampaignState:
    """Runs (or resumes) the campaign until its limits; returns the final state.
    An inference backend this machine cannot run, or more GPUs asked for
    (``inference.gpus``) than it has, stops it here, before any work."""
    from chesszero.publish.backends import check_backend
    from chesszero.publish.placement import actor_layout

    check_backend(campaign.cfg.inference.backend)
    actor_layout(campaign.cfg)
    observer = observer or Silent()
    stages(Stage.BOOTSTRAP, StageArgs())
    state = campaign.load_state()
    while True:
        g, phase = state.generation, state.phase
        if phase is Phase.SELFPLAY:
            if not runner.budget_left(campaign, state, generations=limits.generations, hours=limits.hours):
                break
            started = time.time()
            jobs = runner.plan(campaign)
            observer.selfplay(g, sum(j.positions for j in jobs))
            with phaselog.span(campaign.paths.phase_log, g, "self-play"):
                actors(jobs, observer.advance_positions)
            observer.phase("self-play", stages(Stage.FINISH_SELFPLAY, StageArgs(started=started)))
        else:
            stage = _STAGE_OF_PHASE[phase]
            args = StageArgs(generations=limits.generations, hours=limits.hours)
            observer.phase(stage.value, stages(stage, args))
            if stage is Stage.EVALUATE:
                observer.generation_done(g)
        state = campaign.load_state()
    return state


def _actor_thread(job: ActorJob, _avoid: object = None) -> Future[list[dict[str, object]]]:
    """Plays `job` in a daemon thread of its own; its future holds the
    summaries. Daemon: Ctrl-C ends the campaign at once instead of waiting
    for the actors still playing (a stop anywhere is resumable)."""
    future: Future[list[dict[str, object]]] = Future()

    def play() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result([asdict(s) for s in run_actor_job(job)])
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting loop
            future.set_exception(exc)

    threading.Thread(target=play, name=f"actor-{job.actor}", daemon=True).start()
    return future


def run_actors_here(jobs: list[ActorJob], advance: Callable[[int], None], *,
                    attempts: int = DEFAULT_ATTEMPTS) -> None:
    """The jobs in threads of this process, all at once (one per actor, as
    the flow's thread runner maps them; the native search and the inference
    runtime release the GIL), with the flow's bounded retries
    (``actor_dispatch.run_actor_jobs``). Run one after another, the actors
    of ``--no-prefect`` left every core but one idle while they played."""
    run_actor_jobs(jobs, advance, submit=_actor_thread, locate=lambda _future, _exc: "this process (thread)",
                   attempts=attempts)


def run_local(campaign: Campaign, limits: Limits = Limits(), observer: Observer | None = None) -> CampaignState:
    """The campaign in this process, without Prefect (``--no-prefect``)."""
    return drive(campaign, limits, lambda stage, args: run_stage(campaign, stage, args),
                 partial(run_actors_here, attempts=campaign.cfg.campaign.actor_attempts), observer)


__all__ = ["ActorRunner", "Limits", "Metrics", "Observer", "Silent", "Stage", "StageArgs", "StageRunner", "drive", "run_local",
           "run_stage"]
