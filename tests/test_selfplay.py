"""Self-play actor: batches map to games, records, cap search, resignation, resumption."""

from __future__ import annotations

import numpy as np
import pytest

from chesszero import _core, core
from chesszero.search import ScriptedEvaluator, UniformEvaluator
from chesszero.selfplay import records as rec
from chesszero.selfplay.actor import ActorSettings, SelfPlayActor, resign_probes
from chesszero.selfplay.logs import PendingGame


def _material(planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Value from the material planes (own minus opponent, planes 40-44)."""
    n = planes.shape[0]
    diff = planes[:, 40:45, 0, 0] @ np.array([1, 3, 3, 5, 9], np.float32)
    v = np.tanh(diff / 4)
    wdl = np.stack([np.maximum(v, 0), 1 - np.abs(v), np.maximum(-v, 0)], axis=1).astype(np.float32)
    return np.zeros((n, 1880), np.float32), wdl


def _line_game(start_fen: str, moves: list[str]) -> core.Game:
    g = core.Game(start_fen)
    for uci in moves:
        g.push_uci(uci)
    return g


def _replay_checks(record: rec.GameRecord) -> None:
    """Every move is legal, every policy id is a legal action of its position."""
    game = _line_game(record.start_fen, record.prefix_moves)
    by_ply = {p.ply: p for p in record.plies}
    for i in range(len(record.moves) + 1):
        if i in by_ply:
            legal = set(game.legal_actions().tolist())
            assert set(by_ply[i].policy_ids) <= legal
        if i < len(record.moves):
            game.push_uci(record.moves[i])


def _actor(**changes: object) -> _core.Actor:
    options = _core.ActorOptions(**{"num_games": 6, "seed": 11, **changes})
    return _core.Actor(options)


def test_batch_rows_map_to_their_games_and_legal_moves() -> None:
    actor = _actor()
    actor.set_limits(visits=6, ply_cap=24)
    buf = np.zeros((4, 52, 8, 8), np.float32)
    favourite: dict[str, int] = {}
    rows_checked = 0
    finished: list[_core.GameLog] = []
    while len(finished) < 4:
        n = actor.prepare_batch(buf)
        logits = np.zeros((n, 1880), np.float32)
        for row, (_slot, game_id, fen, moves) in enumerate(actor.describe_batch()):
            leaf = _line_game(fen, moves)
            np.testing.assert_array_equal(buf[row], leaf.encode())
            top = int(leaf.legal_actions().max())  # this game's scripted favourite
            logits[row, top] = 20.0
            favourite[f"{game_id}:{len(moves)}"] = top
            rows_checked += 1
        actor.submit_results(logits, np.tile(np.array([0, 1, 0], np.float32), (n, 1)))
        finished += actor.take_finished()
    assert rows_checked > 100
    for log in finished:
        for i, ply in enumerate(log.ply.tolist()):
            key = f"{log.id}:{len(log.prefix) + ply}"
            ids = log.policy_ids[log.policy_offsets[i] : log.policy_offsets[i + 1]].tolist()
            prior = log.policy_prior[log.policy_offsets[i] : log.policy_offsets[i + 1]].tolist()
            if key in favourite and favourite[key] in ids:
                assert prior[ids.index(favourite[key])] > 0.99


def test_finish_started_plays_every_game_in_flight_to_its_end() -> None:
    settings = ActorSettings(games_in_flight=8, seed=7, restart_fraction=0.0)
    handed_back = SelfPlayActor(settings)
    partial = handed_back.play(UniformEvaluator(), visits=4, ply_cap=40, model_id="m", generation=0, games=3)
    assert handed_back.pending  # games still in flight at the quota are handed back
    actor = SelfPlayActor(settings)
    report = actor.play(UniformEvaluator(), visits=4, ply_cap=40, model_id="m", generation=0, games=3,
                        finish_started=True)
    assert not actor.pending and actor._native.active_games == 0
    # the same games (same seed): the ones finished by the quota and the ones handed back, now all finished
    def number(game_id: str) -> int:  # game ids are <actor>-<run>-<number>
        return int(game_id.rsplit("-", 1)[1])

    numbers = {number(r.game_id) for r in report.records}
    assert len(numbers) == report.games
    assert numbers == {number(r.game_id) for r in partial.records} | {number(p.game_id) for p in handed_back.pending}


def test_selfplay_records_pass_the_schema(tmp_path) -> None:
    settings = ActorSettings(games_in_flight=8, seed=5, continuation_fraction=0.5)
    actor = SelfPlayActor(settings)
    report = actor.play(
        UniformEvaluator(),
        visits=8,
        ply_cap=30,
        model_id="m0",
        generation=2,
        games=6,
        shard_path=tmp_path / "s.parquet",
    )
    assert report.games >= 6
    frame = rec.read_shard(report.path)
    assert frame.height == report.games
    assert sum(report.terminations.values()) == report.games
    assert report.positions == sum(len(r.plies) for r in report.records)
    assert 0.0 <= report.non_decisive_rate <= 1.0
    assert report.searches > 0 and report.evaluations > 0 and report.mean_batch > 0
    for r in report.records:
        _replay_checks(r)
        assert r.generation == 2 and r.model_id == "m0" and r.visit_cap == 8
        assert len(r.prefix_moves) <= 8
        searched = [p for p in r.plies if not p.is_cap_search]
        assert [p.ply for p in searched] == list(range(len(searched)))
        assert all(p.visits >= 8 for p in r.plies)
        assert not any(p.is_tail_search for p in r.plies)  # the late tail is off by default
    assert len(report.unfinished) + report.games >= 8


def test_ply_cap_ends_with_a_cap_search() -> None:
    settings = ActorSettings(games_in_flight=4, seed=2, random_opening_max_plies=2)
    actor = SelfPlayActor(settings)
    report = actor.play(
        ScriptedEvaluator(_material, record=False),
        visits=12,
        ply_cap=10,
        model_id="m",
        generation=0,
        games=4,
    )
    capped = [r for r in report.records if r.termination == "ply_cap"]
    assert capped
    for r in capped:
        last = r.plies[-1]
        assert last.is_cap_search and last.ply == len(r.moves)
        assert len(r.prefix_moves) + len(r.moves) == 10
        assert r.cap_value == last.root_value
        assert last.visits >= 12 and sum(last.policy_counts) > 0
        assert r.result == "1/2-1/2"
        assert sum(p.is_cap_search for p in r.plies) == 1


QUEEN_UP = "rnb1kbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 2"  # black has no queen


def _queen_up_game(game_id: str, continuation: bool) -> PendingGame:
    return PendingGame(
        game_id=game_id,
        start_fen=QUEEN_UP,
        prefix_moves=[],
        moves=[],
        start_type="random",
        is_continuation=continuation,
    )


def test_resignation_needs_root_value_and_best_q_below_threshold() -> None:
    settings = ActorSettings(games_in_flight=1, seed=1, continuation_fraction=0.0)
    evaluator = ScriptedEvaluator(_material, record=False)
    report = SelfPlayActor(settings).play(
        evaluator,
        visits=16,
        ply_cap=40,
        resign_threshold=-0.5,
        model_id="m",
        generation=0,
        games=1,
        resume=[_queen_up_game("q1", continuation=False)],
    )
    (r,) = report.records
    assert r.game_id == "q1" and r.termination == "resignation"
    assert r.resigned_by == "black" and r.result == "1-0" and r.resign_threshold == -0.5
    assert r.plies[-1].root_value <= -0.5 and r.plies[-1].best_q <= -0.5
    probes = resign_probes(r)
    assert probes[-1].white_to_move is False
    cont = SelfPlayActor(settings).play(
        evaluator,
        visits=16,
        ply_cap=12,
        resign_threshold=-0.5,
        model_id="m",
        generation=0,
        games=1,
        resume=[_queen_up_game("q2", continuation=True)],
    )
    (c,) = cont.records
    assert c.is_continuation and c.termination != "resignation"
    assert any(p.root_value <= -0.5 for p in c.plies)  # it would have resigned


def test_unfinished_games_resume_from_their_exact_positions() -> None:
    first = SelfPlayActor(ActorSettings(games_in_flight=6, seed=9))
    report = first.play(
        UniformEvaluator(), visits=6, ply_cap=40, model_id="m", generation=0, games=1
    )
    handed = report.unfinished
    assert len(handed) >= 4 and all(p.plies or p.moves or p.prefix_moves for p in handed)
    restored = [PendingGame.from_dict(p.to_dict()) for p in handed]
    assert restored == handed

    native = _actor(num_games=len(handed))
    native.set_limits(visits=6, ply_cap=40)
    for p in restored:
        native.queue_resume(p.game(), len(p.prefix_moves), p.game_id, _core.StartKind.RANDOM, p.is_continuation)
    buf = np.zeros((len(handed), 52, 8, 8), np.float32)
    n = native.prepare_batch(buf)
    rows = native.describe_batch()
    assert n == len(handed)
    by_id = {p.game_id: p for p in handed}
    for row, (_slot, game_id, fen, moves) in enumerate(rows):
        p = by_id[game_id]
        assert fen == p.start_fen and moves == [*p.prefix_moves, *p.moves]
        np.testing.assert_array_equal(buf[row], p.game().encode())

    second = SelfPlayActor(ActorSettings(games_in_flight=len(handed), seed=10))
    done = second.play(
        UniformEvaluator(),
        visits=6,
        ply_cap=40,
        model_id="m",
        generation=1,
        games=len(handed),
        resume=handed,
    )
    resumed = {r.game_id: r for r in done.records if r.game_id in by_id}
    assert resumed
    for game_id, r in resumed.items():
        p = by_id[game_id]
        assert r.moves[: len(p.moves)] == p.moves and r.prefix_moves == p.prefix_moves
        assert r.plies[: len(p.plies)] == p.plies
        assert r.searches >= p.searches
    rec.records_to_frame(list(resumed.values()))  # the merged records pass the schema


def test_restart_archive_feeds_restart_starts() -> None:
    settings = ActorSettings(games_in_flight=4, seed=3, restart_fraction=1.0)
    actor = SelfPlayActor(settings)
    actor.play(
        ScriptedEvaluator(_material, record=False),
        visits=10,
        ply_cap=40,
        model_id="m",
        generation=0,
        games=4,
    )
    # these seeded games leave 22 eligible positions; an eligibility change that
    # empties the archive must fail here, not skip the restart path below
    assert len(actor.archive) > 0, "the restart archive stayed empty: eligibility changed?"
    report = actor.play(
        UniformEvaluator(), visits=6, ply_cap=60, model_id="m", generation=1, games=4
    )
    restarts = [r for r in report.records if r.start_type == "restart"]
    assert restarts
    for r in restarts:
        _replay_checks(r)


def test_actor_rejects_bad_parameters() -> None:
    with pytest.raises(ValueError):
        _core.Actor(_core.ActorOptions(num_games=0))
    with pytest.raises(ValueError):
        _core.ActorOptions(games=3)
    actor = _actor()
    with pytest.raises(ValueError):
        actor.set_limits(visits=0, ply_cap=10)
    with pytest.raises(ValueError):
        actor.set_limits(visits=10, ply_cap=0)
    with pytest.raises(ValueError):
        actor.set_limits(visits=10, ply_cap=10, resign_threshold=-3.0)
    with pytest.raises(ValueError):
        actor.queue_resume(core.Game(), 1, "x", _core.StartKind.RANDOM, False)  # prefix longer than the game
    with pytest.raises(ValueError):
        actor.queue_resume(core.Game("6k1/5ppp/8/8/8/8/5PPP/r5K1 w - - 0 1"), 0, "x", _core.StartKind.RANDOM, False)
    actor.set_limits(visits=4, ply_cap=10)
    with pytest.raises(ValueError):
        actor.prepare_batch(np.zeros((3, 52, 64), np.float32))
    with pytest.raises(ValueError):
        actor.submit_results(np.zeros((1, 1880), np.float32), np.zeros((1, 3), np.float32))
    buf = np.zeros((3, 52, 8, 8), np.float32)
    n = actor.prepare_batch(buf)
    with pytest.raises(ValueError):
        actor.drain()  # a batch is outstanding
    with pytest.raises(ValueError):
        actor.submit_results(np.zeros((n + 1, 1880), np.float32), np.zeros((n + 1, 3), np.float32))
    with pytest.raises(ValueError):
        SelfPlayActor(ActorSettings(games_in_flight=2)).play(
            UniformEvaluator(), visits=4, ply_cap=10, model_id="m", generation=0
        )
