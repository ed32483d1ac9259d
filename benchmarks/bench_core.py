"""Native core benchmark: perft nodes/s vs python-chess and Stockfish 15.1
(`go perft`, single thread), batch encoding positions/s, and the start-up cost
of the native module in a fresh process (attack tables included).

Perft against python-chess: nodes/s over windows of at least ``--window``
seconds (1 s; each window repeats one perft of the side's depth), best of
three windows on both sides, each side at its own depth (python-chess is
~500x slower: the same depth would take minutes); the row names give each
side's depth and nodes per perft. Against Stockfish: the same depth, best of
three ``go perft`` runs timed from command to result. Targets (targets.py,
issue 2): perft at least 0.5x Stockfish's and over 100x python-chess's;
float32 plane encoding at least 200,000 positions/s.

Run: `.venv/bin/python benchmarks/bench_core.py [--quick] [--json reports/bench/core.json]`.
Ratios are measured in this run on this machine.
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import chess
import numpy as np
from common import Row, best_rate, report
from targets import target

from chesszero import core

KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
STOCKFISH = "/usr/games/stockfish"


def python_chess_perft(board: chess.Board, depth: int) -> int:
    if depth == 1:
        return board.legal_moves.count()
    nodes = 0
    for move in board.legal_moves:
        board.push(move)
        nodes += python_chess_perft(board, depth - 1)
        board.pop()
    return nodes


def stockfish_perft_rate(fen: str, depth: int, repeats: int = 3) -> tuple[float, int] | None:
    """Best nodes/s of Stockfish's own `go perft` over `repeats` runs, timed from command
    to result, and its node count; None without Stockfish."""
    path = shutil.which(STOCKFISH) or shutil.which("stockfish")
    if path is None:
        return None
    proc = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdin and proc.stdout
    proc.stdin.write("uci\nsetoption name Threads value 1\nisready\n")
    proc.stdin.flush()
    while proc.stdout.readline().strip() != "readyok":
        pass
    best, nodes = 0.0, 0
    for _ in range(repeats):
        proc.stdin.write(f"position fen {fen}\ngo perft {depth}\n")
        proc.stdin.flush()
        start = time.perf_counter()
        while True:
            line = proc.stdout.readline()
            if line.startswith("Nodes searched"):
                nodes = int(line.split(":")[1])
                break
        best = max(best, nodes / (time.perf_counter() - start))
    proc.stdin.write("quit\n")
    proc.stdin.flush()
    proc.wait(timeout=10)
    return best, nodes


def import_seconds(module: str, repeats: int = 5) -> float:
    """Best wall time to import `module` in a fresh interpreter."""
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
            for _ in range(repeats)]
    return min(float(r.stdout) for r in runs)


def encoding_games(n: int) -> list[core.Game]:
    rng = random.Random(0)
    games = []
    for _ in range(n):
        g = core.Game()
        for _ in range(rng.randrange(10, 80)):
            moves = g.legal_uci()
            if not moves or g.outcome() is not None:
                break
            g.push_uci(rng.choice(moves))
        games.append(g)
    return games


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", type=Path, default=None, help="write results as JSON")
    parser.add_argument("--quick", action="store_true", help="smaller depths (smoke check)")
    parser.add_argument("--window", type=float, default=None,
                        help="minimum seconds per perft timing window (1; 0.25 with --quick)")
    args = parser.parse_args()
    window = args.window if args.window is not None else 0.25 if args.quick else 1.0
    rows: list[Row] = []
    cases = [("start", core.STARTING_FEN, 5 if args.quick else 6, 3 if args.quick else 4),
             ("kiwipete", KIWIPETE, 4 if args.quick else 5, 2 if args.quick else 3)]
    for name, fen, depth, py_depth in cases:
        game = core.Game(fen)
        nodes = game.perft(depth)
        ours = best_rate(lambda game=game, depth=depth: game.perft(depth), repeats=3, min_seconds=window)
        board = chess.Board(fen)
        py_nodes = python_chess_perft(board, py_depth)
        pyc = best_rate(lambda board=board, d=py_depth: python_chess_perft(board, d), repeats=3,
                        min_seconds=window)
        timing = {"windows": 3, "min_window_s": window}
        rows.append(Row(f"perft {name}, chesszero d{depth} ({nodes:,} nodes)", ours, "nodes/s", "", None,
                        {"depth": depth, "nodes": nodes, **timing}))
        rows.append(Row(f"perft {name}, python-chess d{py_depth} ({py_nodes:,} nodes)", pyc, "nodes/s",
                        f"chesszero d{depth} / python-chess d{py_depth}", ours / pyc,
                        {"depth": py_depth, "nodes": py_nodes, **timing},
                        target("perft-vs-python-chess")))
        sf = stockfish_perft_rate(fen, depth)
        if sf is None:
            print(f"Stockfish not found ({STOCKFISH}): no perft comparison with it")
        else:
            sf_rate, sf_nodes = sf
            if sf_nodes != nodes:
                raise RuntimeError(f"perft {name} d{depth}: Stockfish counts {sf_nodes}, chesszero {nodes}")
            rows.append(Row(f"perft {name}, stockfish 15.1 d{depth} ({sf_nodes:,} nodes)", sf_rate, "nodes/s",
                            "chesszero / stockfish, same depth", ours / sf_rate,
                            {"depth": depth, "nodes": sf_nodes, "runs": 3}, target("perft-vs-stockfish")))
    games = encoding_games(1024)
    out = np.empty((len(games), core.NUM_PLANES, 8, 8), dtype=np.float32)
    packed = np.empty((len(games), core.PACKED_BYTES), dtype=np.uint8)
    enc = best_rate(lambda: len(core.encode_batch(games, out)), repeats=5, min_seconds=0.2)
    pk = best_rate(lambda: len(core.encode_packed_batch(games, packed)), repeats=5, min_seconds=0.2)
    unpack = best_rate(lambda: len(core.unpack_planes(packed, out)), repeats=5, min_seconds=0.2)
    rows.append(Row("encode float32 planes (batch 1024)", enc, "positions/s", target=target("encode-planes")))
    rows.append(Row("encode packed rows (batch 1024)", pk, "positions/s", "float32 planes", pk / enc))
    rows.append(Row("unpack packed -> float32", unpack, "positions/s", "float32 planes", unpack / enc))
    # Every actor, trainer rank and test process pays this once.
    numpy_start, core_start = import_seconds("numpy"), import_seconds("chesszero._core")
    rows.append(Row("import numpy (fresh process)", 1000 * numpy_start, "ms", "reference"))
    rows.append(Row("import chesszero._core (fresh process)", 1000 * core_start, "ms",
                    "numpy / chesszero._core", numpy_start / core_start))
    report("chesszero native core", rows, args.json)


if __name__ == "__main__":
    main()
