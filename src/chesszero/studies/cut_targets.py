"""Scoring cut-target estimators against later outcomes (paper 6.1), pure numpy.

An estimator gives a scalar value ``v`` (W - L, the cut position's side to
move) per cut position; its W/D/L target is ``wdl(v)`` (SPEC 5,
``replay.targets.wdl_from_value``). The outcome is what continued play
produced, one-hot from the same side. Scores, lower is better:

- **Brier**: ``sum_k (p_k - y_k)^2`` over the three classes, averaged over positions;
- **cross-entropy**: ``-ln p_y`` with ``p`` floored at ``CE_FLOOR``.

Also the paper's material baseline, ``material / 39`` (clipped to [-1, 1]).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from chesszero.material import material_of_fen
from chesszero.replay.targets import wdl_from_value

__all__ = ["CE_FLOOR", "EstimatorScore", "material_value", "outcome_onehot", "score_estimator"]

CE_FLOOR = 1e-6
MATERIAL_DIVISOR = 39.0
"""The paper's material baseline: material balance in pawns divided by 39 (all the pieces but the king)."""


def material_value(fen: str) -> float:
    """The paper's material baseline for the side to move of ``fen``."""
    white = material_of_fen(fen)
    own = white if fen.split()[1] == "w" else -white
    return float(np.clip(own / MATERIAL_DIVISOR, -1.0, 1.0))


def outcome_onehot(result: str, white_to_move: bool) -> np.ndarray:
    """W/D/L one-hot of a PGN result from the given side to move's view."""
    if result == "1/2-1/2":
        return np.array([0.0, 1.0, 0.0])
    won = (result == "1-0") == white_to_move
    return np.array([1.0, 0.0, 0.0]) if won else np.array([0.0, 0.0, 1.0])


@dataclass(frozen=True)
class EstimatorScore:
    name: str
    positions: int
    brier: float
    cross_entropy: float
    sign_accuracy: float | None  # share of decisive outcomes whose sign the estimate had right

    @property
    def row(self) -> list[object]:
        return [self.name, self.positions, self.brier, self.cross_entropy, self.sign_accuracy]


def score_estimator(name: str, values: np.ndarray, outcomes: np.ndarray) -> EstimatorScore:
    """Brier and cross-entropy of ``wdl(values)`` against ``outcomes`` ([N, 3] one-hot)."""
    values = np.asarray(values, np.float64)
    outcomes = np.asarray(outcomes, np.float64)
    if values.shape != (len(outcomes),) or outcomes.shape[1:] != (3,):
        raise ValueError(f"{name}: {values.shape} values for outcomes of shape {outcomes.shape}")
    if len(values) == 0:
        raise ValueError(f"{name}: no positions to score")
    p = np.asarray(wdl_from_value(np.clip(values, -1.0, 1.0)), np.float64)
    brier = float(((p - outcomes) ** 2).sum(axis=1).mean())
    ce = float(-np.log(np.maximum((p * outcomes).sum(axis=1), CE_FLOOR)).mean())
    decisive = outcomes[:, 1] == 0
    sign = None
    if decisive.any():
        truth = np.where(outcomes[decisive, 0] == 1, 1.0, -1.0)
        sign = float((np.sign(values[decisive]) == truth).mean())
    return EstimatorScore(name, len(values), brier, ce, sign)
