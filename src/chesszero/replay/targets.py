"""Training targets of one game's searched positions (SPEC 5), pure numpy.

All values are from the side to move of each position. For a game whose
terminal (or cut) position is at ply ``N``, a position at ply ``p`` has
``plies_remaining = N - p``.

- ``wdl_from_value(v)``: r = 1 - |v|; W = max(v, 0) + r/3, D = r/3, L = max(-v, 0) + r/3.
- ``outcome_wdl``: one-hot W/D/L of a finished game; for a game stopped at the
  ply cap, ``wdl(v_cap)`` with v_cap the cut search's root value, its sign
  flipped for positions whose side to move differs from the cut position's.
- ``blur``: ``z = d * target + (1 - d) / 3`` with ``d = 0.998 ** plies_remaining``.
- ``blend_root_value``: ``z' = (1 - beta) * z + beta * wdl(root_value)``.
- ``length_labels``: ``plies_remaining / 400``, masked out for capped games.
- ``next_policy_index``: index of the next searched observation (the very next
  ply) or -1; the label is that observation's own policy.
- ``policy_surprise``: KL(pi_search || p_prior) over the sparse policy support.
"""

from __future__ import annotations

from enum import Enum

import numpy as np

from chesszero.replay.layout import LENGTH_SCALE

OUTCOME_DISCOUNT = 0.998


class GameResult(str, Enum):
    """Result of a game from White's point of view (PGN notation)."""

    WHITE_WIN = "1-0"
    BLACK_WIN = "0-1"
    DRAW = "1/2-1/2"


def wdl_from_value(value: np.ndarray | float) -> np.ndarray:
    """Soft W/D/L ``[..., 3]`` (float32) of scalar values in [-1, 1]."""
    v = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(v)) or np.any(np.abs(v) > 1 + 1e-6):
        raise ValueError(f"values must be finite and in [-1, 1], got {v}")
    v = np.clip(v, -1.0, 1.0)
    r = 1.0 - np.abs(v)
    out = np.stack((np.maximum(v, 0) + r / 3, r / 3, np.maximum(-v, 0) + r / 3), axis=-1)
    return out.astype(np.float32)


def outcome_wdl(result: GameResult | str, white_to_move: np.ndarray) -> np.ndarray:
    """One-hot W/D/L ``[N, 3]`` of a finished game for positions with the given turns."""
    res = GameResult(result)
    white = np.asarray(white_to_move, dtype=bool)
    out = np.zeros(white.shape + (3,), dtype=np.float32)
    if res is GameResult.DRAW:
        out[..., 1] = 1.0
    else:
        wins = white if res is GameResult.WHITE_WIN else ~white
        out[..., 0] = wins
        out[..., 2] = ~wins
    return out


def capped_outcome_wdl(cap_value: float, plies_remaining: np.ndarray) -> np.ndarray:
    """``wdl(v)`` per position of a capped game: ``v = cap_value`` where the side
    to move matches the cut position's (even ``plies_remaining``), else ``-cap_value``."""
    rem = np.asarray(plies_remaining, dtype=np.int64)
    sign = np.where(rem % 2 == 0, 1.0, -1.0)
    return wdl_from_value(sign * float(cap_value))


def blur(target: np.ndarray, plies_remaining: np.ndarray,
         discount: float = OUTCOME_DISCOUNT) -> np.ndarray:
    """``d * target + (1 - d) / 3`` with ``d = discount ** plies_remaining``."""
    rem = np.asarray(plies_remaining, dtype=np.float64)
    if np.any(rem < 0):
        raise ValueError(f"plies_remaining must be >= 0, got {rem}")
    d = (discount ** rem)[..., None]
    return (d * np.asarray(target, dtype=np.float64) + (1 - d) / 3).astype(np.float32)


def blend_root_value(target: np.ndarray, root_value: np.ndarray, beta: float) -> np.ndarray:
    """``(1 - beta) * target + beta * wdl(root_value)``."""
    if not 0.0 <= beta <= 1.0:
        raise ValueError(f"beta must be in [0, 1], got {beta}")
    z = np.asarray(target, dtype=np.float64)
    return ((1 - beta) * z + beta * wdl_from_value(root_value)).astype(np.float32)


def length_labels(plies_remaining: np.ndarray, capped: bool,
                  scale: float = LENGTH_SCALE) -> tuple[np.ndarray, np.ndarray]:
    """Remaining-length labels ``plies_remaining / scale`` and their mask (0 if capped)."""
    rem = np.asarray(plies_remaining, dtype=np.float32)
    if capped:
        return np.zeros_like(rem), np.zeros(rem.shape, dtype=np.uint8)
    return rem / np.float32(scale), np.ones(rem.shape, dtype=np.uint8)


def next_policy_index(plies: np.ndarray) -> np.ndarray:
    """For searched observations at ``plies`` (ascending), the index of the
    observation at ``ply + 1``, or -1 when that ply was not searched."""
    p = np.asarray(plies, dtype=np.int64)
    if p.size > 1 and np.any(np.diff(p) <= 0):
        raise ValueError(f"searched plies must be strictly ascending, got {p}")
    nxt = np.full(p.shape, -1, dtype=np.int64)
    if p.size > 1:
        follows = p[1:] == p[:-1] + 1
        nxt[:-1] = np.where(follows, np.arange(1, p.size), -1)
    return nxt


def policy_surprise(pi: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """KL(pi || prior) per row over the sparse support (natural log).

    ``pi`` and ``prior`` are ``[N, K]`` over the same action ids (0 on padding).
    Terms with ``pi == 0`` contribute 0; a prior of 0 where ``pi > 0`` is floored
    at 1e-12 (the search visited a move the network gave no mass), which keeps
    the value finite; the sampler caps priorities at 2.0 anyway.
    """
    p = np.asarray(pi, dtype=np.float64)
    q = np.asarray(prior, dtype=np.float64)
    if p.shape != q.shape:
        raise ValueError(f"pi {p.shape} and prior {q.shape} shapes differ")
    if np.any(p < 0) or np.any(q < 0):
        raise ValueError("policies must be non-negative")
    safe_q = np.maximum(q, 1e-12)
    terms = np.where(p > 0, p * (np.log(np.where(p > 0, p, 1.0)) - np.log(safe_q)), 0.0)
    return np.maximum(terms.sum(axis=-1), 0.0).astype(np.float32)
