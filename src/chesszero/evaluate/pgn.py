"""PGN export of match games (python-chess ``chess.pgn`` writes the text).

Every game keeps its full move list from the start position, so the PGN
replays exactly what the referee saw. Tags:

- the seven-tag roster (``Event``, ``Site``, ``Date``, ``Round``, ``White``,
  ``Black``, ``Result``), plus ``FEN``/``SetUp`` for a non-standard start;
- ``Termination``: ``normal`` for games ended by the rules, ``adjudication``
  for games stopped at the ply cap (scored as draws);
- ``TerminationDetail``: the rule (``checkmate``, ``stalemate``,
  ``insufficient_material``, ``threefold_repetition``, ``fifty_moves``) or
  ``ply_cap``; ``Opening``: the suite id; ``PlyCount``.

The last book move carries the comment ``book`` so the engine moves are visible.
"""

from __future__ import annotations

import chess
import chess.pgn

PLY_CAP = "ply_cap"


def game_pgn(
    *,
    start_fen: str,
    moves: list[str],
    book_plies: int,
    white: str,
    black: str,
    result: str,
    termination: str,
    event: str,
    round_label: str,
    date: str,
    opening_id: str,
) -> str:
    """PGN text of one game; raises ``ValueError`` naming the move if a move is illegal."""
    if result not in ("1-0", "0-1", "1/2-1/2"):
        raise ValueError(f"result must be '1-0', '0-1' or '1/2-1/2', got {result!r}")
    board = chess.Board(start_fen)
    game = chess.pgn.Game()
    if start_fen != chess.STARTING_FEN:
        game.setup(board)
    game.headers["Event"] = event
    game.headers["Site"] = "chesszero"
    game.headers["Date"] = date
    game.headers["Round"] = round_label
    game.headers["White"] = white
    game.headers["Black"] = black
    game.headers["Result"] = result
    game.headers["Termination"] = "adjudication" if termination == PLY_CAP else "normal"
    game.headers["TerminationDetail"] = termination
    game.headers["Opening"] = opening_id
    game.headers["PlyCount"] = str(len(moves))
    node: chess.pgn.GameNode = game
    for ply, uci in enumerate(moves, start=1):
        move = chess.Move.from_uci(uci)
        if move not in board.legal_moves:
            raise ValueError(f"illegal move {uci!r} at ply {ply} in {board.fen()}")
        board.push(move)
        node = node.add_variation(move)
        if ply == book_plies:
            node.comment = "book"
    exporter = chess.pgn.StringExporter(headers=True, variations=False, comments=True)
    return game.accept(exporter)
