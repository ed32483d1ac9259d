"""Generate the balanced opening suite: ``data/openings/openings.epd`` + ``.sha256``.

Reproducible: a fixed seed drives every random choice and Stockfish searches
single-threaded to fixed depths after ``ucinewgame``, so the same Stockfish
build gives the same file. Procedure per attempt:

1. from the standard position, for each of 16 plies: Stockfish MultiPV
   (``--multipv`` lines, depth ``--walk-depth``); pick uniformly (seeded) among
   the moves within ``--window`` centipawns of the best (no mate scores);
2. evaluate the final position at depth ``--check-depth``; keep it when
   ``|eval| <= --margin`` cp, it is not already in the suite and at most
   ``--per-prefix`` kept openings share its first four plies.

Stop at ``--count`` openings. The format is documented in
``chesszero.evaluate.openings`` and ``data/openings/README.md``.

    python scripts/make_openings.py [--out data/openings/openings.epd]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path

import chess
import chess.engine

from chesszero.evaluate.openings import Opening, save_openings
from chesszero.evaluate.players import STOCKFISH_PATH

SEED = 20240611
MATE = 100_000


def walk(
    engine: chess.engine.SimpleEngine,
    rng: random.Random,
    *,
    plies: int,
    multipv: int,
    depth: int,
    window: int,
    game: object,
) -> chess.Board:
    board = chess.Board()
    for _ in range(plies):
        limit = chess.engine.Limit(depth=depth)
        infos = engine.analyse(board, limit, multipv=multipv, game=game)
        scored = [
            (info["pv"][0], info["score"].relative.score(mate_score=MATE))
            for info in infos
            if info.get("pv") and not info["score"].is_mate()
        ]
        if not scored:
            break
        best = max(score for _, score in scored)
        choices = sorted(move.uci() for move, score in scored if score >= best - window)
        board.push(chess.Move.from_uci(rng.choice(choices)))
    return board


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("data/openings/openings.epd"))
    parser.add_argument("--count", type=int, default=50)
    parser.add_argument("--plies", type=int, default=16)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--multipv", type=int, default=4)
    parser.add_argument("--walk-depth", type=int, default=8)
    parser.add_argument("--window", type=int, default=30, help="cp below the best move")
    parser.add_argument("--check-depth", type=int, default=12)
    parser.add_argument("--margin", type=int, default=40, help="max |eval| in cp")
    parser.add_argument("--per-prefix", type=int, default=3)
    parser.add_argument("--max-attempts", type=int, default=2000)
    parser.add_argument("--stockfish", default=STOCKFISH_PATH)
    args = parser.parse_args(argv)

    rng = random.Random(args.seed)
    started = time.perf_counter()
    openings: list[Opening] = []
    seen: set[str] = set()
    prefixes: Counter[tuple[str, ...]] = Counter()
    engine = chess.engine.SimpleEngine.popen_uci(args.stockfish)
    try:
        engine.configure({"Threads": 1, "Hash": 16})
        attempts = 0
        while len(openings) < args.count and attempts < args.max_attempts:
            attempts += 1
            game = object()  # a new game token: ucinewgame, same start state every attempt
            board = walk(
                engine,
                rng,
                plies=args.plies,
                multipv=args.multipv,
                depth=args.walk_depth,
                window=args.window,
                game=game,
            )
            moves = tuple(m.uci() for m in board.move_stack)
            if len(moves) != args.plies or board.is_game_over() or board.epd() in seen:
                continue
            if prefixes[moves[:4]] >= args.per_prefix:
                continue
            info = engine.analyse(board, chess.engine.Limit(depth=args.check_depth), game=game)
            score = info["score"].relative
            if score.is_mate() or abs(score.score() or 0) > args.margin:
                continue
            seen.add(board.epd())
            prefixes[moves[:4]] += 1
            openings.append(
                Opening(
                    id=f"open-{len(openings) + 1:03d}",
                    moves=moves,
                    eval_cp=score.score(),
                    eval_depth=args.check_depth,
                )
            )
    finally:
        engine.quit()
    if len(openings) < args.count:
        print(f"only {len(openings)} openings after {attempts} attempts", file=sys.stderr)
        return 1
    sums = save_openings(openings, args.out)
    print(
        f"{len(openings)} openings from {attempts} attempts in "
        f"{time.perf_counter() - started:.1f}s -> {args.out} ({sums.read_text().split()[0]})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
