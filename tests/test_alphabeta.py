"""The alpha-beta searcher and the control evaluator (docs/nnue.md sections 6-7).

Mates are checked with python-chess, not only with the engine's own word: the
principal variation must end in checkmate at the reported distance, and every
defence is tried (the engine only proposes the attacker's moves). The perpetual
check and the stalemate trap were confirmed with Stockfish when this file was
written; the tests check their premises with python-chess.
"""

from __future__ import annotations

import random
import re
import shutil
import subprocess
import threading
import time

import chess
import numpy as np
import pytest
from search_support import random_boards

from chesszero import _core

START = chess.STARTING_FEN
RESULT_KEYS = {"best", "ponder", "score_cp", "mate", "depth", "seldepth", "nodes", "nps", "time_ms", "pv"}

MATE_IN_2 = [
    "r2qkb1r/pp2nppp/3p4/2pNN1B1/2BnP3/3P4/PPP2PPP/R2bK2R w KQkq - 1 1",
    "6k1/pp4p1/2p5/2bp4/8/P5Pb/1P3rrP/2BRRN1K b - - 0 1",
    "r1bq2r1/b4pk1/p1pp1p2/1p2pP2/1P2P1PB/3P4/1PPQ2P1/R3K2R w - - 0 1",
    "r1b2k1r/ppp1bppp/8/1B1Q4/5q2/2P5/PPP2PPP/R3R1K1 w - - 1 1",
]
MATE_IN_3 = [
    "r5rk/5p1p/5R2/4B3/8/8/7P/7K w - - 0 1",
    "r1b1kb1r/pppp1ppp/5q2/4n3/3KP3/2N3PN/PPP4P/R1BQ1B1R b kq - 0 1",
    "2r3k1/p4p2/3Rp2p/1p2P1pK/8/1P4P1/P3Q2P/1q6 b - - 0 1",
    "1k5r/pP3ppp/3p2b1/1BN1n3/1Q2P3/P1B5/KP3P1P/7q w - - 1 1",
    "3r4/pR2N3/2pkb3/5p2/8/2B5/qP3PPP/4R1K1 w - - 1 1",
]
MIDDLEGAMES = [
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10",
    "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N1PN2/PP1B1PPP/R2QKB1R w KQ - 0 8",
]


@pytest.fixture(scope="module")
def engine() -> _core.AlphaBeta:
    return _core.AlphaBeta(hash_mb=16)


def has_mate_in_one(board: chess.Board) -> bool:
    for move in board.legal_moves:
        if board.gives_check(move):
            board.push(move)
            mate = board.is_checkmate()
            board.pop()
            if mate:
                return True
    return False


def forced_mate(engine: _core.AlphaBeta, board: chess.Board, n: int) -> bool:
    """The side to move mates in at most n moves against every defence: the
    engine names the attacking move, python-chess enumerates the replies."""
    if has_mate_in_one(board):
        return True
    if n == 1:
        return False
    engine.clear()
    r = engine.search(board.fen(), depth=12)
    board.push_uci(r["best"])
    try:
        if board.is_checkmate():
            return True
        if board.is_game_over():
            return False
        for reply in list(board.legal_moves):
            board.push(reply)
            ok = forced_mate(engine, board, n - 1)
            board.pop()
            if not ok:
                return False
        return True
    finally:
        board.pop()


def check_mate_result(engine: _core.AlphaBeta, fen: str, n: int, result: dict) -> None:
    assert result["mate"] == n, result
    assert result["score_cp"] is None
    pv = result["pv"]
    assert len(pv) == 2 * n - 1, pv
    board = chess.Board(fen)
    for uci in pv:
        move = chess.Move.from_uci(uci)
        assert move in board.legal_moves, (fen, pv)
        board.push(move)
    assert board.is_checkmate(), (fen, pv)
    board = chess.Board(fen)
    assert not forced_mate(engine, board, n - 1), f"{fen} has a shorter mate than {n}"
    assert forced_mate(engine, board, n), fen


@pytest.mark.parametrize("fen", MATE_IN_2)
def test_finds_mate_in_two(engine: _core.AlphaBeta, fen: str) -> None:
    engine.clear()
    check_mate_result(engine, fen, 2, engine.search(fen, depth=8))


