"""One game record -> replay rows, and one Parquet shard -> rows (SPEC 5, 7).

A game is replayed with the native core from ``start_fen`` through its
unsearched ``prefix_moves`` (history only, never admitted) and its ``moves``;
each searched observation (``ply`` list, including a ply-cap search at the cut
position) becomes one row: packed planes and legal bitset from the core, the
pruned visit policy renormalised over its kept actions, the outcome target
(finished game: one-hot result; capped game: ``wdl(cap_value)`` with the sign
of each position's side to move) blurred by ``0.998 ** plies_remaining`` and
blended with the row's root value by ``beta``, the next searched policy when
the very next ply was searched, ``plies_remaining / 400`` except for capped
games, and which game-ending moves (a mate, a stalemate) the position has.
A late-tail search (``is_tail_search``, the paper's earlier design behind
``selfplay.late_tail``) gives no row: its position is still replayed and
checked, and its policy is still the next-policy label of the row before it,
but it is never admitted. Rows carry the record's ``generation`` and, as
their timestamp, the shard file's modification time (records hold no
completion time; shards are written atomically when their games finish).

``convert_shard`` is the per-shard entry point (validated rows, nothing
appended) for exactly-once ingest; ``shard_rows`` also returns the game count.

Anything inconsistent (schema violation, unreadable file, an illegal move, a
policy action that is not legal, a result the final position contradicts)
raises ``ShardError`` naming the file and game.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from chesszero.replay.layout import (
    ENDING_MATE,
    ENDING_STALEMATE,
    ENDINGS_KNOWN,
    LEGAL_BYTES,
    LENGTH_SCALE,
    MAX_POLICY,
    empty_rows,
    validate_rows,
)
from chesszero.replay.targets import (
    OUTCOME_DISCOUNT,
    blend_root_value,
    blur,
    capped_outcome_wdl,
    length_labels,
    next_policy_index,
    outcome_wdl,
)

NATURAL_ENDS = ("checkmate", "stalemate", "insufficient_material", "threefold_repetition",
                "fifty_moves")
_MAX_MESSAGE = 600


class ShardError(ValueError):
    """Game-record shards that cannot be admitted; ``rejected`` lists (path, reason)."""

    def __init__(self, rejected: list[tuple[str, str]]) -> None:
        self.rejected = rejected
        detail = "; ".join(f"{path}: {reason}" for path, reason in rejected)
        super().__init__(f"rejected {len(rejected)} game-record shard(s), nothing appended: {detail}")

    def __reduce__(self) -> tuple[type[ShardError], tuple[list[tuple[str, str]]]]:
        return (type(self), (self.rejected,))


class GameError(ValueError):
    """A single game record is inconsistent (message names game and ply)."""


@dataclass(frozen=True)
class TargetOptions:
    """Target recipe for materialisation (SPEC 5 values as defaults)."""

    beta: float = 0.0                           # root-value blend at this point of the campaign
    outcome_discount: float = OUTCOME_DISCOUNT  # per remaining ply
    length_scale: float = LENGTH_SCALE          # remaining-length label divisor

    def __post_init__(self) -> None:
        if not 0.0 <= self.beta <= 1.0:
            raise ValueError(f"beta must be in [0, 1], got {self.beta}")
        if not 0.0 < self.outcome_discount <= 1.0:
            raise ValueError(f"outcome_discount must be in (0, 1], got {self.outcome_discount}")
        if not self.length_scale > 0:
            raise ValueError(f"length_scale must be > 0, got {self.length_scale}")


def game_rows(rec: dict[str, Any], options: TargetOptions, timestamp: float) -> np.ndarray:
    """Rows (``ROW_DTYPE``) of one game record given as a column -> value dict."""
    from chesszero import core  # the core owns board, encoding and actions

    gid = rec["game_id"]
    plies = np.asarray(rec["ply"], dtype=np.int64)
    moves: list[str] = rec["moves"]
    prefix: list[str] = rec["prefix_moves"]
    n = plies.size
    rows = empty_rows(n)
    if n == 0:
        return rows

    legal = np.zeros((n, 1888), dtype=bool)
    turns = np.zeros(n, dtype=bool)
    where = "start position"
    try:
        game = core.Game(rec["start_fen"])
        for k, uci in enumerate(prefix):
            where = f"prefix move {k} {uci!r}"
            game.push_uci(uci)
        j = 0
        for p in range(len(moves) + 1):
            if j < n and plies[j] == p:
                rows["planes"][j] = game.encode_packed()
                legal[j, :1880] = game.legal_mask()
                rows["endings"][j] = _endings(game)
                turns[j] = game.turn
                j += 1
            if p < len(moves):
                where = f"move {p} {moves[p]!r}"
                game.push_uci(moves[p])
    except core.ChessError as exc:
        raise GameError(f"game {gid} {where}: {exc}") from exc
    _check_ending(game, rec)

    # sparse policies, flattened over the game's searched positions
    lengths = np.fromiter((len(x) for x in rec["policy_ids"]), dtype=np.int64, count=n)
    if lengths.min() == 0 or lengths.max() > MAX_POLICY:
        bad = int(np.flatnonzero((lengths == 0) | (lengths > MAX_POLICY))[0])
        raise GameError(f"game {gid} ply {plies[bad]}: policy needs 1..{MAX_POLICY} actions, "
                        f"got {lengths[bad]}")
    ids = np.fromiter(chain.from_iterable(rec["policy_ids"]), dtype=np.int64, count=lengths.sum())
    counts = np.fromiter(chain.from_iterable(rec["policy_counts"]), dtype=np.float64,
                         count=lengths.sum())
    owner = np.repeat(np.arange(n), lengths)
    col = np.arange(ids.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    illegal = ~legal[owner, ids]
    if illegal.any():
        j = int(owner[np.flatnonzero(illegal)[0]])
        bad = ids[illegal & (owner == j)].tolist()
        raise GameError(f"game {gid} ply {plies[j]}: policy actions {bad} are not legal there")
    totals = np.bincount(owner, weights=counts, minlength=n)
    if not (totals > 0).all():
        raise GameError(f"game {gid} ply {plies[int(np.argmin(totals))]}: policy has no visits")
    rows["policy_ids"][owner, col] = ids
    rows["policy_probs"][owner, col] = counts / totals[owner]
    discarded = np.asarray(rec["policy_discarded"], dtype=np.float64)
    rows["policy_discarded"] = discarded / (totals + discarded)
    rows["legal"] = np.packbits(legal, axis=1, bitorder="little")[:, :LEGAL_BYTES]

    nxt = next_policy_index(plies)
    has_next = nxt >= 0
    rows["next_ids"][has_next] = rows["policy_ids"][nxt[has_next]]
    rows["next_probs"][has_next] = rows["policy_probs"][nxt[has_next]]
    rows["next_mask"] = has_next

    remaining = len(moves) - plies
    capped = rec["termination"] == "ply_cap"
    if capped:
        outcome = capped_outcome_wdl(float(rec["cap_value"]), remaining)
    else:
        outcome = outcome_wdl(rec["result"], turns)
    root = np.clip(np.asarray(rec["root_value"], dtype=np.float64), -1.0, 1.0)
    target = blur(outcome, remaining, options.outcome_discount)
    rows["wdl"] = blend_root_value(target, root, options.beta)
    rows["length"], rows["length_mask"] = length_labels(remaining, capped, options.length_scale)
    rows["root_value"] = root
    rows["surprise"] = np.maximum(np.asarray(rec["policy_surprise"], dtype=np.float64), 0.0)
    generation = int(rec["generation"])
    if not 0 <= generation < 2**31:
        raise GameError(f"game {gid}: generation {generation} out of int32 range")
    rows["generation"] = generation
    absolute = plies + len(prefix)
    if absolute.max() >= 2**15:
        raise GameError(f"game {gid}: ply {int(absolute.max())} exceeds the int16 row field")
    rows["ply"] = absolute
    rows["timestamp"] = timestamp
    tail = rec.get("is_tail_search")  # absent in a dict built before the column existed
    if tail is not None and any(tail):
        rows = rows[~np.asarray(tail, dtype=bool)]
    return rows


def _endings(game: Any) -> int:
    """The row's ``endings`` byte: which game-ending moves the position has."""
    mates, stalemates = game.ending_actions()
    return ENDINGS_KNOWN | (ENDING_MATE if mates else 0) | (ENDING_STALEMATE if stalemates else 0)


