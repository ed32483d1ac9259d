"""Mate recall on replay positions (chesszero.evaluate.mate_recall), checked
against python-chess on hand-built shards."""

from __future__ import annotations

import math

import chess
import numpy as np
import pytest

from chesszero import core
from chesszero.evaluate.mate_recall import (
    mate_positions,
    mate_recall,
    scan_replay,
    shard_paths,
    target_agreement,
)
from chesszero.selfplay.records import GameRecord, SearchedPly, write_shard

START = chess.STARTING_FEN
SCHOLAR = ["e2e4", "e7e5", "f1c4", "b8c6", "d1h5", "g8f6", "h5f7"]  # 4. Qxf7# at ply 6


def _ply(game: core.Game, ply: int, pick: str, *, tail: bool = False) -> SearchedPly:
    """A searched ply whose target puts 3/4 of its weight on ``pick``."""
    other = next(u for u in game.legal_uci() if u != pick)
    return SearchedPly(ply=ply, policy_ids=[game.action_of(pick), game.action_of(other)],
                       policy_counts=[3.0, 1.0], policy_prior=[0.5, 0.5], policy_discarded=0.0,
                       root_value=0.0, raw_value=0.0, policy_surprise=0.1, best_q=0.0, visits=4.0,
                       is_tail_search=tail)


def _record(gid: str, picks: dict[int, str], *, tail_at: int | None = None) -> GameRecord:
    game = core.Game(START)
    plies = []
    for p, uci in enumerate(SCHOLAR):
        if p in picks:
            plies.append(_ply(game, p, picks[p], tail=p == tail_at))
        game.push_uci(uci)
    return GameRecord(game_id=gid, model_id="m", generation=3, start_type="random", start_fen=START,
                      prefix_moves=[], moves=list(SCHOLAR), plies=plies, result="1-0",
                      termination="checkmate", searches=len(plies))


def _mate_game() -> core.Game:
    game = core.Game(START)
    for uci in SCHOLAR[:6]:
        game.push_uci(uci)
    return game


def _legal_count() -> int:
    board = chess.Board()
    for uci in SCHOLAR[:6]:
        board.push_uci(uci)
    return board.legal_moves.count()


@pytest.fixture()
def run_dir(tmp_path):
    shards = tmp_path / "shards"
    # game a: every ply searched, the target takes the mate at ply 6
    write_shard([_record("a", {p: u for p, u in enumerate(SCHOLAR)})], shards / "gen_0003" / "a.parquet")
    # game b: plies 4 and 6 searched; at ply 6 the target prefers another move
    write_shard([_record("b", {4: "d1h5", 6: "c4f7"})], shards / "gen_0004" / "b.parquet")
    # game c: the mate position is a late-tail search (never a replay row)
    write_shard([_record("c", {5: "g8f6", 6: "h5f7"}, tail_at=6)], shards / "gen_0005" / "c.parquet")
    return tmp_path


def test_positions_match_python_chess(run_dir):
    rows, found = mate_positions(shard_paths(run_dir, 3, 5))
    assert rows == 7 + 2 + 1  # the tail search is not a row
    assert len(found) == 2
    game = _mate_game()
    for pos in found:
        assert pos.mates == frozenset({game.action_of("h5f7")})
        np.testing.assert_array_equal(pos.planes, game.encode())  # history planes included
        assert not np.array_equal(pos.planes, core.Game(pos.fen).encode())  # a bare FEN loses them
    assert [pos.target_top in pos.mates for pos in found] == [True, False]
    assert [pos.target_mass for pos in found] == [0.75, 0.0]


