"""Materialisation: real game records (played through the core) -> replay rows."""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from chesszero import core
from chesszero.replay import ReplayStore, convert_shard, unpack_legal
from chesszero.replay.layout import ENDING_MATE, ENDING_STALEMATE, ENDINGS_KNOWN
from chesszero.replay.materialize import (
    Materializer,
    ShardError,
    TargetOptions,
    materialize,
    target_options_from_config,
)
from chesszero.selfplay.records import GameRecord, SearchedPly, write_shard

START = core.STARTING_FEN


def searched(game: core.Game, ply: int, rng: np.random.Generator, *, cap: bool = False,
             root_value: float = 0.0, surprise: float = 0.5) -> SearchedPly:
    legal = np.asarray(game.legal_actions())
    k = min(len(legal), 5)
    ids = rng.choice(legal, size=k, replace=False)
    prior = rng.dirichlet(np.ones(len(legal)))[:k]
    return SearchedPly(ply=ply, policy_ids=[int(a) for a in ids],
                       policy_counts=[float(c) for c in rng.integers(1, 50, size=k)],
                       policy_prior=[float(q) for q in prior], policy_discarded=0.0, root_value=root_value, raw_value=0.0,
                       policy_surprise=surprise, best_q=root_value, visits=100,
                       is_cap_search=cap)


def record(game_id: str, prefix: list[str], moves: list[str], plies: list[SearchedPly], *,
           result: str, termination: str, generation: int = 3, **extra: object) -> GameRecord:
    return GameRecord(game_id=game_id, model_id=f"m{generation}", generation=generation,
                      start_type="random", start_fen=START, prefix_moves=prefix, moves=moves,
                      plies=plies, result=result, termination=termination,
                      searches=len(plies), **extra)  # type: ignore[arg-type]


def fools_mate(rng: np.random.Generator, game_id: str = "fool") -> GameRecord:
    """1. f3 (unsearched prefix) e5 2. g4 Qh4# : three searched positions, 0-1."""
    game = core.Game()
    game.push_uci("f2f3")
    moves = ["e7e5", "g2g4", "d8h4"]
    plies = []
    for p, (uci, value) in enumerate(zip(moves, [0.2, -0.6, 0.9], strict=True)):
        plies.append(searched(game, p, rng, root_value=value, surprise=0.1 * (p + 1)))
        game.push_uci(uci)
    assert game.outcome() is not None
    return record(game_id, ["f2f3"], moves, plies, result="0-1", termination="checkmate")


def random_moves(game: core.Game, n: int, rng: np.random.Generator) -> list[str]:
    out = []
    for _ in range(n):
        uci = str(rng.choice(game.legal_uci()))
        game.push_uci(uci)
        out.append(uci)
    return out


def capped_game(rng: np.random.Generator, game_id: str = "cap", cap_value: float = 0.3) -> GameRecord:
    game = core.Game()
    prefix = random_moves(game, 2, rng)
    plies, moves = [], []
    for p in range(8):
        plies.append(searched(game, p, rng, root_value=0.1))
        moves += random_moves(game, 1, rng)
    plies.append(searched(game, 8, rng, cap=True, root_value=cap_value))
    return record(game_id, prefix, moves, plies, result="1/2-1/2", termination="ply_cap",
                  cap_value=cap_value, ply_cap=10)


def resigned_game(rng: np.random.Generator, game_id: str = "resign") -> GameRecord:
    game = core.Game()
    plies, moves = [], []
    for p in range(6):
        plies.append(searched(game, p, rng))
        moves += random_moves(game, 1, rng)
    return record(game_id, [], moves, plies, result="1-0", termination="resignation",
                  resigned_by="black", resign_threshold=-0.9)


@pytest.fixture
def store(tmp_path: Path) -> ReplayStore:
    with ReplayStore.create(tmp_path / "replay.bin", capacity=512) as s:
        yield s


