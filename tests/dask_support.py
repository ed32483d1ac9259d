"""A local Dask cluster for the worker-loss tests: a scheduler and named
workers, each started with the ``dask`` command-line tools as its own process
group (the worker's nanny and its worker process), so that one can be killed
with SIGKILL as a machine would die, and others added while a campaign runs."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DASK = str(Path(sys.executable).with_name("dask"))
START_S = 180.0  # a process start on a busy 2-core machine


@dataclass
class Worker:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path


class LocalDask:
    """A scheduler and workers under `tmp`; ``close`` stops what is left."""

    def __init__(self, tmp: Path, env: dict[str, str]):
        self.tmp, self.env = tmp, env
        self.scheduler_file = tmp / "scheduler.json"
        self.workers: dict[str, Worker] = {}
        self.scheduler = self._spawn([DASK, "scheduler", "--scheduler-file", str(self.scheduler_file), "--port", "0",
                                      "--dashboard-address", ":0", "--no-show"], env, tmp / "scheduler.log")
        deadline = time.monotonic() + START_S
        while not self.scheduler_file.exists():  # the scheduler writes the file once it listens
            assert self.scheduler.poll() is None, "the scheduler exited; see scheduler.log"
            assert time.monotonic() < deadline, "the scheduler did not start"
            time.sleep(0.2)
        from distributed import Client

        self.client = Client(scheduler_file=str(self.scheduler_file), timeout=START_S)

    def _spawn(self, cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
        with open(log, "wb") as out:
            return subprocess.Popen(cmd, env=env, cwd=self.tmp, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)

    @property
    def address(self) -> str:
        return str(self.client.scheduler.address)

    def add_worker(self, name: str, env: dict[str, str] | None = None) -> Worker:
        """Starts worker `name` (one process, one thread) and waits until the scheduler has it."""
        log = self.tmp / f"worker-{name}.log"
        proc = self._spawn([DASK, "worker", "--scheduler-file", str(self.scheduler_file), "--nworkers", "1",
                            "--nthreads", "1", "--no-dashboard", "--name", name], env or self.env, log)
        self.workers[name] = Worker(name, proc, log)
        deadline = time.monotonic() + START_S
        while name not in self.names():
            assert proc.poll() is None, f"worker {name} exited; see {log}"
            assert time.monotonic() < deadline, f"worker {name} did not register; see {log}"
            time.sleep(0.2)
        return self.workers[name]

    def names(self) -> dict[str, str]:
        """Connected workers: name -> address, asked of the scheduler each time. (Not
        ``Client.scheduler_info``: once in CI it listed no `noimport` worker while the
        scheduler's log shows that worker registered until the test closed the cluster;
        when its refresh is skipped it returns a cached identity, which the client's
        periodic refresh keeps without per-worker entries.)"""
        info: dict[str, Any] = self.client.sync(self.client.scheduler.identity, n_workers=-1)["workers"]
        return {str(w["name"]): addr for addr, w in info.items()}

    def kill(self, name: str) -> None:
        """SIGKILL to the worker's whole process group (nanny and worker: nothing restarts it)."""
        proc = self.workers[name].proc
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)

    def close(self) -> None:
        self.client.close()
        procs = [w.proc for w in self.workers.values()] + [self.scheduler]
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@contextlib.contextmanager
def local_dask(tmp: Path, env: dict[str, str]) -> Any:
    cluster = LocalDask(tmp, env)
    try:
        yield cluster
    finally:
        cluster.close()
