"""The calibration positions as network inputs: planes, legal masks and a hash.

Publication uses one fixed set of real positions (SPEC 9: 516, from
``data/calibration/positions.jsonl``) three times: to observe activation
ranges, as default quantisation-aware fine-tuning data, and for the fidelity
gate.  :class:`CalibrationSet` holds them already encoded by the native core
(history planes included: every game is replayed from its start FEN), with
the SHA-256 of the source lines so artifacts can name exactly what they were
calibrated on.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from chesszero import core
from chesszero.publish.calibration_positions import DEFAULT_POSITIONS, load_positions

__all__ = ["CalibrationSet", "calibration_set_from_games", "load_calibration_set"]


@dataclass(frozen=True, eq=False)
class CalibrationSet:
    """Encoded calibration positions (read-only arrays)."""

    planes: np.ndarray
    """Network inputs, float32 ``[N, 52, 8, 8]``."""
    legal: np.ndarray
    """Legal-action masks, bool ``[N, 1880]``."""
    sha256: str
    """Hash of the positions' source (the JSONL lines used, or the encoded arrays)."""
    source: str
    """Where the positions came from (a path or a description)."""

    def __post_init__(self) -> None:
        n = len(self.planes)
        if n == 0:
            raise ValueError(f"calibration set {self.source!r} is empty")
        if self.planes.shape[1:] != (core.NUM_PLANES, 8, 8) or self.planes.dtype != np.float32:
            raise ValueError(f"calibration planes must be float32 [N, 52, 8, 8], got {self.planes.shape}")
        if self.legal.shape != (n, core.NUM_ACTIONS) or self.legal.dtype != np.bool_:
            raise ValueError(f"calibration legal masks must be bool [N, 1880], got {self.legal.shape}")
        if not self.legal.any(axis=1).all():
            raise ValueError(f"calibration set {self.source!r} has a position without legal moves")
        for arr in (self.planes, self.legal):
            arr.setflags(write=False)

    def __len__(self) -> int:
        return len(self.planes)

    def batches(self, batch_size: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """``(planes, legal)`` chunks of at most ``batch_size`` positions, in order."""
        for start in range(0, len(self), batch_size):
            yield self.planes[start : start + batch_size], self.legal[start : start + batch_size]


def _encode(games: Sequence[core.Game]) -> tuple[np.ndarray, np.ndarray]:
    planes = core.encode_batch(list(games))
    legal = np.stack([g.legal_mask() for g in games]).astype(np.bool_)
    return planes, legal


def calibration_set_from_games(games: Sequence[core.Game], *, source: str) -> CalibrationSet:
    """A calibration set from live games (tests, ad-hoc checks); hashed by content."""
    planes, legal = _encode(games)
    digest = hashlib.sha256(planes.tobytes() + np.packbits(legal).tobytes()).hexdigest()
    return CalibrationSet(planes=planes, legal=legal, sha256=digest, source=source)


def load_calibration_set(
    path: str | Path = DEFAULT_POSITIONS, *, limit: int | None = None
) -> CalibrationSet:
    """Read, replay and encode the first ``limit`` positions (all when ``None``).

    The file's checksum is verified by the loader; ``sha256`` here hashes the
    lines actually used (for the whole file: the file's own SHA-256).  Raises
    ``FileNotFoundError`` or ``ValueError`` naming the file on a missing,
    short or malformed set.
    """
    path = Path(path)
    positions = load_positions(path)
    if limit is not None:
        if limit > len(positions):
            raise ValueError(f"{path}: {len(positions)} calibration positions, {limit} requested")
        positions = positions[:limit]
    lines = [line for line in path.read_text().splitlines() if line.strip()][: len(positions)]
    digest = hashlib.sha256("".join(f"{line}\n" for line in lines).encode()).hexdigest()
    games = []
    for position in positions:
        try:
            game = core.Game(position.start_fen)
            for uci in position.moves:
                game.push_uci(uci)
        except ValueError as error:
            raise ValueError(f"{path}: position {position.id!r} does not replay: {error}") from error
        games.append(game)
    planes, legal = _encode(games)
    return CalibrationSet(planes=planes, legal=legal, sha256=digest, source=str(path))
