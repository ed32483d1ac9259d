"""Material assist: a self-play signal lever against the draw cycle.

Reference 004 (section 5.3) breaks the draw cycle of a small AlphaZero run by
blending a material term into the leaf evaluation used in self-play: the
search then converts material, games become decisive, and the ply-cap search
(SPEC 5) gives capped games a non-zero outcome target, so the value head has
something to learn. The paper recipe has no such term (weight 0); CPU presets
use a weight that decays to 0 so the network takes over.

The material count comes from the encoded planes themselves (SPEC 2, planes
40-44: own minus opponent counts of P, N, B, R, Q), so the assist needs no
board and works for any evaluator. With material difference ``m`` in pawns
and weight ``w``, the blended WDL is ``(1 - w) * wdl_net + w * wdl(tanh(m /
scale))`` with SPEC 5's ``wdl(v)``; its scalar ``W - L`` is therefore
``(1 - w) * v_net + w * tanh(m / scale)``. Policies pass through unchanged.
"""

from __future__ import annotations

import numpy as np

from chesszero.search.evaluators import Evaluator, NetworkOutput, check_planes

MATERIAL_PLANES = slice(40, 45)
PIECE_VALUES = np.array([1.0, 3.0, 3.0, 5.0, 9.0], dtype=np.float32)


def wdl_of_value(v: np.ndarray) -> np.ndarray:
    """SPEC 5's ``wdl(v)`` for scalars in [-1, 1]: ``[N] -> [N, 3]``."""
    v = np.clip(np.asarray(v, dtype=np.float32), -1.0, 1.0)
    r = (1.0 - np.abs(v)) / 3.0
    return np.stack([np.maximum(v, 0.0) + r, r, np.maximum(-v, 0.0) + r], axis=-1)


def material_balance(planes: np.ndarray) -> np.ndarray:
    """Material of the side to move minus the opponent's, in pawns: ``[N]``."""
    arr = check_planes(planes)
    return arr[:, MATERIAL_PLANES, 0, 0] @ PIECE_VALUES


class MaterialAssist:
    """Wraps an evaluator, blending a material WDL into its WDL output."""

    def __init__(self, inner: Evaluator, weight: float, *, scale: float = 5.0) -> None:
        if not 0.0 <= weight <= 1.0:
            raise ValueError(f"material assist weight must be in [0, 1], got {weight}")
        if not scale > 0.0:
            raise ValueError(f"material assist scale must be > 0, got {scale}")
        self.inner = inner
        self.weight = float(weight)
        self.scale = float(scale)

    def evaluate(self, planes: np.ndarray) -> NetworkOutput:
        out = self.inner.evaluate(planes)
        if self.weight == 0.0:
            return out
        logits, wdl, *rest = out  # plies left (when given) pass through unchanged
        material = wdl_of_value(np.tanh(material_balance(planes) / self.scale))
        blended = (1.0 - self.weight) * np.asarray(wdl, dtype=np.float32) + self.weight * material
        return (logits, blended.astype(np.float32, copy=False), *rest)  # type: ignore[return-value]


def with_material_assist(inner: Evaluator, weight: float, *, scale: float = 5.0) -> Evaluator:
    """``inner`` itself when ``weight`` is 0, else a :class:`MaterialAssist`."""
    return inner if weight == 0.0 else MaterialAssist(inner, weight, scale=scale)
