"""The network contract in numpy (docs/nnue.md sections 2 and 3): sizes,
clipping ranges, quantisation and the exact integer evaluation.

- ``FloatNet``: float weights as the trainer holds them (``W1 [768, N]``,
  ``b1 [N]``, ``W2 [2N]``, ``b2``); ``evaluate_float`` is section 2.
- ``quantise(net)``: ``round-half-away-from-zero(value * scale)`` into a
  ``QuantNet`` (int16 / int32), refusing any value outside its range.
- ``evaluate_int(qnet, stm, nstm)``: section 3's integer evaluation, the
  reference the exporter checks a file with before the core sees it (the C++
  engine must return the same integers).

Feature arrays are int ``[n, 32]`` of active feature indices padded with -1,
side to move's perspective first (what ``_core.nnue_features_batch`` returns).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["B2_RANGE", "INPUTS", "MAX_ACTIVE", "QA", "QB", "SCALE", "W1_MAX_INT", "W2_MAX_INT", "W_RANGE", "FloatNet", "QuantNet",
           "active_sums", "evaluate_float", "evaluate_int", "quantise", "round_away"]

INPUTS = 768
MAX_ACTIVE = 32
QA = 255
QB = 64
SCALE = 400
W_RANGE = 1.98
"""|W1|, |b1| and |W2| are clipped to this in training (int16 at QA, resp. |W2q| <= 127 at QB)."""
B2_RANGE = 16.0
RANGE_SLACK = 1e-6
"""Relative slack of the range check: a float32 clipped to 1.98 reads 1.9800000190734863 in float64."""
W2_MAX_INT = 127
W1_MAX_INT = 505
"""round(1.98 * 255): with at most 32 active features plus the bias an accumulator stays in int16."""


@dataclass(frozen=True)
class FloatNet:
    """Float weights (section 2)."""

    w1: np.ndarray  # [768, N]
    b1: np.ndarray  # [N]
    w2: np.ndarray  # [2N], side to move's N first
    b2: float

    @property
    def hidden(self) -> int:
        return int(self.b1.shape[0])


@dataclass(frozen=True)
class QuantNet:
    """Quantised weights as stored in a ``.nnue`` file (section 5)."""

    w1: np.ndarray  # int16 [768, N]
    b1: np.ndarray  # int16 [N]
    w2: np.ndarray  # int16 [2N]
    b2: int  # int32

    @property
    def hidden(self) -> int:
        return int(self.b1.shape[0])

    def dequantise(self) -> FloatNet:
        """The float network these integers stand for."""
        return FloatNet(self.w1.astype(np.float64) / QA, self.b1.astype(np.float64) / QA,
                        self.w2.astype(np.float64) / QB, self.b2 / (QA * QB))


def round_away(x: np.ndarray) -> np.ndarray:
    """Round half away from zero (``numpy.round`` rounds half to even): ``sign(x) * floor(|x| + 0.5)``."""
    x = np.asarray(x, np.float64)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _check_range(name: str, values: np.ndarray, bound: float) -> None:
    values = np.asarray(values, np.float64)
    if not np.all(np.isfinite(values)):
        raise ValueError(f"cannot export {name}: it holds non-finite values")
    bad = np.flatnonzero(np.abs(values.ravel()) > bound * (1 + RANGE_SLACK))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"cannot export {name}: {bad.size} value(s) outside [-{bound}, {bound}], "
                         f"e.g. {float(values.ravel()[i])!r} at flat index {i} (train with clipping)")


def quantise(net: FloatNet) -> QuantNet:
    """Section 3's quantisation; ``ValueError`` naming the tensor when a value is outside its range."""
    n = net.hidden
    if net.w1.shape != (INPUTS, n) or net.w2.shape != (2 * n,):
        raise ValueError(f"cannot export: W1 must be [{INPUTS}, {n}] and W2 [{2 * n}], "
                         f"got {list(net.w1.shape)} and {list(net.w2.shape)}")
    for name, values, bound in (("W1", net.w1, W_RANGE), ("b1", net.b1, W_RANGE), ("W2", net.w2, W_RANGE),
                                ("b2", np.array([net.b2]), B2_RANGE)):
        _check_range(name, values, bound)
    w2 = round_away(np.asarray(net.w2) * QB)
    if np.abs(w2).max(initial=0) > W2_MAX_INT:
        raise ValueError(f"cannot export W2: a quantised weight exceeds {W2_MAX_INT} in magnitude")
    return QuantNet(round_away(np.asarray(net.w1) * QA).astype(np.int16),
                    round_away(np.asarray(net.b1) * QA).astype(np.int16),
                    w2.astype(np.int16), int(round_away(np.array(net.b2) * QA * QB)))


def _check_features(stm: np.ndarray, nstm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    stm, nstm = np.asarray(stm), np.asarray(nstm)
    if stm.ndim != 2 or stm.shape != nstm.shape or stm.shape[1] != MAX_ACTIVE:
        raise ValueError(f"features must be two int arrays [n, {MAX_ACTIVE}], got {list(stm.shape)} "
                         f"and {list(nstm.shape)}")
    for arr in (stm, nstm):
        if arr.size and (arr.min() < -1 or arr.max() >= INPUTS):
            raise ValueError(f"feature indices must lie in [0, {INPUTS}) or be -1 padding, "
                             f"got {int(arr.min())}..{int(arr.max())}")
    return stm, nstm


def active_sums(w1: np.ndarray, bias: np.ndarray, features: np.ndarray) -> np.ndarray:
    """``bias + sum of W1 rows of the active features`` per position: ``[n, N]`` (in w1's dtype, int64
    for integer weights)."""
    wide = np.int64 if np.issubdtype(w1.dtype, np.integer) else np.float64
    padded = np.concatenate([w1.astype(wide), np.zeros((1, w1.shape[1]), wide)])
    idx = np.where(features < 0, w1.shape[0], features)
    return bias.astype(wide)[None, :] + padded[idx].sum(axis=1)


def evaluate_float(net: FloatNet, stm: np.ndarray, nstm: np.ndarray) -> np.ndarray:
    """Section 2 in float64: centipawns from the side to move's view, ``[n]``."""
    stm, nstm = _check_features(stm, nstm)
    h = np.concatenate([active_sums(np.asarray(net.w1, np.float64), np.asarray(net.b1), stm),
                        active_sums(np.asarray(net.w1, np.float64), np.asarray(net.b1), nstm)], axis=1)
    y = (np.clip(h, 0.0, 1.0) ** 2) @ np.asarray(net.w2, np.float64) + float(net.b2)
    return SCALE * y


def _trunc_div(a: np.ndarray, b: int) -> np.ndarray:
    """C++ integer division: truncates toward zero."""
    return np.sign(a) * (np.abs(a) // b)


def evaluate_int(net: QuantNet, stm: np.ndarray, nstm: np.ndarray) -> np.ndarray:
    """Section 3 exactly: int64 centipawns from the side to move's view, ``[n]``."""
    stm, nstm = _check_features(stm, nstm)
    acc = np.concatenate([active_sums(net.w1, net.b1, stm), active_sums(net.w1, net.b1, nstm)], axis=1)
    if np.abs(acc).max(initial=0) > np.iinfo(np.int16).max:
        raise AssertionError("an accumulator left int16: the weights break the overflow argument")
    c = np.clip(acc, 0, QA)
    total = (c * c * net.w2.astype(np.int64)[None, :]).sum(axis=1)
    out = _trunc_div(total, QA) + net.b2
    return _trunc_div(out * SCALE, QA * QB)