def test_fools_mate_rows_by_hand(tmp_path: Path, store: ReplayStore) -> None:
    rng = np.random.default_rng(0)
    rec = fools_mate(rng)
    shard = write_shard([rec], tmp_path / "a.parquet")
    report = materialize([shard], store, TargetOptions(beta=0.1), workers=0)
    assert (report.shards, report.games, report.rows, report.total_appended) == (1, 1, 3, 3)
    rows = store.read_valid()
    # positions: after 1.f3 (Black), after 1...e5 (White), after 2.g4 (Black); 0-1 by mate
    d = 0.998 ** np.array([3, 2, 1])
    won = np.array([True, False, True])
    onehot = np.where(won[:, None], [1.0, 0, 0], [0, 0, 1.0])
    z = d[:, None] * onehot + (1 - d[:, None]) / 3
    v = np.array([0.2, -0.6, 0.9])
    r = 1 - np.abs(v)
    wdl_v = np.stack([np.maximum(v, 0) + r / 3, r / 3, np.maximum(-v, 0) + r / 3], axis=1)
    np.testing.assert_allclose(rows.wdl, 0.9 * z + 0.1 * wdl_v, atol=1e-6)
    np.testing.assert_allclose(rows.root_value, v, atol=1e-6)
    np.testing.assert_allclose(rows.surprise, [0.1, 0.2, 0.3], atol=1e-6)
    np.testing.assert_allclose(rows.length, np.array([3, 2, 1]) / 400)
    assert rows.length_mask.all()
    assert rows.next_mask.tolist() == [True, True, False]
    assert rows.ply.tolist() == [1, 2, 3]  # counted from the start position
    assert rows.generation.tolist() == [3, 3, 3]
    assert rows.timestamp[0] == pytest.approx(shard.stat().st_mtime)
    game = core.Game()
    game.push_uci("f2f3")
    for j, ply in enumerate(rec.plies):
        np.testing.assert_array_equal(rows.planes[j], game.encode_packed())
        np.testing.assert_array_equal(unpack_legal(rows.legal[j]), game.legal_mask())
        k = len(ply.policy_ids)
        assert rows.policy_ids[j, :k].tolist() == ply.policy_ids
        assert (rows.policy_ids[j, k:] == -1).all()
        counts = np.array(ply.policy_counts)
        np.testing.assert_allclose(rows.policy_probs[j, :k], counts / counts.sum(), atol=1e-6)
        if j < 2:  # next-policy label = the next searched position's own policy
            assert rows.next_ids[j].tolist() == rows.policy_ids[j + 1].tolist()
            np.testing.assert_array_equal(rows.next_probs[j], rows.policy_probs[j + 1])
        game.push_uci(rec.moves[j])
    assert (rows.next_ids[2] == -1).all() and (rows.next_probs[2] == 0).all()
    # only the last position (after 2.g4) has a mate in one (2...Qh4#); none stalemates
    assert rows.endings.tolist() == [ENDINGS_KNOWN, ENDINGS_KNOWN, ENDINGS_KNOWN | ENDING_MATE]


def _one_move_game(fen: str, move: str, result: str, termination: str, game_id: str) -> GameRecord:
    game = core.Game(fen)
    ply = searched(game, 0, np.random.default_rng(1))
    return GameRecord(game_id=game_id, model_id="m3", generation=3, start_type="odds", start_fen=fen,
                      prefix_moves=[], moves=[move], plies=[ply], result=result,
                      termination=termination, searches=1)


def test_rows_flag_the_positions_with_a_mating_or_a_stalemating_move(tmp_path: Path) -> None:
    """``endings``: Qg7# and the stalemating Qg6 in one position, the stalemating
    Bc4 (no mate with king, bishop and a blocked pawn) in another, set by
    replaying every legal move of each searched position."""
    both = _one_move_game("7k/8/5K2/8/8/8/8/6Q1 w - - 0 1", "g1g7", "1-0", "checkmate", "both")
    stale = _one_move_game("7k/8/6K1/8/8/8/P3B3/8 w - - 0 1", "e2c4", "1/2-1/2", "stalemate", "stale")
    rows = convert_shard(write_shard([both, stale], tmp_path / "e.parquet"))
    assert rows["endings"].tolist() == [ENDINGS_KNOWN | ENDING_MATE | ENDING_STALEMATE,
                                        ENDINGS_KNOWN | ENDING_STALEMATE]
    game = core.Game("7k/8/6K1/8/8/8/P3B3/8 w - - 0 1")
    mates, stalemates = game.ending_actions()
    assert mates == [] and [game.uci_of(a) for a in stalemates] == ["e2c4"]
    assert game.fen() == "7k/8/6K1/8/8/8/P3B3/8 w - - 0 1"  # left as it was
    game = core.Game("7k/8/5K2/8/8/8/8/6Q1 w - - 0 1")
    mates, stalemates = game.ending_actions()
    assert "g1g7" in {game.uci_of(a) for a in mates} and "g1g6" in {game.uci_of(a) for a in stalemates}


