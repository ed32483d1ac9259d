"""Helpers for the campaign tests: a throwaway project root with the recipe,
the data files, the DVC stages and the report code of this checkout."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent


def make_root(tmp: Path) -> Path:
    """Copies what a campaign reads (params.yaml, data/) into `tmp`."""
    tmp.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "params.yaml", tmp / "params.yaml")
    shutil.copytree(REPO / "data", tmp / "data", ignore=shutil.ignore_patterns("replay"))
    return tmp


def assert_each_game_ply_once(run_dir: Path, admitted: list[str]) -> None:
    """No (game, ply) appears twice across a campaign's admitted shards."""
    from chesszero.selfplay.records import read_shard

    seen: set[tuple[str, int]] = set()
    for shard in admitted:
        frame = read_shard(run_dir / shard)
        for game_id, plies in zip(frame["game_id"], frame["ply"], strict=True):
            for ply in plies:
                assert (game_id, ply) not in seen, (shard, game_id, ply)
                seen.add((game_id, ply))


def make_dvc_project(root: Path) -> None:
    """Turns `root` into a git + DVC project with this checkout's report stages."""
    for rel in ("dvc.yaml", "scripts/python", "reports/draw.py", "reports/rating_plot.py",
                "src/chesszero/campaign/metrics.py", "src/chesszero/campaign/headline.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / rel, root / rel)
    env = campaign_env(root)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True, env=env)
    subprocess.run([str(VENV_BIN / "dvc"), "init", "-q"], cwd=root, check=True, env=env)


def campaign_env(root: Path) -> dict[str, str]:
    """Environment for subprocesses: the venv first on PATH, Prefect at home in `root`."""
    env = dict(os.environ)
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PREFECT_HOME"] = str(root / ".prefect")
    env["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"] = "180"
    env.setdefault("GIT_AUTHOR_NAME", "test")
    env.setdefault("GIT_AUTHOR_EMAIL", "test@example.invalid")
    env.setdefault("GIT_COMMITTER_NAME", "test")
    env.setdefault("GIT_COMMITTER_EMAIL", "test@example.invalid")
    return env


PREFECT_KEYS = ("PREFECT_HOME", "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS")


@contextlib.contextmanager
def prefect_in_process(root: Path) -> Iterator[None]:
    """Prefect at home in `root` for flows run in this process (and its workers).

    Prefect reads its settings when first imported, so they are set both in
    the environment (for worker processes) and as temporary settings here.
    """
    from prefect.settings import (
        PREFECT_HOME,
        PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
        temporary_settings,
    )

    env = campaign_env(root)
    old = {k: os.environ.get(k) for k in PREFECT_KEYS}
    os.environ.update({k: env[k] for k in PREFECT_KEYS})
    try:
        with temporary_settings({PREFECT_HOME: env["PREFECT_HOME"],
                                 PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS: 180}):
            yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def prefect_server(home: Path) -> Iterator[str]:
    """A `prefect server start` process with its own PREFECT_HOME; yields its API URL."""
    import urllib.request

    port = free_port()
    env = dict(os.environ, PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false")
    env.pop("PREFECT_API_URL", None)
    prefect = str(Path(sys.executable).with_name("prefect"))
    log = open(home.parent / "prefect-server.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([prefect, "server", "start", "--host", "127.0.0.1", "--port", str(port)], env=env,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/api"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"prefect server did not start; see {log.name}")
            time.sleep(0.3)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
