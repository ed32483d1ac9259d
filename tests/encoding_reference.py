"""An independent Python re-derivation of SPEC 2-3, for tests only.

Built on python-chess so it shares no code with the native core; the tests
compare the two on many positions. Never import this outside tests.
"""

from __future__ import annotations

import chess
import numpy as np

RAYS = [(1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1)]
KNIGHT = [(2, 1), (1, 2), (-1, 2), (-2, 1), (-2, -1), (-1, -2), (1, -2), (2, -1)]
PROMOS = ["q", "r", "b", "n"]


def action_table() -> list[tuple[int, int, str | None]]:
    table: list[tuple[int, int, str | None]] = []
    for sq in range(64):
        r, c = divmod(sq, 8)
        for dr, dc in RAYS:
            for dist in range(1, 8):
                rr, cc = r + dr * dist, c + dc * dist
                if not (0 <= rr < 8 and 0 <= cc < 8):
                    break
                table.append((sq, rr * 8 + cc, None))
        for dr, dc in KNIGHT:
            rr, cc = r + dr, c + dc
            if 0 <= rr < 8 and 0 <= cc < 8:
                table.append((sq, rr * 8 + cc, None))
        if r == 6:
            for off in (-1, 0, 1):
                if 0 <= c + off < 8:
                    for p in PROMOS:
                        table.append((sq, 56 + c + off, p))
    return table


def canon(sq: int, white: bool) -> int:
    return sq if white else sq ^ 56


def reference_action(board: chess.Board, move: chess.Move) -> int:
    white = board.turn == chess.WHITE
    to = move.to_square
    if board.is_castling(move):
        rook_file = 7 if chess.square_file(to) > chess.square_file(move.from_square) else 0
        to = chess.square(rook_file, chess.square_rank(move.from_square))
    promo = chess.piece_symbol(move.promotion) if move.promotion else None
    key = (canon(move.from_square, white), canon(to, white), promo)
    return action_table().index(key)


def _fill(planes: np.ndarray, idx: int, squares: list[int]) -> None:
    for s in squares:
        planes[idx, s // 8, s % 8] = 1.0


def reference_planes(board: chess.Board) -> np.ndarray:
    """Planes of the board's current position, history from its move stack."""
    planes = np.zeros((52, 8, 8), dtype=np.float32)
    us = board.turn
    them = not us
    white = us == chess.WHITE
    types = [chess.PAWN, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN, chess.KING]
    for i, t in enumerate(types):
        _fill(planes, i, [canon(s, white) for s in board.pieces(t, us)])
        _fill(planes, 6 + i, [canon(s, white) for s in board.pieces(t, them)])
    rights = [
        board.has_kingside_castling_rights(us),
        board.has_queenside_castling_rights(us),
        board.has_kingside_castling_rights(them),
        board.has_queenside_castling_rights(them),
    ]
    for i, held in enumerate(rights):
        if held:
            planes[12 + i] = 1.0
    _fill(planes, 16, [canon(s, white) for s in chess.SquareSet(board.occupied_co[us])])
    _fill(planes, 17, [canon(s, white) for s in chess.SquareSet(board.occupied_co[them])])
    _fill(planes, 18, [canon(s, white) for s in board.checkers()])
    if board.has_legal_en_passant():
        _fill(planes, 19, [canon(board.ep_square, white)])
    if board.is_repetition(2):
        planes[20] = 1.0
    if board.is_repetition(3):
        planes[21] = 1.0
    replay = board.copy()
    for k in range(8):
        if not replay.move_stack:
            break
        move = replay.pop()
        to = move.to_square  # python-chess keeps castling as the king's real move
        _fill(planes, 22 + 2 * k, [canon(move.from_square, white)])
        _fill(planes, 23 + 2 * k, [canon(to, white)])
    for r in range(8):
        for c in range(8):
            planes[38, r, c] = float((r + c) % 2 == 1)
    wb, bb = board.pieces(chess.BISHOP, chess.WHITE), board.pieces(chess.BISHOP, chess.BLACK)
    if len(wb) == 1 and len(bb) == 1:
        dark = chess.SquareSet(chess.BB_DARK_SQUARES)
        if (next(iter(wb)) in dark) != (next(iter(bb)) in dark):
            planes[39] = 1.0
    for i, t in enumerate(types):
        diff = 0 if t == chess.KING else len(board.pieces(t, us)) - len(board.pieces(t, them))
        planes[40 + i] = diff
    planes[46] = min(board.halfmove_clock, 100)
    for i, t in enumerate(types[:5]):
        planes[47 + i] = len(board.pieces(t, us))
    return planes