def test_capped_game_uses_cap_value_and_drops_length(tmp_path: Path, store: ReplayStore) -> None:
    rng = np.random.default_rng(1)
    rec = capped_game(rng, cap_value=0.3)
    materialize([write_shard([rec], tmp_path / "c.parquet")], store, TargetOptions(beta=0.0),
                workers=0)
    rows = store.read_valid()
    assert len(rows) == 9
    assert not rows.length_mask.any() and (rows.length == 0).all()
    rem = 8 - np.arange(9)
    v = np.where(rem % 2 == 0, 0.3, -0.3)  # cut position's side to move has +0.3
    r = 1 - np.abs(v)
    raw = np.stack([np.maximum(v, 0) + r / 3, r / 3, np.maximum(-v, 0) + r / 3], axis=1)
    d = (0.998 ** rem)[:, None]
    np.testing.assert_allclose(rows.wdl, d * raw + (1 - d) / 3, atol=1e-6)
    np.testing.assert_allclose(rows.wdl[-1], [0.3 + 0.7 / 3, 0.7 / 3, 0.7 / 3], atol=1e-6)
    assert rows.next_mask.tolist() == [True] * 8 + [False]
    assert rows.next_ids[7].tolist() == rows.policy_ids[8].tolist()  # the cap search's policy


def test_resigned_game_and_discarded_mass(tmp_path: Path, store: ReplayStore) -> None:
    rng = np.random.default_rng(2)
    rec = resigned_game(rng)
    first = rec.plies[0]
    plies = [SearchedPly(**{**{f: getattr(first, f) for f in first.__slots__},
                            "policy_discarded": 10.0})] + rec.plies[1:]
    rec = record("resign", [], rec.moves, plies, result="1-0", termination="resignation",
                 resigned_by="black", resign_threshold=-0.9)
    materialize([write_shard([rec], tmp_path / "r.parquet")], store, workers=0)
    rows = store.read_valid()
    white_to_move = np.arange(6) % 2 == 0
    assert (rows.wdl[white_to_move].argmax(axis=1) == 0).all()   # White won
    assert (rows.wdl[~white_to_move].argmax(axis=1) == 2).all()
    total = sum(first.policy_counts)
    assert rows.policy_discarded[0] == pytest.approx(10.0 / (total + 10.0))
    assert (rows.policy_discarded[1:] == 0).all()
    assert rows.length_mask.all()


def _bad_frame(tmp_path: Path, name: str, rec: GameRecord, **changes: object) -> Path:
    """Write a shard with some columns changed, bypassing ``write_shard``'s validation."""
    from chesszero.selfplay.records import RECORD_DTYPES, records_to_frame

    row = {**records_to_frame([rec]).to_dicts()[0], **changes}
    path = tmp_path / name
    pl.DataFrame([row], schema=RECORD_DTYPES).write_parquet(path)
    return path


def test_bad_shards_are_rejected_by_name_without_touching_the_store(
        tmp_path: Path, store: ReplayStore) -> None:
    rng = np.random.default_rng(3)
    good = write_shard([fools_mate(rng, "g1")], tmp_path / "good.parquet")
    materialize([good], store, workers=0)
    before = store.path.read_bytes()

    garbage = tmp_path / "garbage.parquet"
    garbage.write_bytes(b"PAR1 this is not parquet")
    missing = tmp_path / "missing.parquet"
    schema = _bad_frame(tmp_path, "schema.parquet", fools_mate(rng, "g2"), root_value=[0.2, 2.0, 0.1])
    illegal = _bad_frame(tmp_path, "illegal.parquet", fools_mate(rng, "g3"),
                         moves=["e7e5", "g2g4", "d8h5"])
    not_mate = _bad_frame(tmp_path, "notmate.parquet", fools_mate(rng, "g4"),
                          moves=["e7e5", "g2g4", "d8g5"])
    rec = fools_mate(rng, "g5")
    ids = [list(p.policy_ids) for p in rec.plies]
    ids[1][0] = 0  # action 0 (a1 -> a2) is not legal at the start of a game
    bad_policy = _bad_frame(tmp_path, "policy.parquet", rec, policy_ids=ids)
    cases = {garbage: "parquet", missing: "(FileNotFound|No such file)", schema: "root_value",
             illegal: "d8h5", not_mate: "no game end", bad_policy: "not legal"}
    for path, why in cases.items():
        with pytest.raises(ShardError, match=rf"{path}: .*{why}"):
            materialize([good, path], store, workers=0)
    assert store.total_appended == 3
    assert store.path.read_bytes() == before

    report = materialize([good, garbage, schema], store, workers=0, errors="skip")
    assert report.shards == 1 and report.rows == 3 and store.total_appended == 6
    assert [p for p, _ in report.rejected] == [str(garbage), str(schema)]


