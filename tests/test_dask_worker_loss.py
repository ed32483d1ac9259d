"""Self-play that survives a lost Dask worker (issue 24): a real scheduler and
workers started with the ``dask`` tools as separate processes, a smoke
campaign through the Prefect flow (a real ``prefect server``), and

- a worker SIGKILLed while its actor plays: its share runs again on the other
  worker, the generation finishes, no game is admitted twice, no shard of the
  dead attempt is admitted, and the counters match the replay store;
- a worker that joins between generations gets an actor of the next one;
- a worker that cannot import the package gets no actor (the campaign stops
  naming it when no other worker can), one whose actor fails each time stops
  the campaign after a bounded number of attempts with an error naming it,
  and with a healthy worker beside them the same command resumes and
  finishes, the failed shares steered to the healthy one.

The dispatch policy itself (retries steered away from the failing worker,
the error, a stranded job placed again) is also checked with plain futures,
without Dask, and an actor job's attempt rules (a job run again plays only
what it has not committed; a superseded attempt never commits) with the real
actor in this process.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from campaign_support import (
    assert_each_game_ply_once,
    campaign_env,
    make_root,
    prefect_in_process,
    prefect_server,
)
from dask_support import LocalDask, local_dask

from chesszero.campaign.actor_dispatch import ActorFailure, run_actor_jobs
from chesszero.campaign.selfplay_stage import ActorJob

# Self-play long enough (32 visits) that a kill lands while the actor plays;
# no actor plays beside the trainer, so every generation's actors run on Dask.
SLOWER = {"search.visit_cap": [[0, 32]], "campaign.overlap_fraction": 0.0}
DEADLINE_S = 240.0


@contextlib.contextmanager
def prefect_api(root: Path, tmp: Path) -> Iterator[str]:
    """A `prefect server` for the flow run in this process and for the workers' task runs.
    Prefect's log and event services are drained while the server still runs:
    at interpreter exit they would retry against a stopped server for a minute."""
    from prefect.events.worker import EventsWorker
    from prefect.settings import PREFECT_API_URL, temporary_settings

    (tmp / "prefect").mkdir()
    with prefect_in_process(root), prefect_server(tmp / "prefect" / "home") as url:
        old = os.environ.get("PREFECT_API_URL")
        os.environ["PREFECT_API_URL"] = url
        try:
            with temporary_settings({PREFECT_API_URL: url}):
                yield url
        finally:
            EventsWorker.drain_all(timeout=60, at_exit=False)  # every Prefect queue service, log workers too
            if old is None:
                os.environ.pop("PREFECT_API_URL", None)
            else:
                os.environ["PREFECT_API_URL"] = old


def worker_env(root: Path, url: str, **extra: str) -> dict[str, str]:
    return {**campaign_env(root), "PREFECT_API_URL": url, "OMP_NUM_THREADS": "1", **extra}


def run(root: Path, name: str, address: str, generations: int) -> dict[str, Any]:
    from chesszero.campaign.launch import run_campaign

    return run_campaign(preset="smoke", name=name, root=root, generations=generations, progress=False,
                        overrides={**SLOWER, "campaign.dask_address": address})


class KillFirstActor(threading.Thread):
    """Waits for the first attempt record of generation 0's self-play (the
    actor job writes it once its network is loaded, just before it plays:
    about a second of play at 32 visits) and SIGKILLs the worker that wrote
    it, nanny and all."""

    def __init__(self, run_dir: Path, cluster: LocalDask):
        super().__init__(daemon=True)
        self.dir = run_dir / "attempts" / "gen_0000"
        self.cluster = cluster
        self.done = threading.Event()
        self.killed: dict[str, Any] | None = None
        self.addresses: dict[str, str] = {}
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            deadline = time.monotonic() + DEADLINE_S
            while not self.done.is_set() and time.monotonic() < deadline:
                records = sorted(self.dir.glob("main_a*.json")) if self.dir.exists() else []
                if records:  # written atomically: complete when it exists
                    record = json.loads(records[0].read_text())
                    self.addresses = self.cluster.names()
                    self.cluster.kill(record["worker_name"])
                    self.killed = record
                    return
                time.sleep(0.02)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc


def check_rows(run_dir: Path, generations: int) -> dict[str, Any]:
    """No game admitted twice, no shard admitted without its commit, every
    committed shard admitted, and the counters equal the replay store's rows."""
    import numpy as np

    from chesszero.campaign.context import CampaignPaths
    from chesszero.campaign.selfplay_stage import shard_summaries
    from chesszero.config import load_config
    from chesszero.replay import ReplayStore, convert_shard
    from chesszero.replay.materialize import target_options_from_config

    state = json.loads((run_dir / "state.json").read_text())
    assert state["finished"] and state["generation"] == generations, state
    c, admitted = state["counters"], state["admitted_shards"]
    assert len(set(admitted)) == len(admitted)
    paths = CampaignPaths(run_dir)
    committed = [s for g in range(generations) for s in shard_summaries(paths, g)]
    assert sorted(admitted) == sorted(str(Path(s.shard).relative_to(run_dir)) for s in committed if s.shard)
    assert_each_game_ply_once(run_dir, admitted)
    cfg = load_config(run_dir.parent.parent / "params.yaml", preset="smoke")
    rows = sum(len(convert_shard(run_dir / s, target_options_from_config(cfg.replay, int(Path(s).parent.name[4:])),
                                 generation=int(Path(s).parent.name[4:]))) for s in admitted)
    with ReplayStore.open(run_dir / "replay.bin", readonly=True) as store:
        seqs = np.asarray(store.read_valid().seq)
        assert c["rows_admitted"] == c["rows_materialized"] == store.total_appended == rows > 0
    assert len(np.unique(seqs)) == len(seqs)
    assert c["games"] == sum(s.games for s in committed)
    assert c["positions"] == sum(s.positions for s in committed)
    return state


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_worker_killed_mid_selfplay_then_a_worker_joins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two workers; the first to start an actor job of generation 0 is SIGKILLed
    (nanny too: nothing restarts it) while the job runs. The scheduler runs the
    job again on the other worker, which finishes the generation. Before
    generation 1 plans its actors a third worker joins; it plays one of them."""
    from chesszero.campaign import runner
    from chesszero.campaign.attempts import read_attempts
    from chesszero.campaign.context import CampaignPaths
    from chesszero.campaign.selfplay_stage import shard_summaries

    root = make_root(tmp_path / "root")
    run_dir = root / "runs" / "lost"
    with prefect_api(root, tmp_path) as url, local_dask(tmp_path, worker_env(root, url)) as cluster:
        for name in ("a", "b"):
            cluster.add_worker(name)
        plan = runner.plan

        def join_then_plan(campaign: Any) -> list[ActorJob]:
            if campaign.load_state().generation == 1 and "joiner" not in cluster.workers:
                cluster.add_worker("joiner")  # returns once the scheduler has it
            return plan(campaign)

        monkeypatch.setattr(runner, "plan", join_then_plan)
        killer = KillFirstActor(run_dir, cluster)
        killer.start()
        try:
            run(root, "lost", cluster.address, generations=2)
            joined = cluster.names()
        finally:
            killer.done.set()
            killer.join()
    assert killer.error is None, killer.error
    killed = killer.killed
    assert killed is not None, "no actor job of generation 0 started on a worker"
    victim = killed["worker_name"]
    survivor = "b" if victim == "a" else "a"
    assert killed["worker"] == killer.addresses[victim] and victim in ("a", "b")
    assert cluster.workers[victim].proc.returncode is not None  # dead, nanny included

    paths = CampaignPaths(run_dir)
    gen0 = shard_summaries(paths, 0)
    assert not [s for s in gen0 if s.attempt == killed["attempt"]]  # killed before it committed anything
    assert {s.worker for s in gen0} == {killer.addresses[survivor]}  # the survivor played all of generation 0
    reruns = [a for a in read_attempts(paths, 0) if a.job_id == killed["job_id"] and a.attempt != killed["attempt"]]
    assert reruns and {a.worker_name for a in reruns} == {survivor}  # the lost share ran again elsewhere
    assert sum(s.positions for s in gen0 if s.job_id == killed["job_id"]) >= killed["positions"]

    gen1 = shard_summaries(paths, 1)
    assert joined["joiner"] in {s.worker for s in gen1}  # the joining worker played in the next generation
    assert {a.worker_name for a in read_attempts(paths, 1)} == {survivor, "joiner"}
    check_rows(run_dir, generations=2)


def blocking(package: str) -> str:
    """A worker's ``sitecustomize`` that makes every import of `package` fail,
    ahead of the editable install's finder: a broken environment."""
    return f"""
import sys


class Broken:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == {package!r}:
            raise ImportError("{package} is broken on this worker (test)")
        return None


sys.meta_path.insert(0, Broken())
"""