@pytest.mark.parametrize("fen", MATE_IN_3)
def test_finds_mate_in_three(engine: _core.AlphaBeta, fen: str) -> None:
    engine.clear()
    check_mate_result(engine, fen, 3, engine.search(fen, depth=12))


def test_mated_side_sees_the_mate_coming(engine: _core.AlphaBeta) -> None:
    # After the first move of a mate in 2, the defender is mated in 1 (mate -1).
    board = chess.Board(MATE_IN_2[0])
    board.push_uci("d5f6")
    engine.clear()
    r = engine.search(board.fen(), depth=6)
    assert r["mate"] == -1 and r["score_cp"] is None
    board.push_uci(r["best"])
    assert has_mate_in_one(board)


def test_terminal_roots() -> None:
    engine = _core.AlphaBeta(hash_mb=1)
    mated = engine.search("R5k1/5ppp/8/8/8/8/8/6K1 b - - 0 1", depth=3)
    assert mated["best"] is None and mated["mate"] == 0 and mated["score_cp"] is None
    assert mated["pv"] == [] and mated["ponder"] is None
    stalemate = engine.search("k7/2Q5/1K6/8/8/8/8/8 b - - 0 1", depth=3)
    assert stalemate["best"] is None and stalemate["score_cp"] == 0 and stalemate["mate"] is None


def test_never_plays_an_illegal_move_against_a_random_mover() -> None:
    engine = _core.AlphaBeta(hash_mb=4)
    rng = random.Random(20240611)
    engine_moves = 0
    for game in range(200):
        board = chess.Board()
        engine.clear()
        engine_colour = chess.WHITE if game % 2 == 0 else chess.BLACK
        while board.outcome(claim_draw=True) is None and board.ply() < 160:
            if board.turn == engine_colour:
                r = engine.search(START, [m.uci() for m in board.move_stack], nodes=2000)
                move = chess.Move.from_uci(r["best"])
                assert move in board.legal_moves, (board.fen(), r)
                if r["ponder"] is not None:
                    board.push(move)
                    assert chess.Move.from_uci(r["ponder"]) in board.legal_moves, (board.fen(), r)
                    board.pop()
                engine_moves += 1
            else:
                move = rng.choice(list(board.legal_moves))
            board.push(move)
    assert engine_moves > 2000


def test_stop_ends_an_infinite_search(engine: _core.AlphaBeta) -> None:
    fen = MIDDLEGAMES[1]
    engine.clear()
    deep_enough = threading.Event()
    infos: list[dict] = []
    results: list[dict] = []

    def on_info(info: dict) -> None:
        infos.append(info)
        if info["depth"] >= 4:
            deep_enough.set()

    thread = threading.Thread(target=lambda: results.append(engine.search(fen, infinite=True, on_info=on_info)))
    thread.start()
    assert deep_enough.wait(timeout=30)
    with pytest.raises(RuntimeError, match="already searching"):
        engine.clear()  # refused while the search runs
    started = time.perf_counter()
    engine.stop()
    thread.join(timeout=5)
    elapsed = time.perf_counter() - started
    assert not thread.is_alive()
    assert elapsed < 0.05, f"stop took {elapsed * 1000:.1f} ms"
    (r,) = results
    assert chess.Move.from_uci(r["best"]) in chess.Board(fen).legal_moves
    # The answer is the last completed iteration, as reported by on_info.
    assert r["depth"] == infos[-1]["depth"] and r["best"] == infos[-1]["best"] and r["pv"] == infos[-1]["pv"]
    assert all(set(i) == RESULT_KEYS for i in infos)
    assert [i["depth"] for i in infos] == list(range(1, len(infos) + 1))


def test_a_callback_error_stops_the_search_and_propagates(engine: _core.AlphaBeta) -> None:
    def on_info(info: dict) -> None:
        raise KeyError("from the callback")

    with pytest.raises(KeyError, match="from the callback"):
        engine.search(START, infinite=True, on_info=on_info)
    assert engine.search(START, depth=2)["best"] is not None  # the object is usable again


