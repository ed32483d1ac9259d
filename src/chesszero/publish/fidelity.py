"""The fidelity gate: does an artifact still predict what its source network predicts?

On the calibration positions (SPEC 9: 516 real positions), both evaluators
score every position and :func:`measure_fidelity` compares them where search
consumes them:

- **top-1 agreement**: share of positions whose highest-scoring *legal*
  action is the same, where a candidate choice that the source scores
  within ``TIE_TOLERANCE`` (probability) of its own best counts as the same
  (a near-uniform policy, e.g. a fresh network's, has no meaningful top-1,
  and quantisation noise must not flip the verdict on exact ties);
- **legal-policy KL**: mean over positions of ``KL(source || artifact)`` of
  the policies softmaxed over the legal actions only;
- **WDL MAE**: mean absolute difference of the win/draw/loss probabilities,
  over all positions and the three entries;
- **moves-left MAE** (only when the artifact keeps the length head for the
  search's moves-left utility; the reference must then give it too): mean
  absolute difference of the plies-left outputs.

A report passes when agreement ``>= min_agreement``, KL ``<= max_kl``,
WDL MAE ``<= max_wdl_mae`` (defaults 0.95 / 0.01 / 0.02, from
``params.yaml``'s ``publish`` section), moves-left MAE ``<=
max_moves_left_mae`` (20 plies) when measured, and every output is finite.
The plies bound catches a broken artifact, not INT8 noise: the head's
``plies / 400`` output multiplies the trunk's quantisation error by 400
(a smoke campaign's barely trained heads, predicting -500..+200 plies,
measured 5-15 plies of MAE with WDL MAE near 1e-4; the ``cpu`` preset's
networks 1.1-1.8 plies once trained for a generation).  This is
what catches a runtime that builds and "succeeds" but predicts differently
(paper 6.2: a refitted TensorRT engine at KL 1.05).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from chesszero import core
from chesszero.config.publish import PublishConfig
from chesszero.publish.artifact import atomic_write_bytes
from chesszero.publish.calibration import CalibrationSet
from chesszero.search.evaluators import Evaluator

__all__ = ["TIE_TOLERANCE", "FidelityReport", "FidelityThresholds", "measure_fidelity"]

TIE_TOLERANCE = 1e-3
"""Source-probability gap under which two legal moves count as tied for top-1."""


@dataclass(frozen=True)
class FidelityThresholds:
    """Acceptance limits of the gate."""

    min_agreement: float = 0.95
    max_kl: float = 0.01
    max_wdl_mae: float = 0.02
    max_moves_left_mae: float = 20.0
    """Plies; applies only to artifacts with the moves-left output (module docstring)."""

    @classmethod
    def from_config(cls, cfg: PublishConfig) -> FidelityThresholds:
        """The thresholds of a recipe's ``publish`` section."""
        return cls(min_agreement=cfg.min_agreement, max_kl=cfg.max_kl, max_wdl_mae=cfg.max_wdl_mae,
                   max_moves_left_mae=cfg.max_moves_left_mae)


@dataclass(frozen=True)
class FidelityReport:
    """Result of one fidelity comparison (JSON-serialisable)."""

    positions: int
    agreement: float
    kl_mean: float
    kl_max: float
    wdl_mae: float
    wdl_max_error: float
    thresholds: FidelityThresholds
    failures: tuple[str, ...]
    calibration_sha256: str
    candidate: str = ""
    reference: str = ""
    moves_left_mae: float | None = None
    """Mean absolute plies-left difference (None: the artifact has no moves-left output)."""
    moves_left_max_error: float | None = None

    @property
    def passed(self) -> bool:
        """Whether every threshold was met."""
        return not self.failures

    def summary(self) -> dict[str, Any]:
        """The short form stored in artifact metadata and the activation state."""
        return {
            "passed": self.passed,
            "positions": self.positions,
            "agreement": round(self.agreement, 6),
            "kl_mean": float(f"{self.kl_mean:.6g}"),
            "wdl_mae": float(f"{self.wdl_mae:.6g}"),
            "calibration_sha256": self.calibration_sha256,
            **({} if self.moves_left_mae is None else {"moves_left_mae": float(f"{self.moves_left_mae:.6g}")}),
        }

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["failures"] = list(self.failures)
        data["passed"] = self.passed
        return data

    def write(self, path: str | Path) -> Path:
        """Write the full report as JSON (atomically)."""
        return atomic_write_bytes(path, (json.dumps(self.to_dict(), indent=2) + "\n").encode())


