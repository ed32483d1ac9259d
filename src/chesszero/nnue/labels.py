"""Teacher labels for the NNUE student, and the check that they carry signal.

- ``value_head(evaluator, planes)``: the teacher's value ``W - L`` (side to
  move's view) of each position, in batches (the packed planes carry the
  game history the teacher saw in self-play), with the material balance
  read from the same planes (``search.assist.material_balance``).
- ``searched_values(evaluator, fens, visits, options)``: the teacher's
  searched root value of each FEN (``evaluate.engine_player.SlotSearch``,
  the evaluation search of matches), many positions per batch. A FEN carries
  no history, so these searches start without it.
- ``check_values``: the values' spread and their correlation with the
  material balance. A teacher stuck in the draw cycle (reference 004) gives
  values near 0 everywhere: nothing to distil. ``ValueCheck.flat`` says so.
- ``p_teacher(raw, searched)``: ``(v + 1) / 2`` of the searched value where
  there is one, else of the value head.
- ``p_search(cp)``: the alpha-beta search's score as a probability,
  ``sigmoid(clip(cp, +-2000) / 400)`` (NaN stays NaN: no score).
- ``p_label(labels, w)``: ``w * p_search + (1 - w) * p_teacher`` where the
  search scored the position, else ``p_teacher`` (``nnue.search_label_weight``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from chesszero import core
from chesszero.nnue.positions import CP_CLIP
from chesszero.search.assist import material_balance
from chesszero.search.evaluators import Evaluator

__all__ = ["CP_SCALE", "ValueCheck", "check_values", "p_label", "p_search", "p_teacher", "searched_values",
           "value_head"]

CP_SCALE = 400.0
"""Centipawns per logit unit: a probability is ``sigmoid(cp / 400)`` (the student's loss uses the same scale)."""


def value_head(evaluator: Evaluator, planes: np.ndarray, *, batch: int,
               on_batch: Callable[[int], None] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(values, material)``: the teacher's ``W - L`` and the material balance in pawns, float32 ``[n]``."""
    n = len(planes)
    values = np.zeros(n, np.float32)
    material = np.zeros(n, np.float32)
    for i in range(0, n, batch):
        unpacked = core.unpack_planes(np.ascontiguousarray(planes[i:i + batch]))
        _, wdl = evaluator.evaluate(unpacked)
        wdl = np.asarray(wdl, np.float32)
        if wdl.shape != (len(unpacked), 3) or not np.all(np.isfinite(wdl)):
            raise ValueError(f"the teacher returned WDL of shape {list(wdl.shape)} (or non-finite values) "
                             f"for {len(unpacked)} positions")
        values[i:i + len(unpacked)] = wdl[:, 0] - wdl[:, 2]
        material[i:i + len(unpacked)] = material_balance(unpacked)
        if on_batch is not None:
            on_batch(len(unpacked))
    return values, material


def searched_values(evaluator: Evaluator, fens: Sequence[str], *, visits: int, options: Any, slots: int = 32,
                    on_batch: Callable[[int], None] | None = None) -> np.ndarray:
    """The teacher's searched root value ``W - L`` of each FEN (side to move's view), float32 ``[n]``."""
    from chesszero.evaluate.engine_player import SlotSearch

    search = SlotSearch(evaluator, slots=slots, options=options)
    out = np.zeros(len(fens), np.float32)
    for i in range(0, len(fens), slots):
        games = [core.Game(f) for f in fens[i:i + slots]]
        search.run(list(enumerate(games)), visits=visits)
        for slot in range(len(games)):
            out[i + slot] = search.report(slot, pv_len=0).value
            search.forget(slot)
        if on_batch is not None:
            on_batch(len(games))
    return out


@dataclass(frozen=True)
class ValueCheck:
    """How much the teacher's values say (module docstring)."""

    positions: int
    value_std: float
    value_mean_abs: float
    material_corr: float | None  # None when either side is constant
    min_std: float
    min_corr: float

    @property
    def flat(self) -> bool:
        return self.value_std < self.min_std or self.material_corr is None or self.material_corr < self.min_corr

    def message(self) -> str:
        corr = "undefined" if self.material_corr is None else f"{self.material_corr:.3f}"
        text = (f"teacher values over {self.positions} positions: std {self.value_std:.3f}, mean |v| "
                f"{self.value_mean_abs:.3f}, correlation with material {corr}")
        if self.flat:
            text += (f" -- FLAT (want std >= {self.min_std} and correlation >= {self.min_corr}): the teacher "
                     "may be stuck in the draw cycle (reference 004); its labels carry little signal")
        return text

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"flat": self.flat}


def check_values(values: np.ndarray, material: np.ndarray, *, min_std: float, min_corr: float) -> ValueCheck:
    """Spread of ``values`` and their Pearson correlation with ``material``."""
    values = np.asarray(values, np.float64)
    material = np.asarray(material, np.float64)
    if not len(values):
        raise ValueError("no teacher values to check")
    corr = None
    if values.std() > 0 and material.std() > 0:
        corr = float(np.corrcoef(values, material)[0, 1])
    return ValueCheck(len(values), float(values.std()), float(np.abs(values).mean()), corr, min_std, min_corr)


def p_teacher(raw: np.ndarray, searched: np.ndarray) -> np.ndarray:
    """``(v + 1) / 2`` with ``v`` the searched value where known (not NaN), else the value head's."""
    v = np.where(np.isnan(searched), raw, searched)
    return np.clip((v + 1.0) / 2.0, 0.0, 1.0).astype(np.float32)


def p_search(cp: np.ndarray) -> np.ndarray:
    """``sigmoid(clip(cp, +-2000) / 400)``, float32; NaN (no score) stays NaN."""
    cp = np.clip(np.asarray(cp, np.float64), -CP_CLIP, CP_CLIP)
    return (1.0 / (1.0 + np.exp(-cp / CP_SCALE))).astype(np.float32)


def p_label(labels: Mapping[str, np.ndarray], weight: float) -> np.ndarray:
    """The label in [0, 1]: ``weight * p_search + (1 - weight) * p_teacher`` where the search scored the
    position, else ``p_teacher`` (also when ``weight`` is 0 or the labels hold no search scores)."""
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"nnue.search_label_weight must lie in [0, 1], got {weight!r}")
    teacher = np.asarray(labels["p_teacher"], np.float64)
    if not weight:
        return teacher.astype(np.float32)
    if "p_search" not in labels:
        raise ValueError("the labels hold no alpha-beta search scores (built with nnue.search_label_weight=0); "
                         "rebuild the labels stage")
    search = np.asarray(labels["p_search"], np.float64)
    return np.where(np.isnan(search), teacher, weight * search + (1.0 - weight) * teacher).astype(np.float32)
