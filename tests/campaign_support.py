"""Helpers for the campaign tests: a throwaway project root with the recipe,
the data files, the DVC stages and the report code of this checkout."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
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


def make_dvc_project(root: Path) -> None:
    """Turns `root` into a git + DVC project with this checkout's report stages."""
    for rel in ("dvc.yaml", "reports/draw.py", "src/chesszero/campaign/metrics.py"):
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
