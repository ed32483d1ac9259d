"""Training positions for the NNUE student: quiet positions of the teacher's
game records, deduplicated by Zobrist key, with a deterministic held-out split.

- ``TeacherCampaign`` / ``teacher_campaign(root, name)``: the campaign's
  admitted game-record shards (``state.json``; every shard under
  ``shards/`` when there is no state) and its active published artifact.
- ``PositionRows``: rows gathered from any source: FEN, Zobrist key (the
  core's ``Game.key``), the game's result from the side to move's view (NaN
  when the game had none), the packed input planes with the game's history
  (what the teacher saw), the best move, the source, and the alpha-beta
  search's score of the position in centipawns when a search game chose the
  move (NaN otherwise; mates as +-``CP_CLIP``).
- ``quiet(game, best)``: the side to move is not in check and ``best`` is
  not a capture (it takes a piece: the board holds fewer pieces after it).
- ``read_teacher_games``: every searched position of the records (a
  late-tail search excepted) whose most visited move is quiet; a capped
  game's result is its cap value (SPEC 5), ``(v + 1) / 2``.
- ``finish(rows, ...)``: one row per key (results and search scores
  averaged over the duplicates that know them,
  the first occurrence's FEN and planes kept), an optional key-hash subset of
  ``max_positions``, and the held-out mask (``key_hash(key, HOLDOUT) <
  fraction``: the same position is always on the same side).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from chesszero import core

__all__ = ["CP_CLIP", "HOLDOUT", "SEARCH_SUBSET", "SOURCE_SEARCH", "SOURCE_TEACHER", "SUBSET", "PositionRows",
           "TeacherCampaign", "finish", "key_fraction", "quiet", "read_teacher_games", "teacher_campaign"]

SOURCE_TEACHER = 0
SOURCE_SEARCH = 1
CP_CLIP = 2000.0
"""Centipawn labels are clipped to +-2000 (sigmoid(5) = 0.993), and a search's mate score is stored as that."""
HOLDOUT, SUBSET, SEARCH_SUBSET = 1, 2, 3
"""Salts of ``key_fraction``: the held-out split, the ``max_positions`` subset, the teacher-search subset."""

_M1, _M2, _GOLD = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB), 0x9E3779B97F4A7C15


def key_fraction(keys: np.ndarray, salt: int) -> np.ndarray:
    """A uniform number in [0, 1) per Zobrist key (splitmix64 of ``key + salt * golden``), stable across runs."""
    z = np.asarray(keys, np.uint64) + np.uint64(salt * _GOLD % (1 << 64))
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) / float(1 << 53)


@dataclass(frozen=True)
class TeacherCampaign:
    """A teacher campaign's game records and published network."""

    name: str
    folder: Path
    shards: tuple[Path, ...]
    artifact: Path | None
    run_id: str | None


def teacher_campaign(root: Path, name: str, artifact: Path | None = None) -> TeacherCampaign:
    """The campaign ``runs/<name>`` of ``root``; ``ValueError`` naming it when it is missing or has no games."""
    folder = root / "runs" / name
    if not folder.is_dir():
        raise ValueError(f"no campaign {name!r} under {root / 'runs'} (no such folder)")
    state_path = folder / "state.json"
    state = json.loads(state_path.read_text()) if state_path.is_file() else {}
    if state.get("admitted_shards"):
        shards = tuple(folder / s for s in state["admitted_shards"])
    else:
        shards = tuple(sorted((folder / "shards").glob("*/*.parquet")))
    shards = tuple(p for p in shards if p.is_file())
    if not shards:
        raise ValueError(f"campaign {name!r} has no game records yet (no shards under {folder / 'shards'})")
    found = artifact or (Path(state["active_artifact"]) if state.get("active_artifact") else None)
    return TeacherCampaign(name, folder, shards, found, state.get("mlflow_run_id"))


def _pieces(fen: str) -> int:
    return sum(c.isalpha() for c in fen.split(" ", 1)[0])


def quiet(game: core.Game, best: str) -> bool:
    """Not in check and ``best`` captures nothing (module docstring)."""
    if game.is_check():
        return False
    after = game.copy()
    after.push_uci(best)
    return _pieces(after.fen()) == _pieces(game.fen())


class PositionRows:
    """Rows gathered from the sources (module docstring), in arrival order."""

    def __init__(self) -> None:
        self.fens: list[str] = []
        self.keys: list[int] = []
        self.results: list[float] = []
        self.planes: list[np.ndarray] = []
        self.best: list[str] = []
        self.source: list[int] = []
        self.search_cp: list[float] = []
        self.seen = 0  # positions offered, quiet or not

    def __len__(self) -> int:
        return len(self.fens)

    def offer(self, game: core.Game, best: str, result: float, source: int, search_cp: float = float("nan")) -> bool:
        """Adds ``game``'s position when it is quiet; ``result`` and ``search_cp`` are from its side to move's view."""
        self.seen += 1
        if not quiet(game, best):
            return False
        self.fens.append(game.fen())
        self.keys.append(int(game.key))
        self.results.append(result)
        self.planes.append(game.encode_packed())
        self.best.append(best)
        self.source.append(source)
        self.search_cp.append(search_cp)
        return True

    def arrays(self) -> dict[str, np.ndarray]:
        planes = np.stack(self.planes) if self.planes else np.zeros((0, int(core.PACKED_BYTES)), np.uint8)
        return {"fen": np.array(self.fens, dtype=str), "key": np.array(self.keys, np.uint64),
                "result": np.array(self.results, np.float32), "planes": planes,
                "best": np.array(self.best, dtype=str), "source": np.array(self.source, np.int8),
                "search_cp": np.array(self.search_cp, np.float32)}