def test_a_lost_side_claims_threefold_repetition(engine: _core.AlphaBeta) -> None:
    # White is a queen up. The game has visited the start position twice; Black's
    # Kh8-g8 brings it a third time (a draw), every other move loses.
    fen = "6k1/5ppp/8/8/8/8/5PPP/3Q2K1 w - - 0 1"
    moves = ["d1d2", "g8h8", "d2d1", "h8g8", "d1d2", "g8h8", "d2d1"]
    board = chess.Board(fen)
    for m in moves:
        board.push_uci(m)
    board.push_uci("h8g8")
    assert board.can_claim_threefold_repetition()
    engine.clear()
    r = engine.search(fen, moves, depth=6)
    assert r["best"] == "h8g8" and r["score_cp"] == 0
    # Without the history the same position is simply lost.
    engine.clear()
    lost = engine.search(_fen_after(fen, moves), depth=6)
    assert lost["score_cp"] is None or lost["score_cp"] < -500


def _fen_after(fen: str, moves: list[str]) -> str:
    board = chess.Board(fen)
    for m in moves:
        board.push_uci(m)
    return board.fen()


def test_a_lost_side_finds_perpetual_check(engine: _core.AlphaBeta) -> None:
    # White is a queen and a rook down; Qh5+ Kg8 Qe8+ Kh7 Qh5+ repeats for ever.
    fen = "7k/6p1/6Q1/8/8/1q6/r5PP/7K w - - 0 1"
    board = chess.Board(fen)
    assert board.gives_check(chess.Move.from_uci("g6h5"))
    engine.clear()
    r = engine.search(fen, depth=10)
    assert r["score_cp"] == 0, r
    assert board.gives_check(chess.Move.from_uci(r["best"]))


def test_fifty_move_rule(engine: _core.AlphaBeta) -> None:
    # Black, a queen down with the halfmove clock at 99: any king move draws.
    engine.clear()
    r = engine.search("6k1/5ppp/8/8/8/8/5PPP/3Q2K1 b - - 99 80", depth=6)
    assert r["score_cp"] == 0 and r["best"] in {"g8f8", "g8h8"}
    # A checkmate on the hundredth halfmove is still a checkmate.
    engine.clear()
    r = engine.search("6k1/5ppp/8/8/8/8/5PPP/3Q2K1 w - - 99 80", depth=4)
    assert r["mate"] == 1 and r["best"] == "d1d8"


def test_avoids_the_stalemate_trap(engine: _core.AlphaBeta) -> None:
    fen = "k7/2r5/1K6/8/8/8/7Q/8 w - - 0 1"
    trap = chess.Board(fen)
    trap.push_uci("h2c7")  # takes the rook and stalemates
    assert trap.is_stalemate()
    for depth in (1, 2, 5):
        engine.clear()
        r = engine.search(fen, depth=depth)
        board = chess.Board(fen)
        board.push_uci(r["best"])
        assert not board.is_stalemate(), (depth, r)
        assert r["mate"] is not None and r["mate"] > 0 or r["score_cp"] > 500, (depth, r)
    assert r["mate"] == 2


def test_static_exchange_evaluation() -> None:
    see = _core.alphabeta_see_ge
    # Rxe5 wins an undefended pawn: exactly +100.
    fen = "1k1r4/1pp4p/p7/4p3/8/P5P1/1PP4P/2K1R3 w - - 0 1"
    assert see(fen, "e1e5", 100) and not see(fen, "e1e5", 101)
    # Nxe5 starts N-for-P then R-for-B exchanges with x-rays on both sides:
    # P - N = -220 when White stops after Nxe5 Nxe5 (values P100 N320 B330 R500 Q950).
    fen = "1k1r3q/1ppn3p/p4b2/4p3/8/P2N2P1/1PP1R1BP/2K1Q3 w - - 0 1"
    assert see(fen, "d3e5", -220) and not see(fen, "d3e5", -219)
    # A defended pawn taken by a queen loses the queen for a pawn.
    fen = "4k3/8/2p5/3p4/8/8/8/3QK3 w - - 0 1"
    assert not see(fen, "d1d5", 0) and see(fen, "d1d5", 100 - 950)
    # En passant and quiet moves.
    fen = "4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2"
    assert see(fen, "e5d6", 100) and not see(fen, "e5d6", 101)
    assert see(START, "e2e4", 0) and not see(START, "e2e4", 1)
    with pytest.raises(_core.IllegalMoveError):
        see(START, "e2e5", 0)


