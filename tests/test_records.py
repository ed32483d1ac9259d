"""Game-record schema: good records round-trip through Parquet, broken ones fail."""

from __future__ import annotations

import dataclasses

import polars as pl
import pytest
from pandera.errors import SchemaError

from chesszero import core
from chesszero.selfplay import records as rec
from chesszero.selfplay.records import GameRecord, SearchedPly


def _ply(ply: int, *, cap: bool = False, value: float = 0.25) -> SearchedPly:
    return SearchedPly(
        ply=ply,
        policy_ids=[12, 40, 77],
        policy_counts=[20.0, 6.5, 1.0],
        policy_prior=[0.5, 0.25, 0.125],
        policy_discarded=0.5,
        root_value=value,
        raw_value=-0.5,
        policy_surprise=0.75,
        best_q=0.25,
        visits=28.0,
        is_cap_search=cap,
    )


def _record(**changes: object) -> GameRecord:
    base = GameRecord(
        game_id="a0-1",
        model_id="m7",
        generation=3,
        start_type="random",
        start_fen=core.STARTING_FEN,
        prefix_moves=["e2e4"],
        moves=["e7e5", "g1f3", "b8c6"],
        plies=[_ply(0), _ply(1), _ply(2)],
        result="1/2-1/2",
        termination="threefold_repetition",
        resign_threshold=-0.9,
        visit_cap=28,
        ply_cap=150,
        seconds=1.5,
        searches=3,
        evaluations=60,
    )
    return dataclasses.replace(base, **changes)


def _capped() -> GameRecord:
    return _record(
        game_id="a0-2",
        plies=[_ply(0), _ply(1), _ply(2), _ply(3, cap=True, value=-0.5)],
        termination="ply_cap",
        cap_value=-0.5,
        searches=4,
    )


def _resigned() -> GameRecord:
    return _record(
        game_id="a0-3",
        termination="resignation",
        result="0-1",
        resigned_by="white",
        plies=[_ply(0), _ply(1), _ply(2), _ply(3, value=-0.96875)],
    )


def test_num_actions_matches_core() -> None:
    assert rec.NUM_ACTIONS == core.NUM_ACTIONS


def test_round_trip_through_parquet(tmp_path) -> None:
    records = [_record(), _capped(), _resigned()]
    path = rec.write_shard(records, tmp_path / "shard.parquet")
    frame = rec.read_shard(path)
    assert frame.height == 3
    assert dict(frame.schema) == rec.RECORD_DTYPES
    assert rec.read_records(path) == records  # every value is exact in float32


def test_frame_has_one_row_per_game_and_list_columns() -> None:
    frame = rec.records_to_frame([_record(), _capped()])
    assert frame["ply"].to_list() == [[0, 1, 2], [0, 1, 2, 3]]
    assert frame["policy_ids"][0].to_list() == [[12, 40, 77]] * 3
    assert frame["cap_value"].to_list() == [None, -0.5]


BROKEN = {
    "result contradicts termination": lambda: _record(result="1-0"),
    "unknown termination": lambda: _record(termination="timeout"),
    "unknown start type": lambda: _record(start_type="book"),
    "more than 60 policy entries": lambda: _record(
        plies=[
            dataclasses.replace(
                _ply(0),
                policy_ids=list(range(61)),
                policy_counts=[1.0] * 61,
                policy_prior=[0.01] * 61,
            )
        ]
    ),
    "ids and counts misaligned": lambda: _record(
        plies=[dataclasses.replace(_ply(0), policy_counts=[1.0])]
    ),
    "action out of range": lambda: _record(
        plies=[dataclasses.replace(_ply(0), policy_ids=[1880, 1, 2])]
    ),
    "negative visits": lambda: _record(
        plies=[dataclasses.replace(_ply(0), policy_counts=[-1.0, 1.0, 1.0])]
    ),
    "value outside [-1, 1]": lambda: _record(plies=[dataclasses.replace(_ply(0), root_value=1.5)]),
    "ply beyond the moves": lambda: _record(plies=[_ply(0), _ply(7)]),
    "plies not increasing": lambda: _record(plies=[_ply(1), _ply(0)]),
    "capped game without cap value": lambda: dataclasses.replace(_capped(), cap_value=None),
    "cap value on an uncapped game": lambda: _record(cap_value=0.1),
    "cap search not last": lambda: _record(
        termination="ply_cap", cap_value=0.0, plies=[_ply(0, cap=True), _ply(1)]
    ),
    "resignation without a side": lambda: dataclasses.replace(_resigned(), resigned_by=None),
    "resigning side won": lambda: dataclasses.replace(_resigned(), result="1-0"),
    "continuation game resigned": lambda: dataclasses.replace(_resigned(), is_continuation=True),
    "negative generation": lambda: _record(generation=-1),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_record_fails_the_schema(name: str) -> None:
    with pytest.raises((SchemaError, ValueError)):
        rec.records_to_frame([BROKEN[name]()])


def test_duplicate_game_ids_fail() -> None:
    with pytest.raises(SchemaError):
        rec.records_to_frame([_record(), _record()])


def test_corrupt_shard_fails_on_read(tmp_path) -> None:
    frame = rec.records_to_frame([_record()])
    bad = frame.with_columns(pl.lit("2-0").alias("result"))
    path = tmp_path / "bad.parquet"
    bad.write_parquet(path)
    with pytest.raises(SchemaError):
        rec.read_shard(path)
    extra = frame.with_columns(pl.lit(1).alias("unexpected"))
    extra.write_parquet(path)
    with pytest.raises(SchemaError):
        rec.read_shard(path)


def test_non_finite_values_are_refused() -> None:
    with pytest.raises(ValueError, match="non-finite"):
        rec.records_to_frame([_record(plies=[dataclasses.replace(_ply(0), best_q=float("nan"))])])
