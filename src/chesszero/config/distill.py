"""The ``distill`` section of the recipe: a compact student trained from a
frozen replay snapshot, supervised by the replay targets, the teacher's own
predictions, or a mix (issue 11; the paper's sections 4.3.8 and 8.2)."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from chesszero.config.schedules import LinearSchedule
from chesszero.config.sizes import parse_size

__all__ = ["DistillConfig", "Supervision"]


class Supervision(str, Enum):
    """Where the student's targets come from."""

    REPLAY = "replay"
    """The replay rows' own targets (sparse visits, blended outcomes, next policy, length): the SPEC 5 loss."""
    TEACHER = "teacher"
    """The frozen teacher's predictions on the same positions: KL to its policy over legal moves,
    WDL cross-entropy, and its auxiliary heads."""
    MIX = "mix"
    """``teacher_weight`` x teacher terms + (1 - ``teacher_weight``) x replay terms, head by head."""


class DistillConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    student_size: str = Field(description="The student's trunk 'BxC' (e.g. 4x32).")
    supervision: Supervision
    teacher_weight: float = Field(ge=0.0, le=1.0, description="Share of the teacher terms under 'mix'.")
    temperature: float = Field(gt=0.0, le=10.0, description="Softmax temperature of the policy KL (terms x T^2).")
    steps: Annotated[int, Field(ge=1)] = Field(description="Optimizer steps of the student.")
    global_batch: Annotated[int, Field(ge=1)] = Field(description="Rows per optimizer step.")
    lr: LinearSchedule[Annotated[float, Field(ge=0.0, le=10.0)]] = Field(description="LR by optimizer step.")
    checkpoint_every: Annotated[int, Field(ge=1)] = Field(description="Steps between resumable checkpoints.")
    seed: int = Field(ge=0)
    openings: Annotated[int, Field(ge=1)] = Field(description="Openings per student-vs-teacher match (x2 games).")
    visits: Annotated[int, Field(ge=1)] = Field(description="Teacher visits per move (and the student's at equal visits).")
    speed_positions: Annotated[int, Field(ge=1)] = Field(
        description="Positions searched to measure each network's visits per second (equal wall time).")

    @field_validator("student_size")
    @classmethod
    def _valid_size(cls, value: str) -> str:
        return parse_size(value).name