def test_fixed_depth_search_is_reproducible_from_a_cleared_table(engine: _core.AlphaBeta) -> None:
    for fen in MIDDLEGAMES:
        engine.clear()
        first = engine.search(fen, depth=8)
        engine.search(START, depth=6)  # something else in the table meanwhile
        engine.clear()
        second = engine.search(fen, depth=8)
        for key in ("best", "pv", "score_cp", "nodes", "seldepth"):
            assert first[key] == second[key], (fen, key)


def test_node_limit(engine: _core.AlphaBeta) -> None:
    for nodes in (1, 100, 5000, 30000):
        engine.clear()
        r = engine.search(MIDDLEGAMES[0], nodes=nodes)
        assert nodes <= r["nodes"] <= nodes + 1, r
        assert chess.Move.from_uci(r["best"]) in chess.Board(MIDDLEGAMES[0]).legal_moves
    # Too few nodes for depth 1: still a legal move, and no score.
    r = engine.search(MIDDLEGAMES[0], nodes=1)
    assert r["depth"] == 0 and r["score_cp"] is None and r["mate"] is None


def test_movetime(engine: _core.AlphaBeta) -> None:
    started = time.perf_counter()
    r = engine.search(MIDDLEGAMES[2], movetime_ms=60)
    elapsed = time.perf_counter() - started
    assert 0.055 <= elapsed < 0.5, elapsed
    assert r["depth"] >= 1 and 55 <= r["time_ms"] <= 200


def test_set_hash_and_result_shape() -> None:
    engine = _core.AlphaBeta(None, 2)
    engine.set_hash(8)
    r = engine.search(MIDDLEGAMES[0], depth=5)
    assert set(r) == RESULT_KEYS
    assert r["depth"] == 5 and r["seldepth"] >= 5 and r["nodes"] > 0 and r["nps"] > 0
    assert r["pv"][0] == r["best"] and (len(r["pv"]) < 2 or r["pv"][1] == r["ponder"])
    board = chess.Board(MIDDLEGAMES[0])
    for uci in r["pv"]:
        board.push_uci(uci)  # raises on an illegal PV move




def test_control_evaluate_is_colour_symmetric() -> None:
    assert _core.control_evaluate(START) == 0
    values = set()
    for board in random_boards(300, seed=7):
        v = _core.control_evaluate(board.fen())
        assert v == _core.control_evaluate(board.mirror().fen()), board.fen()
        values.add(v)
    assert len(values) > 100  # it does look at the position
    # Material: a queen up is worth far more than a pawn up.
    assert _core.control_evaluate("4k3/8/8/8/8/8/8/3QK3 w - - 0 1") > 800
    assert _core.control_evaluate("4k3/8/8/8/8/8/8/3QK3 b - - 0 1") < -800
    assert 50 < _core.control_evaluate("4k3/8/8/8/8/8/4P3/4K3 w - - 0 1") < 200


def test_bad_inputs_raise() -> None:
    engine = _core.AlphaBeta(hash_mb=1)
    with pytest.raises(_core.InvalidFenError, match="not a fen"):
        engine.search("not a fen", depth=1)
    with pytest.raises(_core.InvalidFenError):
        _core.control_evaluate("8/8/8/8/8/8/8/8 w - - 0 1")
    with pytest.raises(_core.IllegalMoveError, match="e2e5"):
        engine.search(START, ["e2e4", "e7e5", "e2e5"], depth=1)
    with pytest.raises(_core.IllegalMoveError, match="zz"):
        engine.search(START, ["zz"], depth=1)
    for kwargs, name in (({"depth": -1}, "depth"), ({"nodes": -5}, "nodes"), ({"movetime_ms": -1}, "movetime_ms"),
                         ({"depth": 1000}, "depth")):
        with pytest.raises(ValueError, match=name):
            engine.search(START, **kwargs)
    with pytest.raises(ValueError, match="limit"):
        engine.search(START)
    with pytest.raises(TypeError, match="on_info"):
        engine.search(START, depth=1, on_info=42)
    for mb in (0, -1, 10**6):
        with pytest.raises(ValueError, match="hash_mb"):
            _core.AlphaBeta(hash_mb=mb)
        with pytest.raises(ValueError, match="hash_mb"):
            engine.set_hash(mb)
    with pytest.raises(TypeError, match="NnueNet"):
        _core.AlphaBeta(net=object())
    assert issubclass(_core.InvalidFenError, ValueError) and issubclass(_core.IllegalMoveError, ValueError)


