"""Generate the 516 calibration positions: ``data/calibration/positions.jsonl`` + ``.sha256``.

Positions come from real games: Stockfish plays itself from every opening of
the suite twice, at (400 vs 100) and (100 vs 400) nodes per move (White vs
Black), single-threaded after ``ucinewgame``, until the game ends by the rules
(checkmate, stalemate, insufficient material, threefold repetition or the
fifty-move rule, as the core applies them automatically) or at 300 plies.
From each game, positions after the opening are sampled uniformly without
replacement (fixed seed), with game history: 516 over 100 games, six from the
first sixteen games and five from the rest, any shortfall of a short game
carried to the next. Finished positions are never sampled.

The format is documented in ``chesszero.publish.calibration_positions``.

    python scripts/make_calibration_set.py [--openings ...] [--out ...]
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

import chess
import chess.engine

from chesszero.evaluate.openings import DEFAULT_OPENINGS, Opening, load_openings
from chesszero.evaluate.players import STOCKFISH_PATH
from chesszero.publish.calibration_positions import (
    EXPECTED_COUNT,
    CalibrationPosition,
    is_finished,
    save_positions,
)

SEED = 516
NODE_PAIRS: tuple[tuple[int, int], ...] = ((400, 100), (100, 400))
MAX_PLIES = 300


def play(
    engines: tuple[chess.engine.SimpleEngine, chess.engine.SimpleEngine],
    opening: Opening,
    nodes: tuple[int, int],
) -> tuple[chess.Board, str]:
    """One Stockfish game from the opening; returns the final board and the result."""
    board = opening.final_board()
    tokens = (object(), object())  # new game for both engines
    while not is_finished(board) and len(board.move_stack) < MAX_PLIES:
        side = 0 if board.turn == chess.WHITE else 1
        limit = chess.engine.Limit(nodes=nodes[side])
        move = engines[side].play(board, limit, game=tokens[side]).move
        if move is None:
            raise RuntimeError(f"Stockfish returned no move in {board.fen()}")
        board.push(move)
    if board.is_checkmate():
        return board, "0-1" if board.turn == chess.WHITE else "1-0"
    return board, "1/2-1/2"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--openings", type=Path, default=DEFAULT_OPENINGS)
    parser.add_argument("--out", type=Path, default=Path("data/calibration/positions.jsonl"))
    parser.add_argument("--count", type=int, default=EXPECTED_COUNT)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--stockfish", default=STOCKFISH_PATH)
    args = parser.parse_args(argv)

    started = time.perf_counter()
    rng = random.Random(args.seed)
    openings = load_openings(args.openings)
    schedule = [(o, nodes) for o in openings for nodes in NODE_PAIRS]
    base, extra = divmod(args.count, len(schedule))
    positions: list[CalibrationPosition] = []
    engines = tuple(chess.engine.SimpleEngine.popen_uci(args.stockfish) for _ in range(2))
    try:
        for engine in engines:
            engine.configure({"Threads": 1, "Hash": 16})
        owed = 0
        for number, (opening, nodes) in enumerate(schedule):
            board, result = play((engines[0], engines[1]), opening, nodes)
            moves = [m.uci() for m in board.move_stack]
            final_is_over = is_finished(board)
            candidates = range(len(opening.moves), len(moves) - (1 if final_is_over else 0) + 1)
            want = base + (1 if number < extra else 0) + owed
            take = sorted(rng.sample(candidates, min(want, len(candidates))))
            owed = want - len(take)
            for ply in take:
                history = moves[:ply]
                replay = chess.Board(opening.start_fen)
                for uci in history:
                    replay.push_uci(uci)
                positions.append(
                    CalibrationPosition(
                        id=f"calib-{len(positions) + 1:04d}",
                        start_fen=opening.start_fen,
                        moves=tuple(history),
                        fen=replay.fen(),
                        source={
                            "opening": opening.id,
                            "white_nodes": nodes[0],
                            "black_nodes": nodes[1],
                            "result": result,
                            "game_plies": len(moves),
                        },
                    )
                )
    finally:
        for engine in engines:
            engine.quit()
    if len(positions) != args.count:
        raise SystemExit(f"collected {len(positions)} positions, wanted {args.count}")
    for position in positions:
        position.check()
    sums = save_positions(positions, args.out)
    print(
        f"{len(positions)} positions from {len(schedule)} games in "
        f"{time.perf_counter() - started:.1f}s -> {args.out} ({sums.read_text().split()[0]})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