def _white_result(row: dict, final: core.Game) -> float:
    """The game's score for White in [0, 1]: 1, 0.5, 0, or a capped game's cap value; NaN when unknown."""
    if row["termination"] == "ply_cap":
        cap = row["cap_value"]
        if cap is None:
            return float("nan")
        v = cap if final.turn else -cap  # cap_value is from the cut position's side to move
        return (v + 1.0) / 2.0
    return {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}[row["result"]]


_COLUMNS = ("start_fen", "prefix_moves", "moves", "ply", "policy_ids", "policy_counts", "is_tail_search",
            "termination", "result", "cap_value")


def _read_games(shards: Sequence[Path], max_games: int | None,
                on_shard: Callable[[int], None] | None) -> pl.DataFrame:
    """The newest ``max_games`` games of the shards as one frame, checked against the record schema once
    (the schema's cost is per call, not per game); a shard that breaks it is named by ``read_shard``."""
    from chesszero.selfplay.records import read_shard, validate

    frames: list[pl.DataFrame] = []
    games = 0
    for shard in reversed(shards):  # admission order: the newest last
        frame = pl.read_parquet(shard)
        if "is_tail_search" not in frame.columns and "is_cap_search" in frame.columns:  # as read_shard does
            frame = frame.with_columns(pl.col("is_cap_search").list.eval(pl.element() & False).alias("is_tail_search"))
        frames.insert(0, frame)
        games += frame.height
        if on_shard is not None:
            on_shard(1)
        if max_games is not None and games >= max_games:
            break
    picked = shards[len(shards) - len(frames):]
    frame = pl.concat(frames, how="vertical")
    try:
        validate(frame)
    except Exception:
        for shard in picked:
            read_shard(shard)  # raises naming the bad shard
        raise
    return frame.tail(max_games) if max_games is not None else frame


def read_teacher_games(shards: Sequence[Path], rows: PositionRows, *, max_games: int | None = None,
                       on_shard: Callable[[int], None] | None = None) -> int:
    """Adds the quiet searched positions of the newest ``max_games`` games (all when None); returns games read."""
    frame = _read_games(shards, max_games, on_shard).select(_COLUMNS)
    for row in frame.iter_rows(named=True):
        game = core.Game(row["start_fen"])
        for uci in row["prefix_moves"]:
            game.push_uci(uci)
        final = game.copy()
        for uci in row["moves"]:
            final.push_uci(uci)
        white = _white_result(row, final)
        searched = {ply: i for i, (ply, tail) in enumerate(zip(row["ply"], row["is_tail_search"], strict=True))
                    if not tail and row["policy_ids"][i]}
        for k, uci in enumerate([*row["moves"], None]):
            i = searched.get(k)
            if i is not None:
                counts = row["policy_counts"][i]
                best = game.uci_of(int(row["policy_ids"][i][int(np.argmax(counts))]))
                rows.offer(game, best, white if game.turn else 1.0 - white, SOURCE_TEACHER)
            if uci is not None:
                game.push_uci(uci)
    return frame.height


def _mean_known(values: np.ndarray, inverse: np.ndarray, groups: int) -> np.ndarray:
    """Per group, the mean of the values that are not NaN (NaN when none is)."""
    values = values.astype(np.float64)
    known = ~np.isnan(values)
    total = np.bincount(inverse, weights=np.where(known, values, 0.0), minlength=groups)
    count = np.bincount(inverse, weights=known.astype(np.float64), minlength=groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def finish(arrays: dict[str, np.ndarray], *, holdout_fraction: float,
           max_positions: int | None = None) -> dict[str, np.ndarray]:
    """Deduplicated, optionally subset, with the ``holdout`` mask (module docstring)."""
    keys = arrays["key"]
    unique, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(first)  # arrival order of each key's first occurrence
    keep = first[order]
    out = {k: v[keep] for k, v in arrays.items()}
    for name in ("result", "search_cp"):
        if name in arrays:
            out[name] = _mean_known(arrays[name], inverse, len(unique))[order].astype(np.float32)
    out["duplicates"] = np.bincount(inverse, minlength=len(unique))[order].astype(np.int32)
    if max_positions is not None and len(keep) > max_positions:
        chosen = np.sort(np.argsort(key_fraction(out["key"], SUBSET), kind="stable")[:max_positions])
        out = {k: v[chosen] for k, v in out.items()}
    out["holdout"] = key_fraction(out["key"], HOLDOUT) < holdout_fraction
    return out
