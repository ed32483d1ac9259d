"""Attempts of actor jobs: who ran which share of self-play, and who may commit.

An actor job may run more than once: Dask runs it again on another worker
when the worker that ran it dies, and the flow resubmits a share that failed
(``actor_dispatch``). Each run is an *attempt*. When it starts, an attempt

- writes its record, ``runs/<campaign>/attempts/gen_<g>/<label>_a<actor>_<attempt>.json``
  (the worker's Dask address and name, or ``local`` in the campaign process;
  host; pid; the job's id and share): the trace of where each share ran;
- takes the actor's lease, ``actors/actor_<k>/lease.json``: the newest attempt
  of an actor holds it. Before committing a shard (``pending.json``, the
  sidecar) an attempt checks that it still holds the lease; one that lost it
  (a worker cut off from the scheduler but still playing while its share
  runs elsewhere) drops its shard, which is then an orphan without a sidecar
  and never counted. The check and the commit are two steps on a shared
  filesystem, not one atomic one.

Shards name their attempt and job (``ActorSummary.attempt``, ``job_id``), so a
job that runs again plays only what its earlier attempts did not commit.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from chesszero.campaign.context import CampaignPaths
from chesszero.fsio import write_json_atomic

LOCAL = "local"
"""The worker of an attempt that ran in the campaign's own process (threads)."""


@dataclass(frozen=True)
class Attempt:
    """One run of an actor job."""

    attempt: str
    job_id: str
    generation: int
    label: str
    actor: int
    positions: int  # the job's share
    worker: str  # Dask worker address, or LOCAL
    worker_name: str  # the worker's --name (its address when unnamed), or LOCAL
    host: str
    pid: int
    started: float


class SupersededAttempt(RuntimeError):
    """A newer attempt of the same actor started: this one must not commit."""


def current_worker() -> tuple[str, str]:
    """(address, name) of the Dask worker running this code, else (LOCAL, LOCAL)."""
    if "distributed" not in sys.modules:  # a Dask worker has imported it: this is not one
        return LOCAL, LOCAL
    from distributed import get_worker

    try:
        worker = get_worker()
    except ValueError:  # not inside a Dask task
        return LOCAL, LOCAL
    return str(worker.address), str(worker.name)


def attempts_dir(paths: CampaignPaths, generation: int) -> Path:
    return paths.dir / "attempts" / f"gen_{generation:04d}"


def lease_path(paths: CampaignPaths, actor: int) -> Path:
    return paths.actor(actor) / "lease.json"


def begin(paths: CampaignPaths, *, job_id: str, generation: int, label: str, actor: int, positions: int) -> Attempt:
    """Records a new attempt and hands it the actor's lease."""
    worker, name = current_worker()
    attempt = Attempt(attempt=uuid.uuid4().hex[:12], job_id=job_id, generation=generation, label=label,
                      actor=actor, positions=positions, worker=worker, worker_name=name, host=socket.gethostname(),
                      pid=os.getpid(), started=time.time())
    write_json_atomic(lease_path(paths, actor), asdict(attempt))
    write_json_atomic(attempts_dir(paths, generation) / f"{label}_a{actor}_{attempt.attempt}.json", asdict(attempt))
    return attempt


def check_lease(paths: CampaignPaths, attempt: Attempt) -> None:
    """Raises :class:`SupersededAttempt` unless `attempt` still holds its actor's lease."""
    path = lease_path(paths, attempt.actor)
    holder: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    if holder.get("attempt") != attempt.attempt:
        raise SupersededAttempt(
            f"actor {attempt.actor} attempt {attempt.attempt} on {attempt.worker} lost its lease to attempt "
            f"{holder.get('attempt')} on {holder.get('worker')}: its shard is dropped")


def read_attempts(paths: CampaignPaths, generation: int) -> list[Attempt]:
    """The attempts recorded for a generation, oldest first."""
    found = [Attempt(**json.loads(p.read_text())) for p in attempts_dir(paths, generation).glob("*.json")]
    return sorted(found, key=lambda a: a.started)


__all__ = ["LOCAL", "Attempt", "SupersededAttempt", "attempts_dir", "begin", "check_lease", "current_worker",
           "lease_path", "read_attempts"]