def test_recall_counts_top_move_and_mass(run_dir):
    rows, found = mate_positions(shard_paths(run_dir, 3, 5))
    legal_count = _legal_count()
    mate = _mate_game().action_of("h5f7")

    def favour(action: int):
        def policy(planes: np.ndarray) -> np.ndarray:
            logits = np.zeros((len(planes), int(core.NUM_ACTIONS)), dtype=np.float32)
            logits[:, action] = 2.0
            return logits
        return policy

    hit = mate_recall(rows, found, favour(mate), batch=1)
    assert (hit.rows, hit.positions, hit.target_top_mates, hit.top_mates) == (10, 2, 1, 2)
    expected = math.exp(2.0) / (math.exp(2.0) + legal_count - 1)
    assert hit.mass_median == pytest.approx(expected) and hit.mass_mean == pytest.approx(expected)
    miss = mate_recall(rows, found, favour(_mate_game().action_of("c4f7")))
    assert miss.top_mates == 0
    assert miss.mass_mean == pytest.approx(1.0 / (math.exp(2.0) + legal_count - 1))
    assert "2 of 10 searched positions" in hit.line()


def test_bad_inputs_are_named(run_dir, tmp_path):
    with pytest.raises(ValueError, match="no shards/ folder"):
        shard_paths(tmp_path / "nowhere", 0, 1)
    with pytest.raises(ValueError, match="no shards for generations 7..9"):
        shard_paths(run_dir, 7, 9)
    with pytest.raises(ValueError, match="first <= last"):
        shard_paths(run_dir, 5, 3)
    rows, found = mate_positions(shard_paths(run_dir, 3, 3))
    with pytest.raises(ValueError, match="expected \\(1, 1880\\)"):
        mate_recall(rows, found, lambda planes: np.zeros((len(planes), 5)))
    empty = mate_recall(0, [], lambda planes: planes)
    assert empty.positions == 0 and empty.mass_median is None and "none with a mate" in empty.line()


def test_target_agreement_on_a_seeded_sample(run_dir):
    paths = shard_paths(run_dir, 3, 5)
    everything = scan_replay(paths, sample_fraction=1.0)
    assert len(everything.sample) == everything.rows == 10
    half = [p.fen for p in scan_replay(paths, sample_fraction=0.5, seed=3).sample]
    assert half == [p.fen for p in scan_replay(paths, sample_fraction=0.5, seed=3).sample]
    assert 0 < len(half) < 10
    assert not scan_replay(paths).sample

    # a policy that plays game a's moves wherever it sees one of game a's positions
    played_in_a = {}
    game = core.Game(START)
    for uci in SCHOLAR:
        played_in_a[game.encode().tobytes()] = game.action_of(uci)
        game.push_uci(uci)

    def policy(planes: np.ndarray) -> np.ndarray:
        logits = np.zeros((len(planes), int(core.NUM_ACTIONS)), dtype=np.float32)
        for k, p in enumerate(planes):
            logits[k, played_in_a[p.tobytes()]] = 3.0
        return logits

    # game a: 7 of 7 agree; game b: ply 4 agrees, ply 6 (target c4f7) does not; game c: ply 5 agrees
    result = target_agreement(everything.sample, policy, batch=4)
    assert (result.positions, result.agree) == (10, 9)
    assert "9 of 10" in result.line()
    with pytest.raises(ValueError, match="sample_fraction"):
        scan_replay(paths, sample_fraction=1.5)


def test_script_scores_final_and_control_artifacts(run_dir, tmp_path, capsys):
    import json
    import sys
    from pathlib import Path

    import torch

    from chesszero.model.network import ChessNet
    from chesszero.publish import Provenance, export_onnx, fold_network

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reports"))
    from mate_recall import main

    torch.manual_seed(0)
    for folder in ("gen_0002", "gen_0004", "gen_0009", "initial"):
        (run_dir / "artifacts" / folder).mkdir(parents=True)
        export_onnx(fold_network(ChessNet("2x16", aux_heads=False)), run_dir / "artifacts" / folder / "int8.onnx",
                    Provenance("0" * 64, "0" * 64, 0))
    out = tmp_path / "recall.json"
    assert main([str(run_dir), "3", "5", "--sample", "1.0", "--json", str(out)]) == 0
    saved = json.loads(out.read_text())
    assert saved["models"]["final"].endswith("gen_0004/int8.onnx")  # the newest up to generation 5
    assert saved["models"]["control"].endswith("initial/int8.onnx")
    for arm in ("final", "control"):
        assert saved[arm]["mate_recall"]["positions"] == 2 and saved[arm]["target_agreement"]["positions"] == 10
    assert "2 of 10 searched positions hold a mate in one" in capsys.readouterr().out
    assert main([str(run_dir), "3", "5", "--model", str(tmp_path / "missing.onnx"), "--no-control"]) == 2
    assert "missing.onnx" in capsys.readouterr().err


