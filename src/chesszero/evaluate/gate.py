"""Promotion gate: when a candidate artifact replaces the active one (SPEC 10).

The gate is a small persistent state machine for one (candidate, active)
pair. Each paired match between them is reported with ``record``:

- a completed match scoring ``>= threshold`` (0.48) adds one pass;
- a completed match below the threshold resets the pass count to zero;
- a cancelled or errored match changes nothing (it is only logged);
- after ``required_passes`` (2) consecutive passes the gate is ``PROMOTED``
  and accepts no further matches.

``new_candidate`` starts over for another candidate; ``to_dict``/``from_dict``
round-trip the whole state, history included, through JSON.
"""

from __future__ import annotations

import enum
import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

DEFAULT_THRESHOLD = 0.48
DEFAULT_REQUIRED_PASSES = 2


class GateState(enum.Enum):
    """``PENDING``: still being evaluated; ``PROMOTED``: the candidate won."""

    PENDING = "pending"
    PROMOTED = "promoted"


class MatchStatus(enum.Enum):
    """How a gate match ended; only ``COMPLETED`` matches count."""

    COMPLETED = "completed"
    CANCELLED = "cancelled"
    ERRORED = "errored"


@dataclass(frozen=True)
class GateEvent:
    """One reported match and the pass count after it."""

    match_id: str
    status: MatchStatus
    score: float | None
    passed: bool | None
    passes_after: int
    at: str

    def to_dict(self) -> dict[str, object]:
        return {
            "match_id": self.match_id,
            "status": self.status.value,
            "score": self.score,
            "passed": self.passed,
            "passes_after": self.passes_after,
            "at": self.at,
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> GateEvent:
        score = data.get("score")
        passed = data.get("passed")
        return cls(
            match_id=str(data["match_id"]),
            status=MatchStatus(data["status"]),
            score=None if score is None else float(score),  # type: ignore[arg-type]
            passed=None if passed is None else bool(passed),
            passes_after=int(data["passes_after"]),  # type: ignore[call-overload]
            at=str(data["at"]),
        )


@dataclass
class PromotionGate:
    """Gate state for ``candidate`` against ``active`` (see module docstring)."""

    candidate: str
    active: str
    threshold: float = DEFAULT_THRESHOLD
    required_passes: int = DEFAULT_REQUIRED_PASSES
    passes: int = 0
    state: GateState = GateState.PENDING
    history: list[GateEvent] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"threshold must lie in [0, 1], got {self.threshold!r}")
        if self.required_passes < 1:
            raise ValueError(f"required_passes must be at least 1, got {self.required_passes!r}")
        if not self.candidate or not self.active:
            raise ValueError(
                f"candidate and active must be named, got {self.candidate!r}, {self.active!r}"
            )

    @property
    def promoted(self) -> bool:
        return self.state is GateState.PROMOTED

    def record(
        self,
        match_id: str,
        *,
        score: float | None = None,
        status: MatchStatus = MatchStatus.COMPLETED,
    ) -> GateState:
        """Report one match; returns the state after it.

        ``score`` (the candidate's mean score in [0, 1]) is required for a
        completed match and ignored otherwise.
        """
        if self.promoted:
            raise ValueError(
                f"{self.candidate!r} is already promoted; match {match_id!r} cannot be recorded"
            )
        if any(e.match_id == match_id for e in self.history):
            raise ValueError(f"match {match_id!r} was already recorded")
        passed: bool | None = None
        if status is MatchStatus.COMPLETED:
            if score is None or not math.isfinite(score) or not 0.0 <= score <= 1.0:
                raise ValueError(
                    f"completed match {match_id!r} needs a score in [0, 1], got {score!r}"
                )
            passed = score >= self.threshold
            self.passes = self.passes + 1 if passed else 0
            if self.passes >= self.required_passes:
                self.state = GateState.PROMOTED
        else:
            score = None
        self.history.append(
            GateEvent(
                match_id=match_id,
                status=status,
                score=score,
                passed=passed,
                passes_after=self.passes,
                at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            )
        )
        return self.state

    def new_candidate(self, candidate: str, active: str | None = None) -> None:
        """Start over for ``candidate`` (optionally against a new ``active``)."""
        if not candidate:
            raise ValueError("candidate must be named")
        self.candidate = candidate
        if active is not None:
            self.active = active
        self.passes = 0
        self.state = GateState.PENDING
        self.history = []

    def to_dict(self) -> dict[str, object]:
        return {
            "candidate": self.candidate,
            "active": self.active,
            "threshold": self.threshold,
            "required_passes": self.required_passes,
            "passes": self.passes,
            "state": self.state.value,
            "history": [e.to_dict() for e in self.history],
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> PromotionGate:
        history = data.get("history", [])
        if not isinstance(history, list):
            raise ValueError(f"'history' must be a list, got {type(history).__name__}")
        gate = cls(
            candidate=str(data["candidate"]),
            active=str(data["active"]),
            threshold=float(data["threshold"]),  # type: ignore[arg-type]
            required_passes=int(data["required_passes"]),  # type: ignore[call-overload]
            passes=int(data["passes"]),  # type: ignore[call-overload]
            state=GateState(data["state"]),
            history=[GateEvent.from_dict(e) for e in history],
        )
        if not 0 <= gate.passes <= gate.required_passes:
            raise ValueError(f"passes {gate.passes} outside 0..{gate.required_passes}")
        if gate.promoted != (gate.passes >= gate.required_passes):
            raise ValueError(f"state {gate.state.value!r} disagrees with passes={gate.passes}")
        return gate

    def save(self, path: Path) -> None:
        """Write the state as JSON (atomically: temp file then rename)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=2) + "\n")
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> PromotionGate:
        return cls.from_dict(json.loads(Path(path).read_text()))
