"""Shared helpers for the web tests: the built front-end and the Node encoder check.

The front-end is built by ``make web`` (``npm ci`` + ``npm run build`` in
``web/``), which ``make test`` runs before pytest; a test that needs the
build and finds it missing fails with that instruction rather than skipping.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ENCODER_CHECK = ROOT / "web" / "build" / "encoder-check.mjs"
STATIC_DIST = ROOT / "src" / "chesszero" / "web" / "static" / "dist"


def require_build(path: Path) -> Path:
    assert path.exists(), f"{path} is missing: build the front-end first (`make web`)"
    return path


def planes_sha256(planes: np.ndarray) -> str:
    """The golden file's hash of one position's planes (float32 little-endian bytes)."""
    return hashlib.sha256(np.ascontiguousarray(planes, dtype="<f4").tobytes()).hexdigest()


def node_encode(games: Sequence[dict], *, timeout: float = 300) -> list[dict]:
    """Runs the JavaScript encoder (``web/src/encoder_check.js``) on ``games``
    (``start_fen``, ``moves``, ``plies``; ``full`` for the planes too)."""
    node = shutil.which("node")
    assert node, "node is not installed (`make web` needs Node.js and npm)"
    script = require_build(ENCODER_CHECK)
    done = subprocess.run([node, str(script)], input="".join(json.dumps(g) + "\n" for g in games),
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]
