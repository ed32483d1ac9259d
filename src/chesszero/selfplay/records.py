"""Self-play game records: the typed builder API and the Parquet shard schema.

One row per game. Per-ply data (one entry per *searched* position; with
playout-cap randomisation only the full searches are recorded, so plies may
be skipped) lives in
list columns that all have the same length within a row. A game is replayed
exactly from ``start_fen`` + ``prefix_moves`` + ``moves``:

- ``prefix_moves`` are unsearched (random opening plies, or a restart prefix
  ending with the untried alternative) and are never trained on, but they
  are part of the game history (repetitions, history planes).
- ``moves`` are all moves played after the prefix, in UCI.
- ``ply[i]`` indexes the searched position *before* ``moves[ply[i]]``
  (the position after ``prefix_moves + moves[:ply[i]]``). A game cut at the
  ply cap carries one more searched entry, ``is_cap_search = True``, with
  ``ply == len(moves)``: the dedicated search at the cut position, whose root
  value is also stored as ``cap_value``.
- With the paper's earlier late-tail design (``selfplay.late_tail``, 6.1),
  ``is_tail_search[i]`` marks the cheap searches from its ply on: recorded,
  never admitted as replay rows. With its ``preceding`` cut target a capped
  game has no cap search; its last entry is the search before the cut
  (``ply == len(moves) - 1``) and ``cap_value`` is that root value, sign
  reversed. Shards written before the column read it as all false.
- Values (``root_value``, ``raw_value``, ``best_q``, ``cap_value``) are scalars
  ``W - L`` in [-1, 1] from the side to move at that position.
- A resigned game's last searched entry is the position where the side to
  move resigned, also with ``ply == len(moves)`` (no move was played there).
- The policy target is sparse: ``policy_ids[i]`` (at most 60 action indices,
  SPEC 3, most visited first) with ``policy_counts[i]`` (root visits after
  forced-playout pruning; fractional when visits were kept from the previous
  move's tree), ``policy_prior[i]`` (the network prior of those actions,
  without root noise) and ``policy_discarded[i]`` (the pruned-target visit
  mass beyond the 60 kept). ``visits[i]`` is the root's total visit count.
- ``policy_surprise[i]`` is ``KL(pi_search || p_prior)`` over all legal moves
  (full pruned target, prior without root noise), the replay sampler's
  priority (SPEC 7).

``result`` is the PGN result. A game cut at the ply cap has no natural result;
it is stored as ``"1/2-1/2"`` with ``termination == "ply_cap"`` and its outcome
target comes from ``cap_value`` (SPEC 5). Shards are validated on write and
on read; a row that breaks any rule raises ``pandera.errors.SchemaError``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pandera.polars as pa
import polars as pl

from chesszero.core import NUM_ACTIONS, RESULT_TEXT, TERMINATION_NAMES

MAX_POLICY_ENTRIES = 60

StartType = Literal["random", "restart", "odds", "random_opponent"]
ResultText = Literal["1-0", "0-1", "1/2-1/2"]
TerminationText = Literal[
    "checkmate",
    "stalemate",
    "insufficient_material",
    "threefold_repetition",
    "fifty_moves",
    "ply_cap",
    "resignation",
]
Colour = Literal["white", "black"]

# odds: a material-odds start (no prefix); random_opponent: a random opening
# played on against a uniformly random mover (only the searching side has rows)
START_TYPES: tuple[str, ...] = ("random", "restart", "odds", "random_opponent")
CURRICULUM_STARTS: tuple[str, ...] = ("odds", "random_opponent")  # lopsided by construction: counted apart
RESULTS: tuple[str, ...] = tuple(RESULT_TEXT.values())  # the core's codes, in order
TERMINATIONS: tuple[str, ...] = tuple(TERMINATION_NAMES.values())
DECISIVE_TERMINATIONS: tuple[str, ...] = ("checkmate", "resignation")
COLOURS: tuple[str, ...] = ("white", "black")


@dataclass(frozen=True, slots=True)
class SearchedPly:
    """One searched position of a game (all values from its side to move)."""

    ply: int  # index into GameRecord.moves of the move chosen here (== len(moves) for the cap search)
    policy_ids: list[int]  # up to 60 action indices, most visited first
    policy_counts: list[float]  # pruned root visits for policy_ids
    policy_prior: list[float]  # network prior (no root noise) of policy_ids
    policy_discarded: float  # pruned visit mass of actions beyond the 60 kept
    root_value: float  # search root value W - L
    raw_value: float  # network value W - L at the root, before search
    policy_surprise: float  # KL(pi_search || p_prior) in nats
    best_q: float  # backed-up value of the most visited child
    visits: float  # root visits when the search stopped (retained ones included, may be fractional)
    is_cap_search: bool = False  # the dedicated search at a ply-cap cut position
    is_tail_search: bool = False  # a cheap late-tail search (selfplay.late_tail): no replay row


@dataclass(frozen=True, slots=True)
class GameRecord:
    """A finished self-play game, as stored (one Parquet row)."""

    game_id: str
    model_id: str
    generation: int
    start_type: StartType
    start_fen: str
    prefix_moves: list[str]
    moves: list[str]
    plies: list[SearchedPly]
    result: ResultText
    termination: TerminationText
    resigned_by: Colour | None = None  # side that resigned (termination "resignation")
    resign_threshold: float | None = None  # threshold in force, None when resignation was off
    is_continuation: bool = False  # designated never to resign (calibration evidence)
    cap_value: float | None = None  # cap search root value, cut position's side to move
    visit_cap: int = 0  # visits per recorded move this game was played with
    ply_cap: int = 0  # ply cap this game was played with (counted over all plies)
    seconds: float = 0.0  # wall time spent on the game (search + inference share)
    searches: int = 0  # searches run for the game (len(plies))
    evaluations: int = 0  # network evaluations requested for the game

    @property
    def is_decisive(self) -> bool:
        return self.result != "1/2-1/2"

    @property
    def admitted_rows(self) -> int:
        """Searched positions that become replay rows (late-tail searches do not)."""
        return sum(not p.is_tail_search for p in self.plies)


_PLY_COLUMNS: dict[str, pl.DataType] = {
    "ply": pl.List(pl.Int32),
    "policy_ids": pl.List(pl.List(pl.Int16)),
    "policy_counts": pl.List(pl.List(pl.Float32)),
    "policy_prior": pl.List(pl.List(pl.Float32)),
    "policy_discarded": pl.List(pl.Float32),
    "root_value": pl.List(pl.Float32),
    "raw_value": pl.List(pl.Float32),
    "policy_surprise": pl.List(pl.Float32),
    "best_q": pl.List(pl.Float32),
    "visits": pl.List(pl.Float32),
    "is_cap_search": pl.List(pl.Boolean),
    "is_tail_search": pl.List(pl.Boolean),
}

_GAME_COLUMNS: dict[str, pl.DataType] = {
    "game_id": pl.Utf8(),
    "model_id": pl.Utf8(),
    "generation": pl.Int64(),
    "start_type": pl.Utf8(),
    "start_fen": pl.Utf8(),
    "prefix_moves": pl.List(pl.Utf8),
    "moves": pl.List(pl.Utf8),
}

_OUTCOME_COLUMNS: dict[str, pl.DataType] = {
    "result": pl.Utf8(),
    "termination": pl.Utf8(),
    "resigned_by": pl.Utf8(),
    "resign_threshold": pl.Float64(),
    "is_continuation": pl.Boolean(),
    "cap_value": pl.Float64(),
    "visit_cap": pl.Int32(),
    "ply_cap": pl.Int32(),
    "seconds": pl.Float64(),
    "searches": pl.Int64(),
    "evaluations": pl.Int64(),
}

#: Column name -> polars dtype, in storage order.
RECORD_DTYPES: dict[str, pl.DataType] = {**_GAME_COLUMNS, **_PLY_COLUMNS, **_OUTCOME_COLUMNS}
_NULLABLE = {"resigned_by", "resign_threshold", "cap_value"}


def _rowwise(expr: pl.Expr) -> pa.Check:
    """A row-level check written as a polars expression over the frame."""

    def check(data: pa.PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(expr.fill_null(False).alias("ok"))

    return pa.Check(check, element_wise=False)


def _all_in(col: str, lo: float, hi: float) -> pl.Expr:
    inner = pl.col(col).list.eval(pl.element().is_between(lo, hi)).list.all()
    return inner


def _row_rules() -> list[tuple[str, pl.Expr]]:
    n = pl.col("ply").list.len()
    term = pl.col("termination")
    same_len = pl.all_horizontal([pl.col(c).list.len() == n for c in _PLY_COLUMNS])
    inner_len = (
        pl.col("policy_ids")
        .list.eval(pl.element().list.len())
        .list.eval(pl.element() <= MAX_POLICY_ENTRIES)
        .list.all()
    )
    ids_len = pl.col("policy_ids").list.eval(pl.element().list.len())
    ids_counts_match = (ids_len == pl.col("policy_counts").list.eval(pl.element().list.len())) & (
        ids_len == pl.col("policy_prior").list.eval(pl.element().list.len())
    )
    ids_range = (
        pl.col("policy_ids")
        .list.eval(pl.element().list.eval(pl.element().is_between(0, NUM_ACTIONS - 1)).list.all())
        .list.all()
    )
    counts_ok = (
        pl.col("policy_counts")
        .list.eval(pl.element().list.eval(pl.element() >= 0).list.all())
        .list.all()
    )
    prior_ok = (
        pl.col("policy_prior")
        .list.eval(pl.element().list.eval(pl.element().is_between(0.0, 1.0)).list.all())
        .list.all()
    )
    ply_range = pl.col("ply").list.eval(pl.element() >= 0).list.all() & (
        pl.col("ply").list.max().fill_null(0) <= pl.col("moves").list.len()
    )
    n_cap = pl.col("is_cap_search").list.sum()
    cap_search = (
        (n_cap == 1)
        & pl.col("is_cap_search").list.last()
        & (pl.col("ply").list.last() == pl.col("moves").list.len())
    )
    preceding = (  # late_tail.cut_target "preceding": the search before the cut, sign reversed
        (n_cap == 0)
        & (pl.col("ply").list.last() == pl.col("moves").list.len() - 1)
        & ((pl.col("cap_value") + pl.col("root_value").list.last()).abs() <= 1e-6)
    )
    cap_rule = (
        pl.when(term == "ply_cap")
        .then(
            (cap_search | preceding)
            & pl.col("cap_value").is_not_null()
            & (pl.col("result") == "1/2-1/2")
        )
        .otherwise((n_cap == 0) & pl.col("cap_value").is_null())
    )
    # the cap search (always the last entry, cap_rule) is a full search, never a tail one
    tail_not_cap = (n_cap == 0) | ~pl.col("is_tail_search").list.last().fill_null(False)
    decisive = term.is_in(list(DECISIVE_TERMINATIONS))
    result_rule = (
        pl.when(decisive)
        .then(pl.col("result") != "1/2-1/2")
        .otherwise(pl.col("result") == "1/2-1/2")
    )
    resign_rule = (
        pl.when(term == "resignation")
        .then(
            pl.col("resigned_by").is_not_null()
            & ~pl.col("is_continuation")
            & pl.col("resign_threshold").is_not_null()
            & (
                pl.when(pl.col("resigned_by") == "white")
                .then(pl.col("result") == "0-1")
                .otherwise(pl.col("result") == "1-0")
            )
        )
        .otherwise(pl.col("resigned_by").is_null())
    )
    return [
        ("per-ply lists have equal length", same_len),
        ("at most 60 policy entries", inner_len),
        ("policy ids, counts and priors align", ids_counts_match),
        ("policy ids are actions", ids_range),
        ("policy counts >= 0", counts_ok),
        ("policy prior in [0, 1]", prior_ok),
        (
            "policy_discarded >= 0",
            pl.col("policy_discarded").list.eval(pl.element() >= 0).list.all(),
        ),
        ("root_value in [-1, 1]", _all_in("root_value", -1.0, 1.0)),
        ("raw_value in [-1, 1]", _all_in("raw_value", -1.0, 1.0)),
        ("best_q in [-1, 1]", _all_in("best_q", -1.0, 1.0)),
        (
            "policy_surprise >= 0",
            pl.col("policy_surprise").list.eval(pl.element() >= -1e-4).list.all(),
        ),
        ("visits >= 1", pl.col("visits").list.eval(pl.element() >= 1).list.all()),
        ("ply indexes moves", ply_range),
        (
            "ply strictly increasing",
            pl.col("ply").list.eval(pl.element().diff().drop_nulls() > 0).list.all(),
        ),
        ("ply cap rows: a final cap search (or the preceding search) and cap_value", cap_rule),
        ("a cap search is not a tail search", tail_not_cap),
        ("result matches termination", result_rule),
        ("resignation fields", resign_rule),
        (
            "cap_value in [-1, 1]",
            pl.col("cap_value").is_null() | pl.col("cap_value").is_between(-1, 1),
        ),
    ]


def _build_schema() -> pa.DataFrameSchema:
    columns: dict[str, pa.Column] = {}
    for name, dtype in RECORD_DTYPES.items():
        checks: list[pa.Check] = []
        if name == "start_type":
            checks.append(pa.Check.isin(list(START_TYPES)))
        elif name == "result":
            checks.append(pa.Check.isin(list(RESULTS)))
        elif name == "termination":
            checks.append(pa.Check.isin(list(TERMINATIONS)))
        elif name == "resigned_by":
            checks.append(pa.Check.isin(list(COLOURS)))
        elif name in ("generation", "seconds", "searches", "evaluations", "visit_cap", "ply_cap"):
            checks.append(pa.Check.ge(0))
        elif name == "resign_threshold":
            checks.append(pa.Check.in_range(-1.0, 1.0))
        columns[name] = pa.Column(dtype, checks=checks, nullable=name in _NULLABLE)
    checks = []
    for name, expr in _row_rules():
        check = _rowwise(expr)
        check.name = name
        checks.append(check)
    return pa.DataFrameSchema(
        columns, checks=checks, strict=True, unique=["game_id"], name="GameRecord"
    )


#: The pandera schema of a game-record shard (strict: no extra columns).
GAME_RECORD_SCHEMA: pa.DataFrameSchema = _build_schema()


def validate(frame: pl.DataFrame) -> pl.DataFrame:
    """Validates ``frame`` against the schema; raises ``SchemaError`` on any violation."""
    return GAME_RECORD_SCHEMA.validate(frame, lazy=False)


def _finite(x: float | None) -> float | None:
    if x is None:
        return None
    if not math.isfinite(x):
        raise ValueError(f"non-finite value {x!r} in a game record")
    return float(x)


def records_to_frame(records: Sequence[GameRecord]) -> pl.DataFrame:
    """Builds the (validated) shard frame of ``records``, one row per game."""
    data: dict[str, list[object]] = {name: [] for name in RECORD_DTYPES}
    for r in records:
        for name in _GAME_COLUMNS:
            data[name].append(getattr(r, name))
        data["ply"].append([p.ply for p in r.plies])
        data["policy_ids"].append([list(p.policy_ids) for p in r.plies])
        data["policy_counts"].append([[float(c) for c in p.policy_counts] for p in r.plies])
        data["policy_prior"].append([[float(c) for c in p.policy_prior] for p in r.plies])
        for name in ("policy_discarded", "root_value", "raw_value", "policy_surprise", "best_q"):
            data[name].append([_finite(getattr(p, name)) for p in r.plies])
        data["visits"].append([p.visits for p in r.plies])
        data["is_cap_search"].append([p.is_cap_search for p in r.plies])
        data["is_tail_search"].append([p.is_tail_search for p in r.plies])
        for name in _OUTCOME_COLUMNS:
            value = getattr(r, name)
            data[name].append(_finite(value) if isinstance(value, float) else value)
    frame = pl.DataFrame(data, schema=RECORD_DTYPES)
    return validate(frame)


def frame_to_records(frame: pl.DataFrame) -> list[GameRecord]:
    """Inverse of :func:`records_to_frame` (validates first)."""
    frame = validate(frame)
    out: list[GameRecord] = []
    for row in frame.iter_rows(named=True):
        plies = [
            SearchedPly(
                ply=row["ply"][i],
                policy_ids=list(row["policy_ids"][i]),
                policy_counts=list(row["policy_counts"][i]),
                policy_prior=list(row["policy_prior"][i]),
                policy_discarded=row["policy_discarded"][i],
                root_value=row["root_value"][i],
                raw_value=row["raw_value"][i],
                policy_surprise=row["policy_surprise"][i],
                best_q=row["best_q"][i],
                visits=row["visits"][i],
                is_cap_search=row["is_cap_search"][i],
                is_tail_search=row["is_tail_search"][i],
            )
            for i in range(len(row["ply"]))
        ]
        kwargs = {k: row[k] for k in (*_GAME_COLUMNS, *_OUTCOME_COLUMNS)}
        out.append(GameRecord(plies=plies, **kwargs))
    return out


def write_shard(records: Sequence[GameRecord] | pl.DataFrame, path: str | Path) -> Path:
    """Validates and writes a Parquet shard atomically (temp file + rename)."""
    frame = records if isinstance(records, pl.DataFrame) else records_to_frame(records)
    frame = validate(frame)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    frame.write_parquet(tmp, compression="zstd", statistics=True)
    tmp.replace(path)
    return path


def read_shard(path: str | Path) -> pl.DataFrame:
    """Reads a Parquet shard and validates it against the schema (a shard
    written before ``is_tail_search`` existed reads it as all false)."""
    frame = pl.read_parquet(path)
    if "is_tail_search" not in frame.columns and "is_cap_search" in frame.columns:
        no_tail = pl.col("is_cap_search").list.eval(pl.element() & False)
        frame = frame.with_columns(no_tail.alias("is_tail_search"))
    return validate(frame)


def read_records(path: str | Path) -> list[GameRecord]:
    """Reads a shard as :class:`GameRecord` values."""
    return frame_to_records(read_shard(path))


__all__ = [
    "COLOURS",
    "DECISIVE_TERMINATIONS",
    "GAME_RECORD_SCHEMA",
    "MAX_POLICY_ENTRIES",
    "RECORD_DTYPES",
    "RESULTS",
    "START_TYPES",
    "TERMINATIONS",
    "GameRecord",
    "SearchedPly",
    "frame_to_records",
    "read_records",
    "read_shard",
    "records_to_frame",
    "validate",
    "write_shard",
]