def test_corrupt_shard_and_wrong_model_file_are_named(run_dir, tmp_path):
    from chesszero.evaluate.mate_recall import onnx_policy

    bad = run_dir / "shards" / "gen_0004" / "b.parquet"
    original = bad.read_bytes()
    bad.write_bytes(original[: len(original) // 2])
    with pytest.raises(ValueError, match="b.parquet: not a readable self-play shard"):
        scan_replay(shard_paths(run_dir, 3, 5))
    assert bad.stat().st_size == len(original) // 2  # read only, nothing moved or rewritten
    text = tmp_path / "model.onnx"
    text.write_text("not a model")
    with pytest.raises(ValueError, match="model.onnx: not a loadable ONNX network"):
        onnx_policy(text)


def test_stalemate_positions_and_risk(tmp_path):
    from chesszero.evaluate.mate_recall import stalemate_risk

    fen = "k7/3Q4/1K6/8/8/8/8/8 w - - 0 1"  # Qd8 mates, Qc7 and Qd6 stalemate
    board = chess.Board(fen)
    expected, mates = set(), set()
    for move in board.legal_moves:
        board.push(move)
        if board.is_stalemate():
            expected.add(move.uci())
        if board.is_checkmate():
            mates.add(move.uci())
        board.pop()
    assert expected == {"d7c7", "d7d6"}
    game = core.Game(fen)
    record = GameRecord(game_id="s", model_id="m", generation=0, start_type="random", start_fen=fen,
                        prefix_moves=[], moves=["d7d8"], plies=[_ply(game, 0, "d7c7")], result="1-0",
                        termination="checkmate", searches=1)
    write_shard([record], tmp_path / "shards" / "gen_0000" / "s.parquet")
    scan = scan_replay(shard_paths(tmp_path, 0, 0))
    assert scan.rows == 1 and len(scan.mates) == 1 and len(scan.stalemates) == 1
    pos = scan.stalemates[0]
    assert pos.stalemates == frozenset(game.action_of(u) for u in expected) and pos.target_mass == 0.75
    assert "d7d8" in mates and scan.mates[0].mates == frozenset(game.action_of(u) for u in mates)

    def favour(uci: str):
        def policy(planes: np.ndarray) -> np.ndarray:
            logits = np.zeros((len(planes), int(core.NUM_ACTIONS)), dtype=np.float32)
            logits[:, game.action_of(uci)] = 2.0
            return logits
        return policy

    n = board.legal_moves.count()
    risky = stalemate_risk(scan.rows, scan.stalemates, favour("d7c7"))
    assert (risky.positions, risky.target_top_stalemates, risky.top_stalemates) == (1, 1, 1)
    assert risky.target_mass_mean == 0.75
    assert risky.mass_mean == pytest.approx((math.exp(2.0) + 1) / (math.exp(2.0) + n - 1))
    safe = stalemate_risk(scan.rows, scan.stalemates, favour("d7d8"))
    assert safe.top_stalemates == 0 and safe.mass_mean == pytest.approx(2.0 / (math.exp(2.0) + n - 1))
    assert "1 of 1 searched positions have a stalemating move" in risky.line()
    assert "none with a stalemating move" in stalemate_risk(3, [], favour("d7d8")).line()
