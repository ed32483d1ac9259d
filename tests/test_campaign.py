"""Campaign end to end (issue: campaigns): the smoke preset through the
Prefect flow, MLflow records, kill -9 and resume, a local Dask cluster,
`dvc repro` of the reports, and malformed params."""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from campaign_support import (
    REPO,
    campaign_env,
    make_dvc_project,
    make_root,
    prefect_in_process,
    prefect_server,
)

pytestmark = pytest.mark.slow


def run_smoke(root: Path, name: str, generations: int, *, prefect: bool = True) -> dict:
    from chesszero.campaign.launch import run_campaign

    with prefect_in_process(root):
        return run_campaign(preset="smoke", name=name, root=root, generations=generations,
                            use_prefect=prefect, progress=False)


def check_consistency(run_dir: Path, cfg_steps: int, cfg_batch: int, generations: int) -> dict:
    """Counters agree with the store and the checkpoint: no duplicated or lost rows,
    credit spent = presentations trained."""
    import numpy as np

    from chesszero.replay import CreditLedger, ReplayStore, convert_shard
    from chesszero.train import load_checkpoint

    state = json.loads((run_dir / "state.json").read_text())
    c = state["counters"]
    with ReplayStore.open(run_dir / "replay.bin", readonly=True) as store:
        total = store.total_appended
        rows = store.read_valid()
        seqs = np.asarray(rows.seq)
    shard_rows = sum(len(convert_shard(run_dir / s)) for s in state["admitted_shards"])
    assert c["rows_admitted"] == c["rows_materialized"] == total == shard_rows
    assert len(np.unique(seqs)) == len(seqs)
    assert len(set(state["admitted_shards"])) == len(state["admitted_shards"])
    ckpt = load_checkpoint(run_dir / "train.pt", map_location="cpu")
    ledger = CreditLedger.from_dict(ckpt.extra["ledger"])
    assert c["optimizer_steps"] == generations * cfg_steps
    assert c["presentations_trained"] == generations * cfg_steps * cfg_batch
    assert ledger.spent_presentations == c["presentations_trained"]
    return state


def check_interval(metrics: dict[str, float], key: str) -> None:
    """A logged rating lies inside its logged interval; a bound (`_bound` set)
    has no interval on its open side, so only its closed side is checked."""
    est, lo, hi, bound = (metrics[key + s] for s in ("", "_lo", "_hi", "_bound"))
    assert all(math.isfinite(x) for x in (est, lo, hi)), key
    if bound:
        assert lo == est if bound > 0 else hi == est, key  # `> R`: the bound is R; `< R`: likewise
    else:
        assert lo <= est <= hi, (key, lo, est, hi)


def match_tally(path: Path) -> tuple[int, int, int]:
    """(wins, draws, losses) of the match's first player, from its saved PGN."""
    import chess.pgn

    first = json.loads(path.with_suffix(".json").read_text())["first"]
    tally = [0, 0, 0]
    with path.open() as f:
        while (game := chess.pgn.read_game(f)) is not None:
            result = game.headers["Result"]
            white = game.headers["White"] == first
            assert first in (game.headers["White"], game.headers["Black"])
            tally[1 if result == "1/2-1/2" else 0 if (result == "1-0") == white else 2] += 1
    return tally[0], tally[1], tally[2]