def _stockfish_nps(fens: list[str], nodes: int, tmp_path) -> int | None:
    """Stockfish's own single-thread benchmark, `bench 16 1 <nodes> <file> nodes`, on the
    same positions (its fastest way to search them: no UCI output to parse)."""
    exe = shutil.which("stockfish") or shutil.which("/usr/games/stockfish")
    if exe is None:
        return None
    fen_file = tmp_path / "positions.fen"
    fen_file.write_text("\n".join(fens) + "\n")
    cmd = [exe, "bench", "16", "1", str(nodes), str(fen_file), "nodes"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    found = re.search(r"Nodes/second\s*:\s*(\d+)", out.stdout + out.stderr)
    return int(found.group(1)) if found else None


def test_print_nodes_per_second(tmp_path) -> None:
    """Prints (never asserts) the search speed next to Stockfish's on the same positions."""
    nodes = 500_000
    engine = _core.AlphaBeta(hash_mb=16)
    total_nodes = total_ms = 0
    for fen in MIDDLEGAMES:
        engine.clear()
        r = engine.search(fen, nodes=nodes)
        total_nodes += r["nodes"]
        total_ms += max(r["time_ms"], 1)
        print(f"\nalphabeta {r['nps']:>10,} nps (depth {r['depth']}, {r['nodes']:,} nodes)  {fen}")
    sf = _stockfish_nps(MIDDLEGAMES, nodes, tmp_path)
    print(f"alphabeta {total_nodes * 1000 // total_ms:>10,} nps over the {len(MIDDLEGAMES)} positions; "
          f"stockfish bench {'not installed' if sf is None else f'{sf:,} nps'} (same positions and nodes)")


def _net(scale: int, hidden: int = 32, seed: int = 0) -> _core.NnueNet:
    rng = np.random.default_rng(seed)
    return _core.NnueNet.from_arrays(
        rng.integers(-scale, scale + 1, (768, hidden)).astype(np.int16),
        rng.integers(-scale, scale + 1, hidden).astype(np.int16),
        rng.integers(-scale, scale + 1, 2 * hidden).astype(np.int16), 0)


def test_nnue_net_drives_the_search() -> None:
    """With a network the search evaluates with it: an all-zero network scores every
    quiet line 0 (the control evaluator would not), a random one gives its own
    scores, and either still finds forced mates and plays only legal moves."""
    quiet = "r1bqkb1r/pppp1ppp/2n2n2/4p3/4P3/2N2N2/PPPP1PPP/R1BQKB1R w KQkq - 4 4"
    zero = _core.AlphaBeta(_net(0))
    assert zero.uses_nnue and not _core.AlphaBeta().uses_nnue
    assert zero.search(quiet, depth=4)["score_cp"] == 0
    assert _core.AlphaBeta().search(quiet, depth=4)["score_cp"] != 0
    random_net = _net(60)
    engine = _core.AlphaBeta(random_net)
    # Kings and locked pawns: no capture or check within reach, so a depth-1 search
    # scores the best child's negated static evaluation, as NnueNet.evaluate gives it.
    locked = "4k3/8/8/p1p1p1p1/P1P1P1P1/8/8/4K3 w - - 0 1"
    board = chess.Board(locked)
    children = []
    for move in board.legal_moves:
        board.push(move)
        children.append(-random_net.evaluate(board.fen()))
        board.pop()
    assert engine.search(locked, depth=1)["score_cp"] == max(children)
    for fen in MATE_IN_2[:2]:
        check_mate_result(engine, fen, 2, _core.AlphaBeta(random_net).search(fen, depth=6))
    board = chess.Board()
    for _ in range(60):
        if board.is_game_over():
            break
        move = engine.search(board.fen(), nodes=500)["best"]
        assert chess.Move.from_uci(move) in board.legal_moves
        board.push_uci(move)
