"""Golden values beside each published artifact, for re-implementations of the encoding.

A network fed one wrong plane still loads, runs and plays -- only weaker. So
whoever re-encodes positions outside the native core (the web page's
JavaScript encoder, ``chesszero web``) first checks itself against values the
Python side computed with the core and the artifact. :func:`export_golden`
writes ``<artifact>.golden.json`` (e.g. ``int8.golden.json`` next to
``int8.onnx``) holding, for :data:`GOLDEN_POSITIONS` positions spread over
the 516-position calibration set (SPEC 9), each with its game history:

- ``start_fen`` and ``moves``: replay them to get the history planes right.
  Only the part of the game the encoding sees is kept (:func:`relevant_history`:
  the last 8 moves and the halfmove-clock window of repetitions), so a page
  replays a dozen moves per position, not a hundred; the exporter checks that
  this short replay encodes exactly as the whole game does;
- ``planes_sha256``: SHA-256 of the 52 x 8 x 8 float32 planes (little-endian),
- ``legal``: the sorted legal action ids (SPEC 3),
- ``top``: the artifact's :data:`TOP_K` most probable legal actions with their
  probabilities (policy softmaxed over the legal actions), and ``wdl``,

plus the artifact's SHA-256 (a golden file never vouches for another file)
and the ``tolerance`` within which another runtime's outputs count as the same
network: :data:`TOLERANCE` by precision (INT8 kernels round differently per
instruction set and runtime; float ones only in the last bits).
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from chesszero import core
from chesszero.config import REPO_ROOT
from chesszero.fsio import atomic_write_bytes
from chesszero.publish.calibration_positions import (
    DEFAULT_POSITIONS,
    CalibrationPosition,
    load_positions,
)

__all__ = ["GOLDEN_FORMAT", "GOLDEN_POSITIONS", "TOLERANCE", "TOP_K", "Tolerance", "export_golden",
           "export_goldens", "golden_path", "golden_values", "positions_file", "spread"]

log = logging.getLogger(__name__)

GOLDEN_FORMAT = 1
GOLDEN_POSITIONS = 32
TOP_K = 5


@dataclass(frozen=True)
class Tolerance:
    """Largest absolute difference that still counts as agreement."""

    policy: float
    """Per golden top-k action: probability among the legal moves."""
    wdl: float
    """Per WDL component."""


TOLERANCE = {"int8": Tolerance(policy=0.05, wdl=0.05), "fp32": Tolerance(policy=1e-3, wdl=1e-3)}
"""By artifact precision. INT8: an activation on a rounding boundary moves by a
quantisation step in another runtime (see the publication tests: KL up to
about 1e-3 between ISAs); a wrong plane moves far more than 0.05 on most of
the 32 positions. FP32: accumulation order only."""


def golden_path(artifact: str | Path) -> Path:
    """``int8.onnx`` -> ``int8.golden.json`` (same folder)."""
    artifact = Path(artifact)
    return artifact.with_name(f"{artifact.stem}.golden.json")


def spread(positions: list[CalibrationPosition], count: int) -> list[CalibrationPosition]:
    """``count`` positions evenly spaced over the set (openings to endgames)."""
    if count >= len(positions):
        return list(positions)
    step = len(positions) / count
    return [positions[int(i * step)] for i in range(count)]


def relevant_history(position: CalibrationPosition) -> tuple[str, list[str]]:
    """(start FEN, moves) replaying only what the encoding of `position` depends on:
    its last ``HISTORY_MOVES`` moves and the positions a repetition can match (the
    halfmove-clock window; an irreversible move ends it)."""
    game = core.Game(position.start_fen)
    for uci in position.moves:
        game.push_uci(uci)
    keep = max(int(core.HISTORY_MOVES), game.halfmove_clock)
    cut = max(0, len(position.moves) - keep)
    start = core.Game(position.start_fen)
    for uci in position.moves[:cut]:
        start.push_uci(uci)
    return start.fen(), list(position.moves[cut:])


def _replay(start_fen: str, moves: list[str] | tuple[str, ...]) -> core.Game:
    game = core.Game(start_fen)
    for uci in moves:
        game.push_uci(uci)
    return game


def golden_values(artifact: str | Path, positions: list[CalibrationPosition]) -> dict[str, object]:
    """The golden record of `artifact` on `positions` (module docstring)."""
    from chesszero.publish.artifact import load_artifact
    from chesszero.publish.runtime import OrtRuntime

    artifact = Path(artifact)
    loaded = load_artifact(artifact)
    games = [_replay(p.start_fen, p.moves) for p in positions]
    short = [relevant_history(p) for p in positions]
    for p, game, (fen, moves) in zip(positions, games, short, strict=True):
        if not np.array_equal(_replay(fen, moves).encode(), game.encode()):
            raise RuntimeError(f"position {p.id}: the shortened history encodes differently from the whole game")
    planes = core.encode_batch(games)
    logits, wdl = OrtRuntime(threads=1).build(loaded).evaluate(planes)[:2]
    rows = []
    outputs = zip(positions, short, games, planes, np.asarray(logits), np.asarray(wdl), strict=True)
    for p, (start_fen, moves), game, x, row, w in outputs:
        legal = np.sort(game.legal_actions().astype(np.int64))
        z = row[legal].astype(np.float64)
        prob = np.exp(z - z.max())
        prob /= prob.sum()
        order = np.argsort(-prob, kind="stable")[:TOP_K]
        rows.append({
            "id": p.id,
            "start_fen": start_fen,
            "moves": moves,
            "fen": game.fen(),
            "planes_sha256": hashlib.sha256(np.ascontiguousarray(x, dtype="<f4").tobytes()).hexdigest(),
            "legal": [int(a) for a in legal],
            "top": [[int(legal[i]), round(float(prob[i]), 6)] for i in order],
            "wdl": [round(float(v), 6) for v in w],
        })
    precision = loaded.metadata.precision.value
    return {
        "format": GOLDEN_FORMAT,
        "artifact": artifact.name,
        "artifact_sha256": loaded.sha256,
        "encoding_version": int(core.ENCODING_VERSION),
        "precision": precision,
        "tolerance": asdict(TOLERANCE[precision]),
        "positions": rows,
    }


def export_golden(artifact: str | Path, positions_file: str | Path, *,
                  count: int = GOLDEN_POSITIONS) -> Path:
    """Writes ``golden_path(artifact)`` from `count` positions of `positions_file`
    (the calibration set); returns its path. FileNotFoundError / ValueError
    naming the file for a missing or malformed positions file or artifact."""
    positions = spread(load_positions(Path(positions_file)), count)
    record = golden_values(artifact, positions)
    out = golden_path(artifact)
    atomic_write_bytes(out, (json.dumps(record, indent=1) + "\n").encode())
    return out


def positions_file(calibration_source: str | None = None) -> Path | None:
    """The calibration positions file: the gate's own when its source is one
    (``CalibrationSet.source``), else the repository's; None when neither exists."""
    for candidate in (calibration_source, REPO_ROOT / DEFAULT_POSITIONS):
        if candidate is not None and str(candidate).endswith(".jsonl") and Path(candidate).is_file():
            return Path(candidate)
    return None


def export_goldens(artifacts: list[Path], calibration_source: str | None = None) -> list[Path]:
    """A golden file beside each of `artifacts` (publication calls this for every
    artifact it writes); returns those written. None, with a warning, when no
    positions file exists or an artifact cannot be evaluated (``chesszero web``
    then tries again and names the error)."""
    source = positions_file(calibration_source)
    if source is None:
        log.warning("no calibration positions file (%s): no golden files for %s",
                    REPO_ROOT / DEFAULT_POSITIONS, ", ".join(map(str, artifacts)))
        return []
    written = []
    for path in artifacts:
        try:
            written.append(export_golden(path, source))
        except Exception as error:  # a side product: publication reports, never fails on it
            log.warning("no golden file for %s: %s: %s", path, type(error).__name__, error)
    return written
