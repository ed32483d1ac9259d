"""An independent reference of the NNUE contract (docs/nnue.md), written from
the contract and not from the C++: the python-chess featurizer (section 1),
the integer inference in numpy (section 3) and the version-1 file writer with
its FNV-1a checksum (section 5). tests/test_nnue_core.py checks the native
core against it."""

from __future__ import annotations

import struct
from pathlib import Path

import chess
import numpy as np

INPUTS = 768
QA, QB, SCALE = 255, 64, 400
MAX_W1 = 505  # round(1.98 * QA): W1 and b1
MAX_W2 = 127  # round(1.98 * QB)
MAX_B2 = 16 * QA * QB
PAD = -1  # padding of fixed-width feature rows


# ------------------------------------------------------------------- features


def feature_index(perspective: chess.Color, piece: chess.Piece, square: chess.Square) -> int:
    """384 * (theirs) + 64 * type (P=0 .. K=5) + square, Black's view mirrored by rank."""
    theirs = 0 if piece.color == perspective else 1
    relative = square if perspective == chess.WHITE else chess.square_mirror(square)
    return 384 * theirs + 64 * (piece.piece_type - chess.PAWN) + relative


def features(board: chess.Board, perspective: chess.Color) -> list[int]:
    """Sorted active features of `board` from `perspective`'s view."""
    return sorted(feature_index(perspective, piece, sq) for sq, piece in board.piece_map().items())


def stm_features(board: chess.Board) -> tuple[list[int], list[int]]:
    """(side to move's features, the other side's)."""
    return features(board, board.turn), features(board, not board.turn)


def padded(rows: list[list[int]], width: int = 32) -> np.ndarray:
    out = np.full((len(rows), width), PAD, dtype=np.int64)
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return out


# ------------------------------------------------------------------ inference


def accumulators(w1: np.ndarray, b1: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """b1 + sum of the W1 rows of each row of features (padded with -1): int64 [n, N]."""
    table = np.concatenate([w1.astype(np.int32), np.zeros((1, w1.shape[1]), np.int32)])
    index = np.where(rows == PAD, INPUTS, rows)
    return b1.astype(np.int64) + table[index].sum(axis=1, dtype=np.int64)


def trunc_div(a: np.ndarray, b: int) -> np.ndarray:
    """Integer division truncating toward zero (C++ '/'), for b > 0."""
    return np.sign(a) * (np.abs(a) // b)


def evaluate(w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, b2: int,
             stm_rows: np.ndarray, nstm_rows: np.ndarray) -> np.ndarray:
    """Centipawns from the side to move's view, int64 [n] (section 3, exact)."""
    n = w1.shape[1]
    us = np.clip(accumulators(w1, b1, stm_rows), 0, QA)
    them = np.clip(accumulators(w1, b1, nstm_rows), 0, QA)
    w = w2.astype(np.int64)
    total = (us * us * w[:n]).sum(axis=1) + (them * them * w[n:]).sum(axis=1)
    out = trunc_div(total, QA) + int(b2)
    return trunc_div(out * SCALE, QA * QB)


# ----------------------------------------------------------------------- file


def fnv1a32(data: bytes) -> int:
    h = 2166136261
    for byte in data:
        h = ((h ^ byte) * 16777619) & 0xFFFFFFFF
    return h


def nnue_bytes(w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, b2: int, *, magic: bytes = b"CZNN",
               version: int = 1, scales: tuple[int, int, int] = (QA, QB, SCALE)) -> bytes:
    """A version-1 `*.nnue` file: little-endian header, W1 [768][N], b1, W2, b2, FNV-1a checksum."""
    hidden = w1.shape[1]
    body = magic + struct.pack("<6I", version, w1.shape[0], hidden, *scales)
    body += np.ascontiguousarray(w1, dtype="<i2").tobytes()
    body += np.ascontiguousarray(b1, dtype="<i2").tobytes()
    body += np.ascontiguousarray(w2, dtype="<i2").tobytes()
    body += struct.pack("<i", int(b2))
    return body + struct.pack("<I", fnv1a32(body))


def write_nnue(path: Path, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, b2: int, **header: object) -> Path:
    path.write_bytes(nnue_bytes(w1, b1, w2, b2, **header))  # type: ignore[arg-type]
    return path
