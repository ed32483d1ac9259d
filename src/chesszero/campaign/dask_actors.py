"""The Dask side of running actor jobs: which workers may run them, where a
job goes, and where a failed one ran.

Before each generation's actor jobs are submitted, every connected worker is
checked (:func:`check_workers`): it must import the package and see the
campaign's directory. A worker that cannot is named in a warning and gets no
actor (:class:`Placement` restricts each job to the workers that passed; a
worker that joins later is checked at the next generation, or as soon as a
job of this one has no allowed worker left). With workers connected but none
usable the campaign stops with :class:`NoUsableWorker`, naming each worker
and its error. This matters because Dask cannot hand a task to a worker that
fails to import its code: the worker drops its connection and exits, and the
job would wait for a worker forever.

A job that failed on some workers goes to the other allowed ones while any
is connected. Restrictions are strict (work stealing hands a loosely
restricted task to any idle worker); a job whose allowed workers have all
gone is withdrawn and placed again (:meth:`Placement.stranded`).

Nothing here imports Dask at module level; the flow passes the runner's
client in.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from chesszero.campaign.actor_dispatch import JobFuture, describe


class NoUsableWorker(RuntimeError):
    """Workers are connected but none can run an actor: the message names each and why."""

    def __init__(self, broken: dict[str, str]):
        self.broken = broken
        lines = "\n".join(f"  worker {w}: {err}" for w, err in broken.items())
        super().__init__(f"no connected Dask worker can run self-play actors; the campaign stops (fix their "
                         f"environment or add a worker that can, then rerun the same command to resume):\n{lines}")


def worker_label(address: str, name: Any) -> str:
    """`address (name)`, or the address alone for a worker without its own name."""
    return address if name is None or str(name) == address else f"{address} ({name})"


def _make_probe() -> Any:
    """The check each worker runs. Defined inside a function so that cloudpickle
    ships it by value: a worker that cannot import the package can still run
    it and say so."""

    def probe(state_path: str) -> str | None:
        import importlib
        import os

        try:
            importlib.import_module("chesszero.campaign.flow")  # what an actor task unpickles
        except BaseException as exc:  # noqa: BLE001 - any failure to import is the answer
            return f"cannot import chesszero: {type(exc).__name__}: {exc}"
        if not os.path.exists(state_path):
            return f"cannot see the campaign directory ({state_path} does not exist on this worker)"
        return None

    return probe


def check_workers(client: Any, state_path: Path) -> tuple[list[str], dict[str, str]]:
    """(addresses of the connected workers that can run actors, {label: error} of those that cannot)."""
    names = {addr: w.get("name") for addr, w in client.scheduler_info(n_workers=-1)["workers"].items()}
    answers = client.run(_make_probe(), str(state_path), on_error="return")
    healthy: list[str] = []
    broken: dict[str, str] = {}
    for addr, answer in sorted(answers.items()):
        error = describe(answer) if isinstance(answer, BaseException) else answer
        if error is None:
            healthy.append(addr)
        else:
            broken[worker_label(addr, names.get(addr))] = error
    return healthy, broken


class Placement:
    """The workers allowed to run this generation's actor jobs, and where each job goes."""

    def __init__(self, client: Any, state_path: Path, warn: Callable[[str], None]):
        self.client, self.state_path, self.warn = client, state_path, warn
        self.allowed: list[str] = []
        self.broken: dict[str, str] = {}
        self.refresh()

    def refresh(self) -> None:
        """Checks the connected workers again; warns about each newly unusable one."""
        allowed, broken = check_workers(self.client, self.state_path)
        for worker, error in broken.items():
            if worker not in self.broken:
                self.warn(f"Dask worker {worker} gets no self-play actor: {error}")
        self.allowed, self.broken = allowed, broken
        if broken and not allowed:
            raise NoUsableWorker(broken)

    def workers_for(self, avoid: Collection[str]) -> list[str] | None:
        """The allowed workers other than `avoid` (labels of workers the job
        failed on), or all allowed ones when that leaves none; None (any
        worker) while none is connected."""
        if not self.allowed:
            return None
        avoided = {part.split(" ", 1)[0] for label in avoid for part in label.split(", ")}  # "address (name)"
        return [w for w in self.allowed if w not in avoided] or self.allowed

    def stranded(self, futures: dict[int, JobFuture]) -> list[int]:
        """Withdraws the jobs that wait with none of their workers connected
        (Dask's ``no-worker`` state) once the workers connected now include an
        allowed one; returns their indexes."""
        keys = {k: f.wrapped_future.key for k, f in futures.items() if hasattr(f, "wrapped_future")}

        wanted = list(keys.values())

        def states(dask_scheduler: Any) -> dict[Any, str]:  # runs on the scheduler (shipped by value)
            return {key: dask_scheduler.tasks[key].state for key in wanted if key in dask_scheduler.tasks}

        found = self.client.run_on_scheduler(states) if keys else {}
        stuck = [k for k, key in keys.items() if found.get(key) == "no-worker"]
        if not stuck:
            return []
        self.refresh()
        if not self.allowed:
            return []
        for k in stuck:
            futures[k].wrapped_future.cancel()
        return stuck


def locate(client: Any, future: Any, exc: BaseException) -> str:
    """Where a failed actor task ran: the worker's label (see ``worker_label``)."""
    last = getattr(exc, "last_worker", None)  # distributed's KilledWorker: the last worker that died running it
    if last is not None:
        return worker_label(str(last.address), last.name)
    key = getattr(getattr(future, "wrapped_future", None), "key", None)
    if key is None:
        return "an unknown Dask worker"

    def where(dask_scheduler: Any) -> list[str]:  # runs on the scheduler (shipped by value)
        ts = dask_scheduler.tasks.get(key)
        if ts is None:
            return []
        found = sorted(ts.erred_on or ()) or sorted(ws.address for ws in ts.who_has or ())
        named = {a: getattr(dask_scheduler.workers.get(a), "name", None) for a in found}
        return [a if named[a] is None or str(named[a]) == a else f"{a} ({named[a]})" for a in found]

    try:
        found = client.run_on_scheduler(where)
    except Exception as err:  # noqa: BLE001 - say so rather than hide the actor's own error
        return f"an unknown Dask worker (the scheduler did not answer: {describe(err)})"
    return ", ".join(found) or "an unknown Dask worker (the scheduler no longer knows the task)"


__all__ = ["NoUsableWorker", "Placement", "check_workers", "locate", "worker_label"]
