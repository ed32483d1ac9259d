"""Helpers shared by the search and bindings tests (not collected by pytest)."""

from __future__ import annotations

import numpy as np


def hashed_answers(planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Deterministic, position-dependent logits and WDL."""
    n = planes.shape[0]
    seeds = planes.reshape(n, -1).astype(np.float64) @ np.linspace(0.1, 3.0, 52 * 64)
    logits = np.sin(np.outer(seeds, np.arange(1, 1881) * 1e-3)).astype(np.float32) * 3
    w = (np.sin(seeds) + 1) / 4
    wdl = np.stack([w, 1 - 2 * w, w * 0.5], axis=1)
    wdl /= wdl.sum(axis=1, keepdims=True)
    return logits, wdl.astype(np.float32)


def random_boards(n: int, seed: int, max_plies: int = 80):  # (int, int, int) -> list[chess.Board]
    """``n`` python-chess boards after 0 to ``max_plies - 1`` random legal moves (seeded)."""
    import random

    import chess

    rng = random.Random(seed)
    boards = []
    while len(boards) < n:
        board = chess.Board()
        for _ in range(rng.randrange(0, max_plies)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
        boards.append(board)
    return boards