def _legal_log_softmax(logits: np.ndarray, legal: np.ndarray) -> np.ndarray:
    masked = np.where(legal, logits.astype(np.float64), -np.inf)
    top = masked.max(axis=1, keepdims=True)
    shifted = masked - top
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def _check_shapes(name: str, policy: np.ndarray, wdl: np.ndarray, n: int) -> None:
    if policy.shape != (n, core.NUM_ACTIONS) or wdl.shape != (n, 3):
        raise ValueError(
            f"{name} evaluator returned policy {policy.shape} and wdl {wdl.shape}, "
            f"expected ({n}, {core.NUM_ACTIONS}) and ({n}, 3)"
        )


def measure_fidelity(
    reference: Evaluator,
    candidate: Evaluator,
    calib: CalibrationSet,
    thresholds: FidelityThresholds | None = None,
    *,
    batch_size: int = 256,
    candidate_name: str = "",
    reference_name: str = "",
) -> FidelityReport:
    """Compare ``candidate`` against ``reference`` on every calibration position."""
    thresholds = thresholds or FidelityThresholds()
    agree: list[np.ndarray] = []
    kls: list[np.ndarray] = []
    wdl_err: list[np.ndarray] = []
    plies_err: list[np.ndarray] = []
    finite = True
    for planes, legal in calib.batches(batch_size):
        n = len(planes)
        ref = [np.asarray(a) for a in reference.evaluate(planes)]
        cand = [np.asarray(a) for a in candidate.evaluate(planes)]
        (ref_policy, ref_wdl), (cand_policy, cand_wdl) = ref[:2], cand[:2]
        _check_shapes("reference", ref_policy, ref_wdl, n)
        _check_shapes("candidate", cand_policy, cand_wdl, n)
        if len(cand) != len(ref):
            raise ValueError(
                f"the candidate gives {len(cand)} outputs and the reference {len(ref)}: compare an artifact "
                "with the moves-left output against a reference that gives the plies left too"
            )
        if len(cand) == 3:
            if cand[2].shape != (n,) or ref[2].shape != (n,):
                raise ValueError(f"moves_left outputs of shape {cand[2].shape} and {ref[2].shape}, expected ({n},)")
            finite &= bool(np.isfinite(cand[2]).all())
            plies_err.append(np.abs(ref[2].astype(np.float64) - cand[2].astype(np.float64)))
        finite &= bool(np.isfinite(cand_policy[legal]).all() and np.isfinite(cand_wdl).all())
        ref_log = _legal_log_softmax(ref_policy, legal)
        cand_log = _legal_log_softmax(cand_policy, legal)
        ref_prob = np.exp(ref_log)
        cand_top = cand_log.argmax(axis=1)
        chosen = ref_prob[np.arange(n), cand_top]
        agree.append(chosen >= ref_prob.max(axis=1) - TIE_TOLERANCE)
        with np.errstate(invalid="ignore"):  # illegal entries are -inf - -inf, masked out
            kls.append(np.where(legal, np.exp(ref_log) * (ref_log - cand_log), 0.0).sum(axis=1))
        wdl_err.append(np.abs(ref_wdl.astype(np.float64) - cand_wdl.astype(np.float64)))
    agreement = float(np.concatenate(agree).mean())
    kl = np.concatenate(kls)
    err = np.concatenate(wdl_err)
    kl_mean, wdl_mae = float(kl.mean()), float(err.mean())
    failures = []
    if not finite:
        failures.append("candidate produced non-finite outputs")
    if not agreement >= thresholds.min_agreement:
        failures.append(f"top-1 agreement {agreement:.4f} < {thresholds.min_agreement}")
    if not kl_mean <= thresholds.max_kl:
        failures.append(f"legal-policy KL {kl_mean:.5f} > {thresholds.max_kl}")
    if not wdl_mae <= thresholds.max_wdl_mae:
        failures.append(f"WDL MAE {wdl_mae:.5f} > {thresholds.max_wdl_mae}")
    plies = np.concatenate(plies_err) if plies_err else None
    plies_mae = float(plies.mean()) if plies is not None else None
    if plies_mae is not None and not plies_mae <= thresholds.max_moves_left_mae:
        failures.append(f"moves-left MAE {plies_mae:.3f} plies > {thresholds.max_moves_left_mae}")
    return FidelityReport(
        positions=len(calib),
        agreement=agreement,
        kl_mean=kl_mean,
        kl_max=float(kl.max()),
        wdl_mae=wdl_mae,
        wdl_max_error=float(err.max()),
        thresholds=thresholds,
        failures=tuple(failures),
        calibration_sha256=calib.sha256,
        candidate=candidate_name,
        reference=reference_name,
        moves_left_mae=plies_mae,
        moves_left_max_error=float(plies.max()) if plies is not None else None,
    )
