"""Running a generation's actor jobs on the flow's task runner with bounded retries.

The flow submits one task per actor job to its task runner (Dask workers, or
threads of the campaign process) and :func:`run_actor_jobs` waits on them as
they finish, in any order:

- a worker that dies while it plays (SIGKILL, OOM, a lost machine) is Dask's
  to handle: the scheduler runs the task again on another worker and the
  future only sees the second run; that run is a new attempt of the job
  (``attempts``) and plays only what the dead one did not commit;
- a job whose attempt fails (the actor raises, the worker cannot import the
  package, or Dask gives up after ``distributed.scheduler.allowed-failures``
  workers died running it: ``KilledWorker``) is logged with the worker and
  the error and submitted again, steered away from the workers it failed on
  while others are connected, up to ``attempts`` times in all;
- a job that fails that many times stops the campaign with
  :class:`ActorFailure`, which names each attempt's worker and error, once
  the other jobs in flight have ended (their shards count on the next run);
- a job left waiting with no worker it may run on (``stranded``: on Dask,
  every worker allowed this generation has gone) is withdrawn and submitted
  again, placed afresh; that is not a failed attempt.
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, Protocol

from chesszero.campaign.selfplay_stage import ActorJob

DEFAULT_ATTEMPTS = 3
"""Attempts per actor job when the recipe names none (``campaign.actor_attempts``)."""


class JobFuture(Protocol):
    """What a task runner's future offers (Prefect's futures do)."""

    def result(self) -> Any: ...

    def add_done_callback(self, fn: Callable[[Any], None]) -> None: ...


Submit = Callable[[ActorJob, Collection[str]], JobFuture]
"""Submits a job, steered away from the given workers when it can."""

Locate = Callable[[JobFuture, BaseException], str]
"""Names the worker where a failed future ran (its Dask address, or a description)."""

Stranded = Callable[[dict[int, JobFuture]], list[int]]
"""Of the futures in flight (by job index), withdraws those that no worker may
run now and returns their indexes (they are submitted again)."""


@dataclass(frozen=True)
class FailedAttempt:
    """One failed attempt of an actor job."""

    generation: int
    label: str
    actor: int
    worker: str
    error: str

    def line(self) -> str:
        return f"worker {self.worker}: {self.error}"


class ActorFailure(RuntimeError):
    """An actor job failed on every attempt: the message names each worker and error."""

    def __init__(self, failures: list[FailedAttempt], attempts: int):
        self.failures = failures
        first = failures[0]
        lines = "\n".join(f"  {f.line()}" for f in failures)
        workers = ", ".join(dict.fromkeys(f.worker for f in failures))
        super().__init__(
            f"self-play actor {first.actor} ({first.label}) of generation {first.generation} failed "
            f"{len(failures)} of {attempts} allowed attempts, on {workers}; the campaign stops "
            f"(fix or remove the worker and rerun the same command to resume):\n{lines}")


def describe(exc: BaseException) -> str:
    """`Type: message` of an error, its first line only."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def run_actor_jobs(jobs: list[ActorJob], advance: Callable[[int], None], *, submit: Submit, locate: Locate,
                   attempts: int = DEFAULT_ATTEMPTS, warn: Callable[[str], None] = print,
                   stranded: Stranded | None = None, poll_s: float = 10.0) -> None:
    """Runs the jobs to completion, resubmitting failed ones; calls `advance`
    with the positions each finished job wrote. Raises :class:`ActorFailure`
    for the first job that failed `attempts` times, after the rest ended.
    With `stranded`, jobs in flight are checked every `poll_s` seconds."""
    if attempts < 1:
        raise ValueError(f"actor attempts must be at least 1, got {attempts}")
    finished: queue.Queue[tuple[int, JobFuture]] = queue.Queue()
    failures: dict[int, list[FailedAttempt]] = {}
    current: dict[int, JobFuture] = {}  # the live submission of each job in flight
    given_up: list[int] = []

    def launch(k: int) -> None:
        future = submit(jobs[k], [f.worker for f in failures.get(k, [])])
        current[k] = future
        future.add_done_callback(lambda done, k=k: finished.put((k, done)))

    for k in range(len(jobs)):
        launch(k)
    while current:
        try:
            k, future = finished.get(timeout=poll_s) if stranded is not None else finished.get()
        except queue.Empty:
            for k in stranded(dict(current)) if stranded is not None else []:
                warn(f"self-play actor {jobs[k].actor} of generation {jobs[k].generation}: no worker may run it "
                     "now; submitted again")
                launch(k)
            continue
        if current.get(k) is not future:  # a submission withdrawn as stranded
            continue
        del current[k]
        try:
            summaries = future.result()
        except Exception as exc:  # noqa: BLE001 - any failure of an attempt is reported and retried
            job = jobs[k]
            failed = FailedAttempt(job.generation, job.label, job.actor, locate(future, exc), describe(exc))
            failures.setdefault(k, []).append(failed)
            tries = len(failures[k])
            warn(f"self-play actor {job.actor} of generation {job.generation}: attempt {tries} of {attempts} "
                 f"failed on {failed.line()}")
            if tries >= attempts:
                given_up.append(k)
            elif not given_up:
                launch(k)
            continue
        advance(sum(int(s["positions"]) for s in summaries))
    if given_up:
        raise ActorFailure(failures[given_up[0]], attempts)


__all__ = ["DEFAULT_ATTEMPTS", "ActorFailure", "FailedAttempt", "JobFuture", "Locate", "Stranded", "Submit",
           "describe", "run_actor_jobs"]