def _check_ending(game: Any, rec: dict[str, Any]) -> None:
    """A game that ended by the rules must end in a position with that result."""
    if rec["termination"] not in NATURAL_ENDS:
        return
    outcome = game.outcome()
    if outcome is None or outcome.result != rec["result"]:
        found = "no game end" if outcome is None else outcome.result
        raise GameError(f"game {rec['game_id']}: record says {rec['result']} by "
                        f"{rec['termination']}, the final position {game.fen()} has {found}")


def shard_rows(path: str | os.PathLike[str], options: TargetOptions, *,
               generation: int | None = None) -> tuple[np.ndarray, int]:
    """All rows of one shard (games in file order) and its game count.

    Validates the shard with the records schema first (and, when
    ``generation`` is given, that every game was played by that generation's
    model); any failure raises ``ShardError`` naming the file.
    """
    from chesszero.selfplay.records import read_shard

    name = str(path)
    try:
        stamp = Path(path).stat().st_mtime
        frame = read_shard(path)
    except Exception as exc:  # unreadable file, bad Parquet or schema violation
        raise ShardError([(name, _short(exc))]) from exc
    parts = []
    try:
        for rec in frame.iter_rows(named=True):
            if generation is not None and int(rec["generation"]) != generation:
                raise GameError(f"game {rec['game_id']}: played by generation {rec['generation']}, "
                                f"this shard is ingested as generation {generation}")
            parts.append(game_rows(rec, options, stamp))
        rows = np.concatenate(parts) if parts else empty_rows(0)
        validate_rows(rows, source="materialised rows")
    except (GameError, ValueError) as exc:
        raise ShardError([(name, _short(exc))]) from exc
    return rows, frame.height


def convert_shard(path: str | os.PathLike[str], options: TargetOptions | None = None, *,
                  generation: int | None = None) -> np.ndarray:
    """The replay rows (``ROW_DTYPE``) of one game-record shard; appends nothing.

    The per-shard, exactly-once ingest path. The shard is fully validated
    (records schema, rules, targets; with ``generation``, every game must
    carry that generation) before any row is returned, and the result is a
    deterministic function of the file and ``options`` (row timestamps are the
    file's modification time), so a shard converted again after a crash gives
    the same rows. Raises ``ShardError`` naming the file. The protocol::

        before = store.total_appended
        journal(shard, before)                    # durable, before the append
        rows = convert_shard(shard, options, generation=g)
        store.append(rows)                        # atomic: all rows or none
        mark_done(shard)

    and on resume with a journalled, unfinished shard: ``store.total_appended
    == before`` means the append never happened (convert and append again);
    ``before + len(rows)`` means it did (just mark the shard done). Anything
    else means another writer touched the store.
    """
    return shard_rows(path, options or TargetOptions(), generation=generation)[0]


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    return text if len(text) <= _MAX_MESSAGE else text[:_MAX_MESSAGE] + "..."
