"""The calibration positions as network inputs: planes, legal masks and a hash.

Publication measures the fidelity gate on one fixed set of real positions
(SPEC 9: 516, from ``data/calibration/positions.jsonl``). Activation ranges
and quantisation-aware fine-tuning use a *tuning* set, never the gate's
positions when the caller has other data: ``tuning_set_from_replay`` draws
rows from the campaign's replay store (seeded; ``tuning_set_from_rows`` from
rows in hand, e.g. a replay snapshot), and before any replay exists
``calibration_set_from_games`` encodes seeded random-play positions; so the
gate never scores what the quantiser was fitted to. :class:`CalibrationSet`
holds either kind already encoded by the native core, with a SHA-256 and a
source description that the artifact metadata records.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from chesszero import core
from chesszero.publish.calibration_positions import DEFAULT_POSITIONS, load_positions

if TYPE_CHECKING:
    from chesszero.replay.rows import RowBatch

__all__ = ["CalibrationSet", "calibration_set_from_games", "load_calibration_set", "random_play_set",
           "random_positions", "tuning_set_from_replay", "tuning_set_from_rows"]


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


def tuning_set_from_replay(store_path: str | Path, *, limit: int, seed: int) -> CalibrationSet:
    """`limit` rows drawn (seeded, without replacement) from a replay store's
    valid rows, as planes and legal masks; ValueError naming the store when it
    has no rows. The source names the store, the rows' sequence range and the seed."""
    from chesszero.replay import ReplayStore

    path = Path(store_path)
    if not path.is_file():
        raise ValueError(f"replay store not found: {str(path)!r}")
    if limit < 1:
        raise ValueError(f"tuning set size must be >= 1, got {limit}")
    with ReplayStore.open(path, readonly=True) as store:
        rows = store.read_valid()
    if len(rows) == 0:
        raise ValueError(f"{path}: the replay store has no rows to tune on")
    return tuning_set_from_rows(rows, limit=limit, seed=seed, origin=f"replay {path.name}")


def tuning_set_from_rows(rows: RowBatch, *, limit: int, seed: int, origin: str) -> CalibrationSet:
    """`limit` of `rows` (seeded, without replacement) as planes and legal masks;
    the source names `origin`, the rows' sequence range and the seed."""
    from chesszero.replay.layout import unpack_legal

    if limit < 1:
        raise ValueError(f"tuning set size must be >= 1, got {limit}")
    if len(rows) == 0:
        raise ValueError(f"{origin}: no rows to tune on")
    rng = np.random.default_rng(seed)
    pick = np.sort(rng.choice(len(rows), size=min(limit, len(rows)), replace=False))
    packed = np.ascontiguousarray(rows.planes[pick])
    planes = np.empty((len(pick), core.NUM_PLANES, 8, 8), dtype=np.float32)
    core.unpack_planes(packed, planes)
    legal = unpack_legal(rows.legal[pick]).astype(np.bool_)
    seqs = rows.seq[pick]
    digest = hashlib.sha256(packed.tobytes() + np.packbits(legal).tobytes()).hexdigest()
    source = f"{origin}: {len(pick)} rows, seq {int(seqs.min())}..{int(seqs.max())}, seed {seed}"
    return CalibrationSet(planes=planes, legal=legal, sha256=digest, source=source)


def random_positions(n: int, *, seed: int = 0, max_plies: int = 80) -> list[core.Game]:
    """`n` unfinished games after 0..`max_plies` seeded random legal moves."""
    import random

    rng = random.Random(seed)
    games: list[core.Game] = []
    while len(games) < n:
        game = core.Game()
        for _ in range(rng.randint(0, max_plies)):
            actions = game.legal_actions()
            if len(actions) == 0 or game.outcome() is not None:
                break
            game.push_action(int(rng.choice(list(actions))))
        if game.outcome() is None and len(game.legal_actions()) > 0:
            games.append(game)
    return games


def random_play_set(n: int, *, seed: int, max_plies: int = 80) -> CalibrationSet:
    """`random_positions` encoded: the tuning set before a campaign has replay rows."""
    games = random_positions(n, seed=seed, max_plies=max_plies)
    return calibration_set_from_games(games, source=f"random play: {n} positions, seed {seed}")

