"""Value probe: Stockfish labels, material reference, measures, PGN positions, the report script."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import chess
import chess.pgn
import numpy as np
import pytest

from chesszero import core
from chesszero.evaluate.players import STOCKFISH_PATH
from chesszero.evaluate.value_probe import (
    MATE_CP,
    LabelledPosition,
    ProbePosition,
    expected_score,
    label_positions,
    material_value,
    onnx_value,
    pgn_positions,
    value_fit,
)

needs_stockfish = pytest.mark.skipif(shutil.which(STOCKFISH_PATH) is None, reason="Stockfish not installed")

QUEEN_UP = "4k3/8/8/8/8/8/3Q4/4K3 w - - 0 1"  # White a queen up
MATE_IN_ONE = "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"  # Ra8#


def _probe(fen: str) -> ProbePosition:
    return ProbePosition(fen, core.Game(fen).encode())


def _labelled(cps: list[int], materials: list[int] | None = None) -> list[LabelledPosition]:
    planes = np.zeros((52, 8, 8), np.float32)
    materials = materials or [0] * len(cps)
    return [LabelledPosition("8/8/8/8/8/8/8/8 w - - 0 1", planes, cp, m) for cp, m in zip(cps, materials, strict=True)]


def test_expected_score_is_logistic_and_symmetric():
    got = expected_score([0, 400, -400, MATE_CP, -MATE_CP])
    assert got[0] == 0.0
    assert got[1] == pytest.approx(2 / 1.1 - 1) and got[2] == pytest.approx(-got[1])
    assert 0.99 < got[3] < 1.0 and got[4] == pytest.approx(-got[3])  # mates clipped, not exactly 1


def test_value_fit_by_hand():
    positions = _labelled([-900, -300, -50, 100, 250, MATE_CP])
    perfect = value_fit("mono", positions, np.array([-0.9, -0.5, -0.1, 0.0, 0.3, 1.0]))
    assert perfect.spearman == pytest.approx(1.0)
    assert perfect.decided == 4  # |cp| >= 200: -900, -300, 250, mate
    assert perfect.sign_agreement == 1.0
    reverse = value_fit("rev", positions, np.array([0.9, 0.5, 0.1, 0.0, -0.3, -1.0]))
    assert reverse.spearman == pytest.approx(-1.0) and reverse.sign_agreement == 0.0
    # a zero on a decided position counts half: signs right on -900 and the mate, 0 on -300, wrong on 250
    mixed = value_fit("mixed", positions, np.array([-0.5, 0.0, 0.2, 0.2, -0.2, 0.5]))
    assert mixed.sign_agreement == pytest.approx((1 + 0.5 + 0 + 1) / 4)
    expected = expected_score([p.sf_cp for p in positions])
    assert mixed.mae == pytest.approx(float(np.mean(np.abs(np.array([-0.5, 0.0, 0.2, 0.2, -0.2, 0.5]) - expected))))
    assert "Spearman" in mixed.line() and "of 4 decided positions" in mixed.line()


def test_value_fit_refuses_bad_values():
    positions = _labelled([100, -100, 300])
    with pytest.raises(ValueError, match="net: 2 values for 3 positions"):
        value_fit("net", positions, np.zeros(2))
    with pytest.raises(ValueError, match="net: values must be finite and lie in"):
        value_fit("net", positions, np.array([0.0, 1.5, 0.0]))
    with pytest.raises(ValueError, match="must be finite"):
        value_fit("net", positions, np.array([0.0, np.nan, 0.0]))
    with pytest.raises(ValueError, match="decided_cp must be >= 0"):
        value_fit("net", positions, np.zeros(3), decided_cp=-1)
    constant = value_fit("flat", positions, np.zeros(3))
    assert constant.spearman is None  # no ranking from a constant value
    assert value_fit("none", [], np.zeros(0)).line() == "none: no positions"


def test_material_value_is_the_assist_form():
    positions = _labelled([0, 0, 0], materials=[0, 9, -5])
    assert np.allclose(material_value(5.0)(positions), np.tanh(np.array([0, 9, -5]) / 5.0))
    with pytest.raises(ValueError, match="scale must be > 0"):
        material_value(0.0)


@needs_stockfish
def test_stockfish_labels_are_from_the_side_to_move():
    black_to_move = QUEEN_UP.replace(" w ", " b ")
    over = "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1"  # stalemate: no move to search, skipped
    labelled = label_positions([_probe(QUEEN_UP), _probe(black_to_move), _probe(MATE_IN_ONE), _probe(over)],
                               depth=6)
    assert [p.fen.split()[1] for p in labelled] == ["w", "b", "w"]
    assert labelled[0].sf_cp > 500 and labelled[0].material == 9
    assert labelled[1].sf_cp < -500 and labelled[1].material == -9
    assert labelled[2].sf_cp > MATE_CP - 10 and labelled[2].material == 2  # rook against three pawns


def test_label_positions_bad_inputs(tmp_path):
    with pytest.raises(ValueError, match="depth must lie in 1..40"):
        label_positions([], depth=0)
    with pytest.raises(ValueError, match="nowhere/stockfish: no Stockfish binary"):
        label_positions([], path=str(tmp_path / "nowhere" / "stockfish"))


def _write_pgn(path: Path) -> None:
    games = [("us", "them", "e2e4 e7e5 g1f3 b8c6 f1c4"), ("them", "us", "d2d4 d7d5 c2c4"),
             ("a", "b", "e2e4 c7c5")]
    text = []
    for white, black, moves in games:
        board = chess.Board()
        for uci in moves.split():
            board.push_uci(uci)
        game = chess.pgn.Game.from_board(board)
        game.headers["White"], game.headers["Black"] = white, black
        text.append(str(game))
    path.write_text("\n\n".join(text) + "\n")


def test_pgn_positions_are_the_players_turns_with_history(tmp_path):
    pgn = tmp_path / "games.pgn"
    _write_pgn(pgn)
    positions = pgn_positions([pgn], "us")
    # game 1 as White: before plies 0, 2, 4; game 2 as Black: before plies 1 (none after ply 3)
    boards = []
    for moves, plies in (("e2e4 e7e5 g1f3 b8c6 f1c4", (0, 2, 4)), ("d2d4 d7d5 c2c4", (1,))):
        board, game = chess.Board(), core.Game(chess.STARTING_FEN)
        for ply, uci in enumerate(moves.split()):
            if ply in plies:
                boards.append((board.fen(), game.encode()))
            board.push_uci(uci)
            game.push_uci(uci)
    assert [p.fen for p in positions] == [fen for fen, _ in boards]
    for got, (_, planes) in zip(positions, boards, strict=True):
        assert np.array_equal(got.planes, planes)  # the history planes, not the FEN alone
    assert [p.fen for p in pgn_positions([pgn], "us", skip_plies=2)] == [fen for fen, _ in boards[1:3]]
    assert pgn_positions([pgn], "nobody") == []
    assert len(pgn_positions([pgn], "us", sample_fraction=0.0)) == 0


def test_pgn_positions_bad_inputs_are_named(tmp_path):
    with pytest.raises(ValueError, match="missing.pgn: cannot read the PGN file"):
        pgn_positions([tmp_path / "missing.pgn"], "us")
    bad = tmp_path / "bad.pgn"
    bad.write_text('[White "us"]\n[Black "them"]\n\n1. e4 e5 2. Ke3 *\n')
    with pytest.raises(ValueError, match="bad.pgn: game 1"):
        pgn_positions([bad], "us")
    assert bad.read_text().startswith('[White "us"]')  # read only
    with pytest.raises(ValueError, match="sample_fraction must lie in"):
        pgn_positions([bad], "us", sample_fraction=2.0)


def _export(path: Path) -> None:
    import torch

    from chesszero.model.network import ChessNet
    from chesszero.publish import Provenance, export_onnx, fold_network

    torch.manual_seed(0)
    path.parent.mkdir(parents=True, exist_ok=True)
    export_onnx(fold_network(ChessNet("2x16", aux_heads=False)), path, Provenance("0" * 64, "0" * 64, 0))


def test_onnx_value_is_w_minus_l(tmp_path):
    from chesszero.search.evaluators import OnnxEvaluator

    model = tmp_path / "net.onnx"
    _export(model)
    positions = [_probe(QUEEN_UP), _probe(MATE_IN_ONE), _probe(chess.STARTING_FEN)]
    labelled = [LabelledPosition(p.fen, p.planes, 0, 0) for p in positions]
    got = onnx_value(model, batch=2)(labelled)
    wdl = OnnxEvaluator(model).evaluate(np.stack([p.planes for p in positions]))[1]
    assert np.allclose(got, wdl[:, 0] - wdl[:, 2], atol=1e-6)
    text = tmp_path / "model.onnx"
    text.write_text("not a model")
    with pytest.raises(ValueError, match="model.onnx: not a loadable ONNX network"):
        onnx_value(text)


@needs_stockfish
def test_script_scores_material_control_and_generations(tmp_path, capsys):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reports"))
    from value_probe import main

    run = tmp_path / "run"
    for folder in ("gen_0003", "gen_0007", "initial"):
        _export(run / "artifacts" / folder / "int8.onnx")
    pgn = tmp_path / "games.pgn"
    _write_pgn(pgn)
    out = tmp_path / "probe.json"
    assert main([str(run), "--pgn", str(pgn), "--player", "us", "--sample", "1.0", "--depth", "4",
                 "--generations", "5", "--json", str(out)]) == 0
    saved = json.loads(out.read_text())
    assert saved["models"]["gen_0003"].endswith("gen_0003/int8.onnx")  # the newest at or before 5
    assert [f["name"] for f in saved["fits"]] == ["material tanh(pawns / 5)", "initial (control)", "gen_0003"]
    assert all(f["positions"] == 4 for f in saved["fits"])
    printed = capsys.readouterr()
    assert "4 positions, Stockfish depth 4" in printed.out
    assert "━" not in printed.out  # the progress bar goes to stderr, the measures to stdout
    assert main([str(run), "--pgn", str(pgn), "--player", "nobody"]) == 2
    assert "no positions to probe" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([str(run), "--pgn", str(pgn)])  # --player missing
    with pytest.raises(SystemExit):
        main([str(run), "--pgn", str(pgn), "--player", "us", "--outcomes"])  # outcomes need --shards


def _shard_game(gid: str, fen: str, moves: list[str], searched: list[int], result: str, termination: str,
                tail: int | None = None):
    from chesszero.selfplay.records import GameRecord, SearchedPly

    game, plies = core.Game(fen), []
    for p in range(len(moves) + 1):
        if p in searched:
            legal = game.legal_uci()
            plies.append(SearchedPly(ply=p, policy_ids=[game.action_of(legal[0])], policy_counts=[1.0],
                                     policy_prior=[1.0], policy_discarded=0.0, root_value=0.0, raw_value=0.0,
                                     policy_surprise=0.0, best_q=0.0, visits=1.0, is_tail_search=p == tail))
        if p < len(moves):
            game.push_uci(moves[p])
    return GameRecord(game_id=gid, model_id="m", generation=1, start_type="random", start_fen=fen, prefix_moves=[],
                      moves=moves, plies=plies, result=result, termination=termination, searches=len(plies))


def test_outcomes_by_lead_counts_each_row_from_the_side_to_move(tmp_path):
    from chesszero.evaluate.value_probe import outcomes_by_lead
    from chesszero.selfplay.records import write_shard

    # White a queen up; White to move at plies 0 and 2, Black at ply 1; White wins
    won = _shard_game("w", "4k3/8/8/8/8/8/3Q4/4K3 w - - 0 1", ["d2d7", "e8f8", "d7d8"], [0, 1, 2], "1-0",
                      "checkmate")
    # a rook up for Black, drawn; ply 1's search is a late-tail one (never a row)
    drawn = _shard_game("d", "4k3/8/8/8/8/8/8/r3K3 w - - 0 1", ["e1e2", "a1a2"], [0, 1], "1/2-1/2",
                        "threefold_repetition", tail=1)
    write_shard([won, drawn], tmp_path / "shards" / "gen_0001" / "a.parquet")
    got = {(b.low, b.high): b for b in outcomes_by_lead([tmp_path / "shards" / "gen_0001" / "a.parquet"])}
    assert (got[(9, 99)].rows, got[(9, 99)].wins) == (2, 2)  # White's two turns, won
    assert (got[(-99, -9)].rows, got[(-99, -9)].losses) == (1, 1)  # Black's turn a queen down, lost
    assert (got[(-8, -5)].rows, got[(-8, -5)].draws) == (1, 1)  # White a rook down at ply 0, drawn
    assert sum(b.rows for b in got.values()) == 4 and got[(-1, 1)].mean is None
    assert got[(9, 99)].mean == 1.0 and "won 100%" in got[(9, 99)].line()
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet")
    with pytest.raises(ValueError, match="bad.parquet: not a readable self-play shard"):
        outcomes_by_lead([bad])
