"""Restart archive: eligibility, selection, tried alternatives, eviction, persistence."""

from __future__ import annotations

import dataclasses

import pytest

from chesszero import core
from chesszero.selfplay.archive import ArchiveSettings, RestartArchive, leading_actions
from chesszero.selfplay.records import GameRecord, SearchedPly

MOVES = ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6", "b5a4", "g8f6", "e1g1", "f8e7"]


def _game_moves(n: int) -> list[str]:
    """n legal plies: a fixed opening, then knights shuffling."""
    shuffle = ["b1c3", "f6g8", "c3b1", "g8f6"]
    moves = list(MOVES)
    while len(moves) < n:
        moves.append(shuffle[(len(moves) - len(MOVES)) % 4])
    return moves[:n]


def _ply(
    ply: int, ids: list[int], counts: list[float], value: float = 0.1, raw: float = 0.5
) -> SearchedPly:
    return SearchedPly(
        ply=ply,
        policy_ids=ids,
        policy_counts=counts,
        policy_prior=[1.0 / len(ids)] * len(ids),
        policy_discarded=0.0,
        root_value=value,
        raw_value=raw,
        policy_surprise=0.1,
        best_q=value,
        visits=sum(counts),
    )


def _actions(moves: list[str], ply: int, ucis: list[str]) -> list[int]:
    g = core.Game()
    for uci in moves[:ply]:
        g.push_uci(uci)
    return [g.action_of(u) for u in ucis]


def _record(plies: list[SearchedPly], n_moves: int = 40) -> GameRecord:
    return GameRecord(
        game_id="src",
        model_id="m",
        generation=0,
        start_type="random",
        start_fen=core.STARTING_FEN,
        prefix_moves=[],
        moves=_game_moves(n_moves),
        plies=plies,
        result="1/2-1/2",
        termination="threefold_repetition",
    )


def test_leading_actions_cover_the_mass() -> None:
    assert leading_actions([1, 2, 3], [50, 40, 10], 0.0, 0.85) == [1, 2]
    assert leading_actions([1, 2, 3], [90, 5, 5], 0.0, 0.85) == [1]
    assert leading_actions([1, 2, 3], [30, 30, 30], 20.0, 0.85) == []  # discarded mass counts


def test_only_eligible_positions_are_archived() -> None:
    moves = _game_moves(40)
    two = _actions(moves, 2, ["g1f3", "b1c3", "d2d4"])  # played g1f3; b1c3 is the alternative
    plies = [
        _ply(2, two, [60.0, 35.0, 5.0]),  # eligible: 2 leading actions
        _ply(3, _actions(moves, 3, ["b8c6", "d7d6"]), [95.0, 5.0]),  # one leading action
        _ply(4, _actions(moves, 4, ["f1b5", "f1c4"]), [50.0, 50.0], value=0.9),  # decided
        _ply(30, _actions(moves, 30, [moves[30], "a2a3"]), [50.0, 50.0]),  # 10 plies left
    ]
    archive = RestartArchive(seed=0)
    assert archive.add_game(_record(plies), generation=0) == 1
    (entry,) = archive.entries()
    assert entry.line == moves[:2] and entry.untried == ["b1c3"]
    start = archive.pick()
    assert start is not None and start.line == [*moves[:2], "b1c3"]
    assert start.game().fen() == "rnbqkbnr/pppp1ppp/8/4p3/4P3/2N5/PPPP1PPP/R1BQKBNR b KQkq - 1 2"
    assert len(archive) == 0  # exhausted entries leave
    assert archive.pick() is None


def test_alternatives_are_tried_once_each_and_entries_age_out(tmp_path) -> None:
    moves = _game_moves(40)
    three = _actions(moves, 2, ["g1f3", "b1c3", "d2d4"])
    record = _record([_ply(2, three, [40.0, 30.0, 30.0])])
    path = tmp_path / "archive.sqlite"
    archive = RestartArchive(path, seed=1)
    archive.add_game(record, generation=0)
    first = archive.pick()
    archive.close()
    reopened = RestartArchive(path, seed=2)  # the tried alternative stays tried
    assert len(reopened) == 1
    second = reopened.pick()
    assert {first.line[-1], second.line[-1]} == {"b1c3", "d2d4"}
    assert len(reopened) == 0
    reopened.add_game(record, generation=1)
    reopened.evict(generation=1 + 40)
    assert len(reopened) == 1
    reopened.evict(generation=1 + 41)
    assert len(reopened) == 0


def test_capacity_evicts_the_oldest_and_priority_prefers_surprise() -> None:
    moves = _game_moves(40)
    acts = _actions(moves, 2, ["g1f3", "b1c3"])
    settings = ArchiveSettings(capacity=3, uniform_fraction=0.0)
    archive = RestartArchive(settings=settings, seed=3)
    for gen, raw in enumerate([0.1, 0.1, 0.1, 0.1, 0.9]):
        archive.add_game(_record([_ply(2, acts, [50.0, 50.0], value=0.1, raw=raw)]), generation=gen)
    assert len(archive) == 3
    assert sorted(e.generation for e in archive.entries()) == [2, 3, 4]
    # with no uniform share, only the entry whose search corrected the network can be picked
    archive.pick()
    assert sorted(e.generation for e in archive.entries()) == [2, 3]


def test_bad_settings_raise() -> None:
    with pytest.raises(ValueError):
        ArchiveSettings(min_leading_actions=4, max_leading_actions=3)
    with pytest.raises(ValueError):
        ArchiveSettings(leading_mass=1.5)
    with pytest.raises(ValueError):
        dataclasses.replace(ArchiveSettings(), capacity=0)
