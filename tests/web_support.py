"""Shared helpers for the web tests: the built front-end and the Node encoder check.

The front-end is built by ``make web`` (``npm ci`` + ``npm run build`` in
``web/``), which ``make test`` runs before pytest; a test that needs the
build and finds it missing fails with that instruction rather than skipping.
"""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from chesszero.publish.calibration_positions import DEFAULT_POSITIONS
from chesszero.web import ServedModel

ROOT = Path(__file__).resolve().parents[1]
ENCODER_CHECK = ROOT / "web" / "build" / "encoder-check.mjs"
SEARCH_CHECK = ROOT / "web" / "build" / "search-check.mjs"
STATIC_DIST = ROOT / "src" / "chesszero" / "web" / "static" / "dist"


def require_build(path: Path) -> Path:
    assert path.exists(), f"{path} is missing: build the front-end first (`make web`)"
    return path


def planes_sha256(planes: np.ndarray) -> str:
    """The golden file's hash of one position's planes (float32 little-endian bytes)."""
    return hashlib.sha256(np.ascontiguousarray(planes, dtype="<f4").tobytes()).hexdigest()


def run_node(script: Path, requests: Sequence[dict], *, timeout: float = 300) -> list[dict]:
    """One JSON line per request in, one per answer out, through a built Node command."""
    node = shutil.which("node")
    assert node, "node is not installed (`make web` needs Node.js and npm)"
    done = subprocess.run([node, str(require_build(script))], input="".join(json.dumps(r) + "\n" for r in requests),
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def node_encode(games: Sequence[dict], *, timeout: float = 300) -> list[dict]:
    """Runs the JavaScript encoder (``web/src/encoder_check.js``) on ``games``
    (``start_fen``, ``moves``, ``plies``; ``full`` for the planes too)."""
    return run_node(ENCODER_CHECK, games, timeout=timeout)


@functools.cache
def published() -> Path:
    """A briefly trained 2x16 network published by the real pipeline (INT8 and
    FP32 artifacts with their golden files) into a temporary folder, once per session."""
    from publish_support import calibration, torch_threads, trained_net

    from chesszero.publish import PublishSettings, load_calibration_set, publish
    from chesszero.publish.quantize import QatSettings

    out = Path(tempfile.mkdtemp(prefix="cz-web-")) / "gen_0003"
    with torch_threads(1):
        publish(trained_net(), out, load_calibration_set(ROOT / DEFAULT_POSITIONS, limit=64),
                settings=PublishSettings(qat=QatSettings(steps=0)), tune=calibration(64))
    return out


class ServerThread:
    """``chesszero web``'s app for `model` under uvicorn in a thread, on a local
    socket that listens before the thread starts: a request made at once waits
    in the socket's backlog until uvicorn takes it (no start-up polling)."""

    def __init__(self, model: ServedModel) -> None:
        import uvicorn

        from chesszero.web import create_app

        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(64)
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}/"
        self.server = uvicorn.Server(uvicorn.Config(create_app(model), log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True)

    def __enter__(self) -> ServerThread:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.socket.close()