def broken_env(root: Path, url: str, tmp: Path, package: str) -> dict[str, str]:
    site = tmp / f"no-{package}"
    site.mkdir()
    (site / "sitecustomize.py").write_text(blocking(package))
    return worker_env(root, url, PYTHONPATH=str(site))


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_workers_that_keep_failing_are_named_and_a_healthy_one_takes_over(tmp_path: Path) -> None:
    """One campaign, run three times as workers are added:

    1. only `noimport`, which cannot import the package: it fails the check at
       the start of self-play and the campaign stops with NoUsableWorker
       naming it (it gets no task, so it does not crash out of the cluster);
    2. with `noruntime` too, which imports the package but whose actor fails
       each time (onnxruntime cannot load): every attempt of a share fails
       there and the campaign stops with ActorFailure naming it and the error
       after the bounded 3 attempts, not an endless retry;
    3. with `good` too: the same command resumes; shares that fail on
       `noruntime` are resubmitted to `good`, which plays the generation."""
    from chesszero.campaign.context import CampaignPaths
    from chesszero.campaign.dask_actors import NoUsableWorker
    from chesszero.campaign.selfplay_stage import shard_summaries

    root = make_root(tmp_path / "root")
    run_dir = root / "runs" / "broken"
    with prefect_api(root, tmp_path) as url, local_dask(tmp_path, worker_env(root, url)) as cluster:
        cluster.add_worker("noimport", broken_env(root, url, tmp_path, "chesszero"))
        with pytest.raises(NoUsableWorker) as unusable:
            run(root, "broken", cluster.address, generations=1)
        noimport = f"{cluster.names()['noimport']} (noimport)"
        assert list(unusable.value.broken) == [noimport]
        assert "chesszero is broken on this worker (test)" in str(unusable.value), unusable.value

        cluster.add_worker("noruntime", broken_env(root, url, tmp_path, "onnxruntime"))
        with pytest.raises(ActorFailure) as failure:
            run(root, "broken", cluster.address, generations=1)
        noruntime = f"{cluster.names()['noruntime']} (noruntime)"
        message = str(failure.value)
        assert "failed 3 of 3 allowed attempts" in message and noruntime in message, message
        assert "BackendError" in message and "onnxruntime is not installed" in message, message
        assert [f.worker for f in failure.value.failures] == [noruntime] * 3
        assert not list((run_dir / "shards" / "gen_0000").glob("*.parquet"))  # nothing was played

        cluster.add_worker("good")
        run(root, "broken", cluster.address, generations=1)
        names = cluster.names()
        assert {"noimport", "noruntime", "good"} <= set(names)  # the broken ones never crashed out
    summaries = shard_summaries(CampaignPaths(run_dir), 0)
    assert summaries and {s.worker for s in summaries} == {names["good"]}
    check_rows(run_dir, generations=1)