def check_values(root: Path, name: str, cfg, client, run) -> None:
    """The smoke campaign's logged numbers agree with its own records: ratings
    inside their intervals, fidelity at or past the gate's thresholds, scores in
    [0, 1] equal to (W + D/2) / games of the saved matches (JSON and PGN), and
    counters equal to the rows admitted."""
    from chesszero.campaign import metrics as M

    run_dir = root / "runs" / name
    metrics = run.data.metrics
    state = json.loads((run_dir / "state.json").read_text())
    c = state["counters"]
    history = {k: {m.step: m.value for m in client.get_metric_history(run.info.run_id, k)}
               for k in (M.SELFPLAY_GAMES, M.SELFPLAY_POSITIONS)}
    # counters: per-generation logs add up to the totals, the totals to the rows admitted
    assert metrics[M.SELFPLAY_GAMES_TOTAL] == sum(history[M.SELFPLAY_GAMES].values()) == c["games"] > 0
    assert metrics[M.SELFPLAY_POSITIONS_TOTAL] == sum(history[M.SELFPLAY_POSITIONS].values()) == c["positions"]
    assert c["positions"] == c["rows_admitted"] == metrics[M.REPLAY_ADMITTED_TOTAL] == metrics[M.REPLAY_SIZE]
    [window] = cfg.replay.logical_capacity.values  # the smoke window is one size throughout
    assert metrics[M.REPLAY_OCCUPANCY] == pytest.approx(c["rows_admitted"] / window)
    assert metrics["train/samples_total"] == c["presentations_trained"]
    assert metrics["train/optimizer_step"] == c["optimizer_steps"]
    assert 0 <= metrics[M.NON_DECISIVE] <= 1 and metrics[M.TRAIN_LOSS] > 0 and math.isfinite(metrics[M.TRAIN_LOSS])
    # fidelity: every published artifact at or past the recipe's thresholds
    p = cfg.publish
    assert metrics[M.fidelity_key("agreement")] >= p.min_agreement
    assert 0 <= metrics[M.fidelity_key("kl")] <= p.max_kl and 0 <= metrics[M.fidelity_key("wdl_mae")] <= p.max_wdl_mae
    assert metrics[M.PUBLISH_QAT_STEPS] == p.qat_steps  # qat_when: always (the smoke preset)
    for folder in ("initial", "gen_0000", "gen_0001"):
        fid = json.loads((run_dir / "artifacts" / folder / "fidelity.json").read_text())
        assert fid["passed"] and not fid["failures"] and fid["positions"] == p.calibration_positions
        assert fid["thresholds"] == {"min_agreement": p.min_agreement, "max_kl": p.max_kl,
                                     "max_wdl_mae": p.max_wdl_mae, "max_moves_left_mae": p.max_moves_left_mae}
        assert fid["moves_left_mae"] is None  # the recipe keeps the moves-left utility off
        assert fid["agreement"] >= p.min_agreement and fid["kl_mean"] <= fid["kl_max"] and fid["kl_mean"] <= p.max_kl
        assert fid["wdl_mae"] <= fid["wdl_max_error"] and fid["wdl_mae"] <= p.max_wdl_mae
    assert metrics["publish/initial_agreement"] == json.loads(
        (run_dir / "artifacts" / "initial" / "fidelity.json").read_text())["agreement"]
    # ratings inside their intervals (a bound checks its closed side only)
    for mode in ("policy", "searched"):
        check_interval(metrics, M.elo_key(mode))
        check_interval(metrics, M.joint_elo_key(mode))
    for visits in cfg.campaign.eval_visit_budgets:
        check_interval(metrics, M.budget_key(visits))
        check_interval(metrics, M.budget_joint_key(visits))
    # scores: the final evaluation's logged scores are those of its saved games
    final = sorted((run_dir / "evals").glob("gen_*"))[-1]
    ratings = json.loads((final / "ratings.json").read_text())
    for mode in ("policy", "searched"):
        total, games = 0.0, 0
        for rung in cfg.evaluate.rungs:
            match = json.loads((final / f"{mode}_vs_{rung}.json").read_text())
            w, d, lost = match_tally(final / f"{mode}_vs_{rung}.pgn")
            assert (match["wins"], match["draws"], match["losses"]) == (w, d, lost)
            assert w + d + lost == len(match["games"]) == 2 * cfg.evaluate.openings
            assert sum(g["score"] for g in match["games"]) == w + d / 2
            assert 0 <= match["score"] <= 1 and match["score"] == pytest.approx((w + d / 2) / (w + d + lost))
            assert metrics[M.score_key(mode, rung)] == pytest.approx(match["score"])
            [fitted] = [r for r in ratings[mode]["rungs"] if r["rung"] == rung]
            assert fitted["pentanomial"] == match["pentanomial"] and sum(match["pentanomial"]) == (w + d + lost) // 2
            total, games = total + w + d / 2, games + w + d + lost
        joint = ratings[mode]
        assert joint["games"] == games and joint["score"] == pytest.approx(total / games)
        assert metrics[M.joint_elo_key(mode)] == pytest.approx(joint["estimate"])
        assert joint["lower"] <= joint["estimate"] <= joint["upper"] or joint["direction"]
        assert f"{mode}: joint {joint['estimate']:.0f} [{joint['lower']:.0f}, {joint['upper']:.0f}]" in (
            final / "summary.txt").read_text() or joint["direction"]
        assert f"(score {total / games:.3f}, {games} games)" in (final / "summary.txt").read_text()


