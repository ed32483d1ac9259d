"""One-off check (docs/learning.md, the value-probe section): in each ladder
game, the first move of PLAYER after which Stockfish (depth 8) scores it
below -300 cp, with the material balance right after that move. Usage::

    python reports/learning/value-probe/first_losing_move.py GAMES.pgn final-searched 20
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import chess
import chess.engine
import chess.pgn

from chesszero.evaluate.players import STOCKFISH_PATH, material_balance


def main(path: str, player: str, games: int, *, skip_plies: int = 16, depth: int = 8) -> None:
    engine = chess.engine.SimpleEngine.popen_uci(STOCKFISH_PATH)
    handle = io.StringIO(Path(path).read_text())
    try:
        for number in range(1, games + 1):
            game = chess.pgn.read_game(handle)
            if game is None:
                break
            us = game.headers["White"] == player
            board, found = game.board(), None
            for ply, move in enumerate(game.mainline_moves()):
                if board.turn == us and ply >= skip_plies and found is None:
                    before = engine.analyse(board, chess.engine.Limit(depth=depth))["score"].pov(us)
                    after_board = board.copy()
                    after_board.push(move)
                    after = engine.analyse(after_board, chess.engine.Limit(depth=depth))["score"].pov(us)
                    b, a = before.score(mate_score=3000), after.score(mate_score=3000)
                    if a < -300 <= b:
                        found = (ply, move.uci(), b, a, material_balance(after_board.fen(), us))
                board.push(move)
            print(f"game {number} ({game.headers['Result']}): " + (
                "never below -300 after its own move" if found is None else
                f"ply {found[0]} {found[1]}: {found[2]:+d} -> {found[3]:+d} cp, material {found[4]:+d}"))
    finally:
        engine.quit()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