def _job(actor: int) -> ActorJob:
    return ActorJob("/nowhere", "c", "smoke", actor=actor, generation=4, positions=8, artifact="a.onnx",
                    model_id="m", resign_threshold=None, job_id=f"j{actor}")


def test_failed_jobs_are_resubmitted_away_from_their_worker_then_named() -> None:
    """Plain futures in place of a task runner: actor 0 fails once on worker
    w1 and is resubmitted avoiding w1; actor 1 fails on every attempt, so the
    campaign stops naming each attempt's worker and error, after actor 0's
    second attempt has ended and with no fourth attempt."""
    submitted: list[tuple[int, list[str]]] = []
    advanced: list[int] = []
    warnings: list[str] = []

    def submit(job: ActorJob, avoid: Any) -> Future[Any]:
        submitted.append((job.actor, list(avoid)))
        future: Future[Any] = Future()
        worker = f"w{len(submitted)}"
        if job.actor == 1 or len([a for a, _ in submitted if a == 0]) == 1:
            future.set_exception(RuntimeError(f"boom on {worker}\nsecond line"))
        else:
            future.set_result([{"positions": 5}, {"positions": 4}])
        return future

    def locate(future: Future[Any], exc: BaseException) -> str:
        return str(exc).split()[2]  # "w<n>"

    with pytest.raises(ActorFailure) as failure:
        run_actor_jobs([_job(0), _job(1)], advanced.append, submit=submit, locate=locate, attempts=3,
                       warn=warnings.append)
    assert advanced == [9]  # actor 0's second attempt counted
    assert [a for a, _ in submitted].count(1) == 3 and [a for a, _ in submitted].count(0) == 2
    assert submitted[0] == (0, []) and (0, ["w1"]) in submitted  # resubmitted away from where it failed
    retries_of_1 = [avoid for a, avoid in submitted if a == 1]
    assert retries_of_1[0] == [] and len(retries_of_1[2]) == 2
    message = str(failure.value)
    assert "actor 1 (main) of generation 4 failed 3 of 3 allowed attempts" in message
    assert message.count("RuntimeError: boom on w") == 3 and "second line" not in message
    assert len(warnings) == 4 and all("attempt" in w and "failed on worker w" in w for w in warnings)