@pytest.fixture(scope="module")
def smoke_campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_root(tmp_path_factory.mktemp("smoke"))
    summary = run_smoke(root, "smoke-ci", 2)
    assert summary["generation"] == 2 and summary["finished"]
    return root


def test_smoke_campaign_records_everything(smoke_campaign: Path) -> None:
    from mlflow.tracking import MlflowClient

    from chesszero.campaign import metrics as M
    from chesszero.campaign.tracking import tracking_uri
    from chesszero.config import load_config

    root = smoke_campaign
    cfg = load_config(root / "params.yaml", preset="smoke")
    check_consistency(root / "runs" / "smoke-ci", cfg.train.steps_per_quantum, cfg.train.global_batch, 2)
    client = MlflowClient(tracking_uri(root))
    exp = client.get_experiment_by_name(M.EXPERIMENT)
    runs = client.search_runs([exp.experiment_id], f"tags.`{M.TAG_CAMPAIGN}` = 'smoke-ci'")
    assert len(runs) == 1
    run = runs[0]
    check_values(root, "smoke-ci", cfg, client, run)
    for key in (M.TRAIN_LOSS, M.loss_key("policy"), M.TRAIN_LR, M.TRAIN_GRAD_NORM, M.TRAIN_SAMPLES_S,
                M.SELFPLAY_SEARCHES_S, M.SELFPLAY_GAMES, M.NON_DECISIVE, M.REPLAY_OCCUPANCY,
                M.RESIGN_THRESHOLD, M.fidelity_key("agreement"), M.elo_key("policy"), M.elo_key("searched"),
                M.elo_key("policy", "lo"), M.WALL_S):
        assert key in run.data.metrics, key
    history = client.get_metric_history(run.info.run_id, M.TRAIN_STEP)
    assert sorted(m.step for m in history) == [0, 1]
    assert sum(1 for k in run.data.metrics if k.startswith("budget/")) >= 2  # final budget sweep
    for key in (M.joint_elo_key("policy"), M.joint_elo_key("searched", "bound"), M.budget_joint_key(0),
                M.SELFPLAY_CONVERSION_CHANCES, M.SELFPLAY_CONVERSION_WON):
        assert key in run.data.metrics, key
    rung = cfg.evaluate.rungs[0]
    assert M.conversion_key("searched", rung, "opportunities") in run.data.metrics
    final = sorted((root / "runs" / "smoke-ci" / "evals").glob("gen_*"))[-1]
    summary = (final / "summary.txt").read_text()
    assert "policy: joint " in summary and "searched: joint " in summary and "nearest rung" in summary
    for param in ("preset", "model.size", "git.revision", "git.dirty", "dep.torch", "machine.cpus"):
        assert param in run.data.params, param
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"config.json", "artifacts", "evals"} <= artifacts
    evals = {a.path for a in client.list_artifacts(run.info.run_id, "evals/gen_0001")}
    assert any(p.endswith(".pgn") for p in evals)
    fidelity = {a.path for a in client.list_artifacts(run.info.run_id, "artifacts/initial")}
    assert "artifacts/initial/fidelity.json" in fidelity
    version = client.get_model_version_by_alias("chesszero-smoke-ci", "active")
    assert int(version.version) >= 1
    active = json.loads((root / "runs" / "smoke-ci" / "artifacts" / "active.json").read_text())
    assert Path(active["path"]).exists()