def test_worker_processes_match_in_process(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    shards = [write_shard([fools_mate(rng, f"f{i}"), capped_game(rng, f"c{i}"),
                           resigned_game(rng, f"r{i}")], tmp_path / f"s{i}.parquet")
              for i in range(4)]
    options = TargetOptions(beta=0.05)
    with ReplayStore.create(tmp_path / "a.bin", capacity=256) as a, \
            ReplayStore.create(tmp_path / "b.bin", capacity=256) as b:
        materialize(shards, a, options, workers=0)
        with Materializer(options, workers=2) as mat:
            report = mat.run(shards, b)
            assert report.rows == 4 * (3 + 9 + 6) and report.games == 12
            with pytest.raises(ShardError, match="nope.parquet"):
                mat.run([tmp_path / "nope.parquet"], b)
        ra, rb = a.read_valid(), b.read_valid()
        for name in ("planes", "legal", "policy_ids", "policy_probs", "wdl", "next_ids",
                     "length", "surprise", "seq"):
            np.testing.assert_array_equal(getattr(ra, name), getattr(rb, name), err_msg=name)


def test_convert_shard_is_validated_deterministic_and_appends_nothing(
        tmp_path: Path, store: ReplayStore) -> None:
    rng = np.random.default_rng(5)
    shard = write_shard([fools_mate(rng, "a"), capped_game(rng, "b")], tmp_path / "s.parquet")
    options = TargetOptions(beta=0.05)
    rows = convert_shard(shard, options, generation=3)
    assert len(rows) == 3 + 9 and store.total_appended == 0
    again = convert_shard(shard, options)
    assert rows.tobytes() == again.tobytes()  # a re-conversion after a crash gives the same rows
    with pytest.raises(ShardError, match=rf"{shard}: .*generation 3.*as generation 4"):
        convert_shard(shard, options, generation=4)
    with pytest.raises(ShardError, match="nope.parquet"):
        convert_shard(tmp_path / "nope.parquet", options)
    # the rows are the ones ``Materializer.run`` appends
    materialize([shard], store, options, workers=0)
    stored = store.read_valid()
    for name in ("planes", "legal", "policy_ids", "policy_probs", "wdl", "length", "surprise"):
        np.testing.assert_array_equal(getattr(stored, name), rows[name], err_msg=name)


class _Crash(Exception):
    pass


def test_per_shard_ingest_is_exactly_once_across_crashes(tmp_path: Path) -> None:
    """The journal protocol of ``convert_shard``: crash before, during or after
    the append, resume, and every shard's rows are in the store exactly once."""
    rng = np.random.default_rng(6)
    shards = [write_shard([fools_mate(rng, f"f{i}"), resigned_game(rng, f"r{i}")],
                          tmp_path / f"s{i}.parquet") for i in range(4)]
    options = TargetOptions()
    path = tmp_path / "replay.bin"
    ReplayStore.create(path, capacity=64, logical_capacity=64).close()
    journal: dict[str, object] = {"done": [], "pending": None}

    def ingest(crash_at: str | None) -> None:
        with ReplayStore.open(path) as store:
            pending = journal["pending"]
            if pending is not None:  # resume an interrupted shard
                shard, before = pending  # type: ignore[misc]
                rows = convert_shard(shard, options)
                if store.total_appended == before:
                    store.append(rows)
                assert store.total_appended == before + len(rows)
                journal["done"].append(shard)  # type: ignore[attr-defined]
                journal["pending"] = None
            for shard in shards:
                if shard in journal["done"]:  # type: ignore[operator]
                    continue
                journal["pending"] = (shard, store.total_appended)
                rows = convert_shard(shard, options)
                if crash_at == "before":
                    raise _Crash
                if crash_at == "during":  # die after the eviction/first flush
                    def die(start: int, stop: int) -> None:
                        raise _Crash
                    store._flush = die  # type: ignore[method-assign]
                store.append(rows)
                if crash_at == "after":
                    raise _Crash
                journal["done"].append(shard)  # type: ignore[attr-defined]
                journal["pending"] = None

    for crash_at in ("after", "during", "before", "after", None):
        with contextlib.suppress(_Crash):
            ingest(crash_at)
    assert journal == {"done": shards, "pending": None}
    with ReplayStore.open(path, readonly=True) as store:
        stored = store.read_valid()
    expect = np.concatenate([convert_shard(s, options) for s in shards])
    assert store.total_appended == len(expect) == 4 * (3 + 6)
    np.testing.assert_array_equal(stored.planes, expect["planes"])
    np.testing.assert_array_equal(stored.policy_probs, expect["policy_probs"])


def test_options_from_config() -> None:
    from chesszero.config.loader import load_config

    cfg = load_config("params.yaml", "smoke")
    options = target_options_from_config(cfg.replay, generation=2)
    assert options.beta == pytest.approx(cfg.replay.value_blend.at(2))
    assert options.outcome_discount == cfg.replay.outcome_discount
    with pytest.raises(ValueError, match="beta"):
        TargetOptions(beta=2.0)