def test_a_stranded_job_is_placed_again_without_using_an_attempt() -> None:
    """A job whose submission no worker may run (``stranded`` says so) is
    withdrawn and submitted again; the withdrawn submission's end is ignored
    and the job still has all its attempts."""
    submitted: list[Future[Any]] = []
    warnings: list[str] = []
    advanced: list[int] = []

    def submit(job: ActorJob, avoid: Any) -> Future[Any]:
        future: Future[Any] = Future()
        if submitted:  # the second submission runs
            future.set_result([{"positions": 8}])
        submitted.append(future)
        return future

    def stranded(current: dict[int, Future[Any]]) -> list[int]:
        first = submitted[0]
        if current.get(0) is first and not first.done():
            first.set_exception(RuntimeError("cancelled"))  # as Dask ends a withdrawn future
            return [0]
        return []

    run_actor_jobs([_job(0)], advanced.append, submit=submit, locate=lambda f, e: "w", attempts=1,
                   warn=warnings.append, stranded=stranded, poll_s=0.01)
    assert advanced == [8] and len(submitted) == 2
    assert len(warnings) == 1 and "no worker may run it now; submitted again" in warnings[0]


def test_a_job_run_again_plays_only_what_is_missing_and_a_superseded_attempt_never_commits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, published_on_cpu: Any) -> None:
    """The real actor in this process: a job that runs again after committing
    its share plays nothing more and returns the same summaries; an attempt
    whose actor lease a newer attempt took plays, but raises instead of
    committing: its shard stays an orphan without a sidecar and pending.json
    (the actor's hand-back) is the newer attempt's to write."""
    from dataclasses import replace

    from chesszero.campaign import attempts
    from chesszero.campaign.context import Campaign
    from chesszero.campaign.selfplay_stage import run_actor_job, shard_summaries

    root = make_root(tmp_path)
    paths = Campaign.open(root, "c", preset="smoke").paths
    job = replace(_job(0), root=str(root), generation=0, artifact=str(published_on_cpu.int8.path))
    first = run_actor_job(job)
    assert sum(s.positions for s in first) >= job.positions
    assert {(s.job_id, s.worker) for s in first} == {("j0", attempts.LOCAL)}
    shards = sorted(paths.shards(0).glob("*.parquet"))
    assert run_actor_job(job) == first  # the share is committed: nothing more is played
    assert sorted(paths.shards(0).glob("*.parquet")) == shards
    assert [a.job_id for a in attempts.read_attempts(paths, 0)] == ["j0", "j0"]

    begin = attempts.begin

    def begin_then_superseded(*args: Any, **kwargs: Any) -> attempts.Attempt:
        mine = begin(*args, **kwargs)
        begin(*args, **kwargs)  # a newer attempt of the same actor (e.g. on another worker) takes the lease
        return mine

    monkeypatch.setattr(attempts, "begin", begin_then_superseded)
    pending = (paths.actor(0) / "pending.json").read_text()
    with pytest.raises(attempts.SupersededAttempt, match="lost its lease"):
        run_actor_job(replace(job, job_id="j1"))
    assert (paths.actor(0) / "pending.json").read_text() == pending
    assert len(list(paths.shards(0).glob("*.parquet"))) == len(shards) + 1  # the dropped shard, an orphan
    assert shard_summaries(paths, 0) == first  # never counted
