"""The ``publish`` section of the recipe: calibration, quantisation-aware
fine-tuning and the fidelity gate's thresholds (SPEC 9; chesszero.publish).
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict, Field, NonNegativeFloat, PositiveInt

__all__ = ["PublishConfig", "QatWhen"]

class QatWhen(str, Enum):
    """When publication runs quantisation-aware fine-tuning (SPEC 9 allows fine-tuning or calibration)."""

    ALWAYS = "always"
    """Every publication calibrates, then fine-tunes ``qat_steps`` steps (kept when it lowers the
    tuning set's distillation loss), then gates the result."""
    ON_GATE_FAILURE = "on_gate_failure"
    """Gate the calibrated network first; fine-tune, export and gate again only when that artifact
    fails the fidelity thresholds (an artifact that cannot be built or run is not retried)."""


class PublishConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    calibration_positions: PositiveInt = Field(description="Fixed real positions for QAT/fidelity.")
    qat_steps: int = Field(ge=0, description="Quantisation-aware fine-tuning steps.")
    qat_when: QatWhen = Field(
        default=QatWhen.ALWAYS,
        description="always: fine-tune every publication; on_gate_failure: only when the calibrated "
        "artifact fails the fidelity gate (docs/learning.md measures what it saves).")
    qat_lr: float = Field(ge=0.0, le=1.0)
    min_agreement: float = Field(ge=0.0, le=1.0, description="Top-1 legal-move agreement needed.")
    max_kl: NonNegativeFloat = Field(description="Largest mean legal-policy KL allowed.")
    max_wdl_mae: NonNegativeFloat = Field(description="Largest mean absolute WDL error allowed.")
    max_moves_left_mae: NonNegativeFloat = Field(
        default=20.0,
        description="Largest mean absolute plies-left error allowed (artifacts with the moves-left output only).")
    int8_stem: bool = Field(
        default=False,
        description="Quantise the start block too (off: SPEC 9 keeps it float). On: an exact input grid, "
        "8-bit stem weights and a bias correction (chesszero.publish.deploy_net); ONNX Runtime INT8 over FP32 "
        "at one thread 2.29x instead of 1.97x for a 6x64 checkpoint, top-1 agreement about 1 point lower.",
    )