def test_dvc_repro_draws_reports(smoke_campaign: Path) -> None:
    root = smoke_campaign
    make_dvc_project(root)
    params = root / "params.yaml"  # draw this campaign (params.yaml names the one `make run` runs)
    params.write_text(params.read_text().replace("figures_campaign: cpu-main", "figures_campaign: smoke-ci"))
    env = campaign_env(root)
    out = subprocess.run([str(Path(sys.executable).parent / "dvc"), "repro", "figures", "tables"], cwd=root,
                         env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    figures = {p.name for p in (root / "reports" / "figures").glob("*.png")}
    assert {"elo_vs_time.png", "losses.png", "terminations.png", "throughput.png", "ladder_searched.png",
            "material_searched.png"} <= figures
    for table in ("strength_vs_budget.md", "training_volume.md", "terminations.md"):
        text = (root / "reports" / "tables" / table).read_text()
        assert "smoke-ci" in text and "|" in text
    assert "figures/losses.png" in (root / "reports" / "index.md").read_text()
    assert (root / "dvc.lock").exists()


def _wait_for(predicate, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc.poll() is not None:
            raise AssertionError(f"campaign exited early with {proc.returncode}")
        if time.monotonic() > deadline:
            raise AssertionError("the campaign never reached the awaited phase")
        time.sleep(0.05)


@pytest.mark.parametrize("kill_phase", ["train"])
def test_killed_campaign_resumes_without_duplicates(tmp_path: Path, kill_phase: str) -> None:
    from chesszero.config import load_config

    root = make_root(tmp_path)
    env = campaign_env(root)
    cmd = [sys.executable, "-m", "chesszero", "campaign", "run", "--preset", "smoke", "--name", "killed",
           "--root", str(root), "--generations", "2", "--no-prefect", "--quiet"]
    state_file = root / "runs" / "killed" / "state.json"

    def at_phase() -> bool:
        try:
            s = json.loads(state_file.read_text())
        except (OSError, ValueError):
            return False
        return s["generation"] == 1 and s["phase"] == kill_phase

    proc = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        _wait_for(at_phase, proc, timeout=900)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    again = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr[-3000:]
    cfg = load_config(root / "params.yaml", preset="smoke")
    state = check_consistency(root / "runs" / "killed", cfg.train.steps_per_quantum, cfg.train.global_batch, 2)
    assert state["generation"] == 2 and state["finished"]


def _served_run(root: Path, api_url: str, parameters: dict, tmp: Path) -> str:
    """Runs the `final-recipe/smoke` deployment that `flows/serve.py --root ROOT`
    serves (a process of its own) against the Prefect server at `api_url`;
    returns the flow run's final state name."""
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings

    env = campaign_env(root)
    env.update(PREFECT_API_URL=api_url, OMP_NUM_THREADS="1")
    with open(tmp / "serve.log", "wb") as log:
        server = subprocess.Popen([sys.executable, str(REPO / "flows" / "serve.py"), "--root", str(root)], env=env,
                                  cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        with temporary_settings({PREFECT_API_URL: api_url}):
            async def deployed() -> bool:
                async with get_client() as client:
                    try:
                        await client.read_deployment_by_name("final-recipe/smoke")
                        return True
                    except Exception:  # noqa: BLE001 - not registered yet
                        return False

            deadline = time.monotonic() + 180
            while not asyncio.run(deployed()):
                assert server.poll() is None and time.monotonic() < deadline, (tmp / "serve.log").read_text()[-3000:]
                time.sleep(1)
            run = run_deployment("final-recipe/smoke", parameters=parameters, timeout=900)
        return run.state.name
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(timeout=30)


def test_served_deployment_maps_actors_over_a_dask_scheduler_and_workers(tmp_path: Path) -> None:
    """`campaign.dask_address` pointing at a real scheduler with two workers,
    each started with the `dask` command-line tools as its own process, and
    the campaign started as a deployment served by `flows/serve.py` (which
    loads the flow from its entry point, as `prefect deploy` would): the
    self-play actors run on the workers, the rest of the flow in the served
    run. `make run` goes through the same flow function (`launch._flow`)."""
    import yaml
    from distributed import Client

    root = make_root(tmp_path / "root")
    env = campaign_env(root)
    env["OMP_NUM_THREADS"] = "1"
    scheduler_file = tmp_path / "scheduler.json"
    dask = str(Path(sys.executable).with_name("dask"))
    procs = [subprocess.Popen([dask, "scheduler", "--scheduler-file", str(scheduler_file), "--port", "0",
                               "--dashboard-address", ":0", "--no-show"], env=env, cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)]
    (tmp_path / "prefect").mkdir()
    try:
        deadline = time.monotonic() + 120
        while not scheduler_file.exists():
            assert time.monotonic() < deadline and procs[0].poll() is None, "the scheduler did not start"
            time.sleep(0.5)
        for _ in range(2):
            procs.append(subprocess.Popen([dask, "worker", "--scheduler-file", str(scheduler_file), "--nworkers", "1",
                                           "--nthreads", "1", "--no-dashboard"], env=env, cwd=tmp_path,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          start_new_session=True))
        with Client(scheduler_file=str(scheduler_file), timeout=120) as client, \
                prefect_server(tmp_path / "prefect" / "home") as api_url:
            client.wait_for_workers(2, timeout=180)
            params = yaml.safe_load((root / "params.yaml").read_text())
            params["presets"]["smoke"].setdefault("campaign", {})["dask_address"] = client.scheduler.address
            (root / "params.yaml").write_text(yaml.safe_dump(params))
            state = _served_run(root, api_url, {"campaign": "dask", "generations": 1}, tmp_path)
            ran = client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
    finally:
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=30)
    assert state == "Completed", state
    summary = json.loads((root / "runs" / "dask" / "state.json").read_text())
    assert summary["generation"] == 1 and summary["finished"]
    assert any("self-play" in name or "actor" in name for name in ran), ran  # the actors ran on the workers
    assert list((root / "runs" / "dask" / "shards" / "gen_0000").glob("*.parquet"))


def test_malformed_params_name_the_key(tmp_path: Path) -> None:
    import yaml

    root = make_root(tmp_path)
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["presets"]["smoke"]["train"]["global_bacth"] = 32
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    out = subprocess.run([sys.executable, "-m", "chesszero", "campaign", "run", "--preset", "smoke", "--root",
                          str(root), "--no-prefect"], capture_output=True, text=True, env=campaign_env(root),
                         timeout=120)
    assert out.returncode == 2
    assert "train.global_bacth" in out.stderr
    assert not (root / "runs").exists()


def test_evaluation_that_spends_the_wall_budget_ends_the_campaign(tmp_path: Path, monkeypatch) -> None:
    """The wall budget is checked between generations; an evaluation that
    itself uses up the rest of it must still end the campaign with its final
    evaluation (budget sweep) and `finished`, not leave it stopped unfinished."""
    from chesszero.campaign import eval_stage
    from chesszero.campaign.context import Campaign
    from chesszero.campaign.dispatch import Limits, run_local

    root = make_root(tmp_path)
    original = eval_stage.evaluate_generation
    calls: list[tuple[bool, bool]] = []

    def evaluation_that_takes_an_hour(campaign, state, tracker, *, ladder=True, budget_sweep=False):
        calls.append((ladder, budget_sweep))
        out = original(campaign, state, tracker, ladder=ladder, budget_sweep=budget_sweep)
        state.wall_seconds = max(state.wall_seconds, 3600.0)  # as if the matches had run for the hour
        return out

    monkeypatch.setattr(eval_stage, "evaluate_generation", evaluation_that_takes_an_hour)
    with prefect_in_process(root):
        campaign = Campaign.open(root, "walled", preset="smoke")
        state = run_local(campaign, Limits(generations=5, hours=1.0))
    assert state.finished and state.generation == 1
    assert calls == [(True, False), (False, True)]  # the ladder, then (over budget) the sweep alone
    text = (root / "runs" / "walled" / "evals" / "gen_0000" / "summary.txt").read_text()
    assert "searched:" in text and "v0:" in text  # the sweep appended to the ladder's summary
